"""Kubernetes and Kubearchive over plain requests: kubeconfig credentials, list pages scanned as raw bytes
(O(one item) memory), both sources combined and deduplicated by uid, pod logs Kubearchive first."""

from __future__ import annotations

import base64
import logging
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests
import urllib3
import yaml

from hummingbird_agent import budgets
from hummingbird_agent.data_sources.kube_page import RawItem, TruncatedPage, scan_page
from hummingbird_agent.errors import ConfigError

log = logging.getLogger(__name__)
# Everything that can end a streamed page early: transport, chunked framing, gzip and JSON errors
# (a cut page is a TruncatedPage, a ValueError).
STREAM_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError, ValueError)


@dataclass(frozen=True, slots=True)
class KubeCredentials:
    """API server URL and bearer token of one cluster; `verify` is requests' TLS setting."""

    server: str
    token: str = field(repr=False)
    verify: bool | str = True


def load_kubeconfig(path: str) -> KubeCredentials:
    """The current context's server and bearer token from a kubeconfig file (ConfigError when unusable)."""
    if not path:
        raise ConfigError("konflux: the kubeconfig env var is unset or empty")
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        context = _named(doc, "contexts", doc.get("current-context"))["context"]
        cluster = _named(doc, "clusters", context["cluster"])["cluster"]
        user = _named(doc, "users", context["user"])["user"]
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"konflux: kubeconfig {Path(path).name} is unusable ({type(exc).__name__})") from None
    token = user.get("token") or _read_token_file(user.get("tokenFile"))
    if not token or not cluster.get("server"):
        raise ConfigError(f"konflux: kubeconfig {Path(path).name} has no server or bearer token")
    return KubeCredentials(str(cluster["server"]).rstrip("/"), str(token).strip(), _verify(cluster))


def _named(doc: dict[str, Any], section: str, name: Any) -> dict[str, Any]:
    entries = doc[section]
    if name is None and len(entries) == 1:
        return dict(entries[0])
    return dict(next(e for e in entries if e["name"] == name))


def _read_token_file(path: str | None) -> str | None:
    return Path(path).read_text(encoding="utf-8") if path else None


def _verify(cluster: dict[str, Any]) -> bool | str:
    if cluster.get("insecure-skip-tls-verify"):
        return False
    if cluster.get("certificate-authority"):
        return str(cluster["certificate-authority"])
    if cluster.get("certificate-authority-data"):
        # requests takes a CA bundle only as a path; the file lives as long as the process.
        with tempfile.NamedTemporaryFile("wb", prefix="kube-ca-", suffix=".pem", delete=False) as handle:
            handle.write(base64.b64decode(cluster["certificate-authority-data"]))
        return handle.name
    return True


class KubeClient:
    """Read-only access to one cluster's live API and (optionally) its Kubearchive, bearer-token auth."""

    def __init__(self, credentials: KubeCredentials, kubearchive_url: str | None = None,
                 timeout_s: float = budgets.DATA_SOURCE_HTTP_TIMEOUT_S) -> None:
        self._creds = credentials
        self._timeout_s = timeout_s
        # Kubearchive first: it holds the completed runs; the live API adds what is not archived yet.
        self.sources: tuple[tuple[str, str], ...] = tuple(
            (name, url.rstrip("/")) for name, url in (("kubearchive", kubearchive_url), ("live", credentials.server))
            if url
        )

    def __repr__(self) -> str:  # never show the token
        return f"KubeClient(sources={[name for name, _ in self.sources]})"

    def session(self) -> requests.Session:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {self._creds.token}"
        session.headers["Accept"] = "application/json"
        session.verify = self._creds.verify
        return session

    def iter_paginated(self, session: requests.Session, source: tuple[str, str], path: str,
                       selector: str, gaps: list[str]) -> Iterator[RawItem]:
        """Every item of a list across continue-token pages; a failure is logged, noted in `gaps`, and
        ends this source (partial over nothing)."""
        name, base = source
        params = {"labelSelector": selector, "limit": str(budgets.KUBE_LIST_PAGE_LIMIT)}
        for _ in range(budgets.KUBE_MAX_PAGES):
            holder: dict[str, str] = {}
            try:
                with session.get(base + path, params=params, stream=True, timeout=self._timeout_s) as resp:
                    if resp.status_code == 404:
                        return
                    if resp.status_code != 200:
                        gaps.append(f"{name}: HTTP {resp.status_code} listing {path} ({selector})")
                        return
                    resp.raw.decode_content = True  # urllib3 un-gzips inline
                    yield from scan_page(resp.raw, holder)
            except STREAM_ERRORS as exc:
                log.warning("kube list stopped source=%s path=%s error=%s", name, path, type(exc).__name__)
                # Our own page errors name the byte offset; other errors may quote URLs, so only their type.
                reason = str(exc) if isinstance(exc, TruncatedPage) else type(exc).__name__
                gaps.append(f"{name}: listing {path} ({selector}) stopped early: {reason}")
                return
            if not holder.get("continue"):
                return
            params["continue"] = holder["continue"]
        gaps.append(f"{name}: listing {path} ({selector}) stopped after {budgets.KUBE_MAX_PAGES} pages")

    def iter_resources(self, path: str, selectors: Sequence[str], gaps: list[str]) -> Iterator[RawItem]:
        """Items from every source and selector, each uid once (one session for the whole call)."""
        seen: set[str] = set()
        with self.session() as session:
            for selector in selectors:
                for source in self.sources:
                    for item in self.iter_paginated(session, source, path, selector, gaps):
                        uid = item.uid
                        if uid is not None:
                            if uid in seen:
                                continue
                            seen.add(uid)
                        yield item

    def get_object(self, session: requests.Session, path: str) -> dict[str, Any] | None:
        """One object from the first source that has it; None when none does."""
        for name, base in self.sources:
            try:
                resp = session.get(base + path, timeout=self._timeout_s)
                if resp.status_code == 200:
                    return dict(resp.json())
            except STREAM_ERRORS as exc:
                log.warning("kube get failed source=%s path=%s error=%s", name, path, type(exc).__name__)
        return None

    def iter_log(self, session: requests.Session, path: str, container: str, gaps: list[str]) -> Iterator[bytes]:
        """A container log streamed from the first source that answers 200; a stated gap when none does."""
        tried = []
        for name, base in self.sources:
            try:
                resp = session.get(base + path, params={"container": container}, stream=True, timeout=self._timeout_s)
            except STREAM_ERRORS as exc:
                tried.append(f"{name}: {type(exc).__name__}")
                continue
            with resp:
                if resp.status_code != 200:
                    tried.append(f"{name}: HTTP {resp.status_code}")
                    continue
                yield from _body(resp, f"log of container {container} ({name})", gaps)
                return
        gap = f"log of container {container} is unavailable ({'; '.join(tried)}); the pod has probably expired"
        gaps.append(gap)
        yield f"[{gap}]\n".encode()


def _body(resp: requests.Response, what: str, gaps: list[str]) -> Iterator[bytes]:
    try:
        yield from resp.iter_content(budgets.STREAM_CHUNK_BYTES)
    except STREAM_ERRORS as exc:
        log.warning("kube stream cut what=%s error=%s", what, type(exc).__name__)
        gaps.append(f"{what} was cut short: {type(exc).__name__}")
        yield f"\n[{what} was cut short: {type(exc).__name__}]\n".encode()


def segment(value: str) -> str:
    """A path segment with every reserved character encoded."""
    return quote(value, safe="")
