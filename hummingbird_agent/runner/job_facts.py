"""Facts of a failed CI job beyond its excerpt: the image the runner used and the command that failed
(read while the log streams past), and the Konflux / Testing Farm references of the failure."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.logs import clean_line
from hummingbird_agent.logs.tail import LogTail

# The runner's preamble names the job's image: `Using Docker executor with image python:3.12 ...`.
_EXECUTOR_IMAGE = re.compile(r"^Using \S+ executor with image (\S+)")
# The runner echoes every script line as `$ cmd`; `set -x` traces commands as `+ cmd`.
_TRACED = re.compile(r"^\++ (\S.*)$")
_COMMAND = re.compile(r"^(?:\$|\++) (\S.*)$")
_TF_REQUEST = re.compile(
    r"https?://[^\s\"'<>]*testing-farm[^\s\"'<>]*?/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
_TF_NAMES = ("testing-farm", "testing farm", "testing_farm")


class LogFacts:
    """Collects the image, the Testing Farm links and the echoed or traced commands (the last few, with
    line numbers) from a stream of log lines, one line at a time: `tap` passes every line on unchanged."""

    def __init__(self) -> None:
        self.image = ""
        self.tf_requests: dict[str, str] = {}
        """Testing Farm request URL -> request id, in order of appearance (capped)."""
        self._commands: deque[tuple[int, str]] = deque(maxlen=budgets.BAMBOO_ECHOED_COMMANDS)
        self.tail = LogTail()

    def tap(self, lines: Iterable[str]) -> Iterator[str]:
        for number, line in enumerate(lines, 1):
            if not self.image and number <= budgets.BAMBOO_LOG_HEAD_LINES and "executor with image" in line:
                if match := _EXECUTOR_IMAGE.match(clean_line(line)):
                    self.image = match[1]
            if ("$ " in line or line.startswith("+")) and (match := _COMMAND.match(clean_line(line))):
                self._commands.append((number, match[1]))
            if "testing-farm" in line and len(self.tf_requests) < budgets.BAMBOO_MAX_REFERENCES:
                self.tf_requests.update((m[0], m[1]) for m in _TF_REQUEST.finditer(line))
            self.tail.add(line)
            yield line

    def failing_command(self, excerpt: Sequence[tuple[int, str]]) -> str:
        """A shell-traced `+ cmd` the excerpt shows, else the last command echoed or traced before the
        excerpt (the step the failure lies in), else the last one seen."""
        traced = [m[1] for _, line in excerpt if (m := _TRACED.match(line))]
        if traced:
            return traced[-1][: budgets.BAMBOO_COMMAND_MAX_CHARS]
        first = excerpt[0][0] if excerpt else None
        before = [c for n, c in self._commands if first is None or n <= first] or [c for _, c in self._commands]
        return before[-1][: budgets.BAMBOO_COMMAND_MAX_CHARS] if before else ""


@dataclass(frozen=True, slots=True)
class JobLog:
    """One job's log as the incident keeps it."""

    excerpt: str
    image: str
    command: str
    tf_requests: tuple[tuple[str, str], ...] = ()
    """(request URL, request id) of the Testing Farm requests the log links to."""
    tail: str = ""
    """The log's last lines, for the knowledge base's whole-log vector (bamboo.log_vector)."""


References = dict[str, list[dict[str, str]]]


def external_references(failed: Iterable[Mapping[str, Any]], logs: Iterable[JobLog]) -> References:
    """`konflux` and `testing_farm` entries: failed statuses of either system (name, status, url) and
    Testing Farm requests the job logs link to (request id, url)."""
    refs: References = {}
    for status in failed:
        name, url = str(status.get("name") or ""), str(status.get("target_url") or "")
        where = f"{name} {url}".lower()
        kind = "konflux" if "konflux" in where else "testing_farm" if any(n in where for n in _TF_NAMES) else None
        if kind:
            refs.setdefault(kind, []).append({"name": name, "status": str(status.get("status") or ""), "url": url})
    requests = dict(pair for log in logs for pair in log.tf_requests)
    seen = {r["url"] for r in refs.get("testing_farm", [])}
    for url, request in list(requests.items())[: budgets.BAMBOO_MAX_REFERENCES]:
        if url not in seen:
            refs.setdefault("testing_farm", []).append({"request": request, "url": url})
    return refs


def job_fields(job: Mapping[str, Any] | None, log: JobLog | None) -> dict[str, Any]:
    """The incident's facts of one job from its API record and its log (empty values left out)."""
    job = job or {}
    fields = {"failure_reason": job.get("failure_reason"), "runner_tags": list(job.get("tag_list") or []),
              "image": log.image if log else "", "command": log.command if log else ""}
    return {k: v for k, v in fields.items() if v}
