"""PanDA adapter: the PanDA server's HTTP API (`/api/v1/...`, answers `{"success", "message", "data"}`)
and the job-log host, with `requests`. The only module that talks to PanDA; it maps every failure to our
typed errors. Credentials come from the environment (an OIDC token sent as a Bearer header with the VO as
Origin, or an X.509 proxy file used as the client certificate) and go to the PanDA hosts only: they are
never an argument, a result, a log line or an error message.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3

from hummingbird_agent import budgets
from hummingbird_agent.data_sources.http import read_retry, retrying_session
from hummingbird_agent.errors import PermanentError, TransientError

log = logging.getLogger(__name__)
# Every PanDA call here is a GET (a read): 5xx answers and read timeouts are retried with backoff.
RETRY = read_retry(budgets.PANDA_MAX_RETRIES, budgets.PANDA_RETRY_BACKOFF_S)


class PandaUnavailable(TransientError):
    """PanDA did not answer usefully (timeout, connection error, 5xx, not JSON)."""


class PandaNotFound(PermanentError):
    """The task, job or log does not exist (or the log has expired)."""


class PandaDenied(PermanentError):
    """PanDA refused the credentials (401/403) or the request (success=false)."""


@dataclass(frozen=True, slots=True)
class PandaCredentials:
    """One user's PanDA identity. `repr` shows which kind is set, never the values."""

    token: str | None = field(default=None, repr=False)
    vo: str | None = None
    proxy_path: str | None = field(default=None, repr=False)

    def headers(self) -> dict[str, str]:
        if not self.token:
            return {}
        return {"Authorization": f"Bearer {self.token}", **({"Origin": self.vo} if self.vo else {})}

    def cert(self) -> str | None:
        return self.proxy_path or None


def new_session() -> requests.Session:
    return retrying_session(RETRY)


def _timed_out(exc: requests.RequestException) -> bool:
    """A timeout, also when the retries ran out on read timeouts (a ConnectionError around MaxRetryError)."""
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(exc, requests.Timeout) or isinstance(reason, urllib3.exceptions.TimeoutError)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port


class PandaClient:
    """Reads from one PanDA server. `api_url` ends in `/api/v1`; `log_url` serves `<PandaID>/<file>`."""

    def __init__(self, api_url: str, log_url: str | None, credentials: PandaCredentials,
                 session: requests.Session | None = None, timeout_s: float = budgets.PANDA_HTTP_TIMEOUT_S,
                 verify: bool | str = True) -> None:
        self.api_url = api_url.rstrip("/")
        self.log_url = (log_url or "").rstrip("/") or None
        self._credentials = credentials
        self._session = session or new_session()
        self._timeout_s, self._verify = timeout_s, verify

    def __repr__(self) -> str:
        return f"PandaClient({self.api_url!r}, {self.log_url!r}, {self._credentials!r})"

    # --- transport --------------------------------------------------------------------------------
    def _get(self, url: str, params: Mapping[str, Any] | None, what: str, stream: bool = False) -> requests.Response:
        try:
            resp = self._session.get(url, params=params, headers=self._credentials.headers(),
                                     cert=self._credentials.cert(), verify=self._verify, timeout=self._timeout_s,
                                     allow_redirects=False, stream=stream)
        except requests.RequestException as exc:
            if _timed_out(exc):
                raise PandaUnavailable(f"PanDA {what}: no answer within {self._timeout_s:g} s") from None
            raise PandaUnavailable(f"PanDA {what}: {type(exc).__name__}") from None
        except OSError:  # requests checks the client certificate file before connecting
            raise PandaDenied(f"PanDA {what}: the X.509 proxy file cannot be read") from None
        if resp.status_code in (401, 403):
            resp.close()
            raise PandaDenied(f"PanDA {what}: HTTP {resp.status_code} (credentials refused or missing)")
        if resp.status_code in (404, 410):
            resp.close()
            raise PandaNotFound(f"PanDA {what}: not found or expired (HTTP {resp.status_code})")
        if resp.status_code != 200:
            resp.close()
            raise PandaUnavailable(f"PanDA {what}: HTTP {resp.status_code}")
        return resp

    def api(self, endpoint: str, what: str, **params: Any) -> Any:
        """`data` of a successful API answer; success=false is PandaNotFound when it says so, else PandaDenied."""
        resp = self._get(f"{self.api_url}/{endpoint}", params, what)
        try:
            body = resp.json()
        except ValueError:
            raise PandaUnavailable(f"PanDA {what}: the answer is not JSON") from None
        if not isinstance(body, dict) or "success" not in body:
            raise PandaUnavailable(f"PanDA {what}: unexpected answer shape")
        if not body["success"]:
            message = str(body.get("message") or "refused")[:200]
            kind = PandaNotFound if "not found" in message.lower() or "no data" in message.lower() else PandaDenied
            raise kind(f"PanDA {what}: {message}")
        return body.get("data")

    def text(self, url: str, what: str, max_chars: int = budgets.PANDA_LOG_MAX_CHARS) -> str:
        """A log file, at most `max_chars` (its head and the tail end: `…` marks the cut). Only URLs on the
        API or log host are read, so the credentials never go to another host."""
        if _origin(url) not in {_origin(u) for u in (self.api_url, self.log_url) if u}:
            raise PandaDenied(f"PanDA {what}: the URL is not on the PanDA API or log host")
        resp = self._get(url, None, what, stream=True)
        try:
            chunks: list[bytes] = []
            size = 0
            for chunk in resp.iter_content(64 * 1024):
                chunks.append(chunk)
                size += len(chunk)
                if size >= 4 * max_chars:
                    break
        except (requests.RequestException, OSError) as exc:
            raise PandaUnavailable(f"PanDA {what}: {type(exc).__name__} while reading") from None
        finally:
            resp.close()
        body = b"".join(chunks).decode(errors="replace")
        if len(body) <= max_chars:
            return body
        half = max_chars // 2
        return body[:half] + "\n…\n" + body[-half:]

    # --- endpoints --------------------------------------------------------------------------------
    def task(self, task_id: int) -> dict[str, Any]:
        data = self.api("task/get_details", f"task {task_id}", task_id=int(task_id), include_parameters="true",
                        include_status="true")
        if not isinstance(data, dict):
            raise PandaNotFound(f"PanDA task {task_id}: no details")
        return data

    def job_ids(self, task_id: int) -> list[int]:
        data = self.api("task/get_job_ids", f"job ids of task {task_id}", task_id=int(task_id))
        return [int(i) for i in data or []]

    def jobs(self, panda_ids: Sequence[int]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        ids = [int(i) for i in panda_ids]
        for start in range(0, len(ids), budgets.PANDA_JOBS_PER_REQUEST):
            batch = ids[start:start + budgets.PANDA_JOBS_PER_REQUEST]
            data = self.api("job/get_description_incl_archive", f"{len(batch)} job(s)", job_ids=json.dumps(batch))
            found += [j for j in data or [] if isinstance(j, dict)]
        return found

    def task_jobs(self, task_id: int) -> list[dict[str, Any]]:
        return self.jobs(self.job_ids(task_id))

    def datasets(self, task_id: int) -> list[dict[str, Any]]:
        data = self.api("task/get_datasets_and_files", f"datasets of task {task_id}", task_id=int(task_id),
                        dataset_types=json.dumps(["input", "pseudo_input"]))
        return [d for d in data or [] if isinstance(d, dict)]

    def tasks_since(self, since: str, prod_source_label: str) -> list[dict[str, Any]]:
        data = self.api("task/get_tasks_modified_since", "recent tasks", since=since, full="true",
                        prod_source_label=prod_source_label)
        return [t for t in data or [] if isinstance(t, dict)]

    def job_log(self, panda_id: int, filename: str = "payload.stdout") -> str:
        if not self.log_url:
            raise PandaNotFound("PanDA job logs: no log_url is configured")
        return self.text(f"{self.log_url}/{int(panda_id)}/{filename}", f"{filename} of job {int(panda_id)}")
