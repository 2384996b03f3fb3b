"""Logging and Sentry set-up for the process, and the context fields every log line carries.

Logs go to stderr: readable on a TTY, one JSON object per line otherwise. Known secret values are replaced
by `[redacted]` in every line and every Sentry event, in the record's parts before they are formatted.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Protocol

CONTEXT_FIELDS = ("session_id", "project", "mr_iid", "workflow", "message_id")
REDACTED = "[redacted]"

# An immutable default: each log_context() block sets a fresh dict, never mutates the current one.
_context: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "hb_log_context", default=MappingProxyType({})
)


@contextlib.contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Add context fields (session_id, project, ...) to every log line emitted inside the block."""
    token = _context.set({**_context.get(), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _context.reset(token)


def current_context() -> dict[str, Any]:
    return dict(_context.get())


class Redactor:
    """Replaces known secret values in text and in structures. Each value is matched as written and as
    JSON and Python escape it (a `"` or `\\` in a secret is escaped in a JSON line, a tool result or a
    repr), so escaping cannot hide one. Callers pass only values long enough to redact safely
    (config.secret_values refuses shorter ones)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms = {form for secret in secrets if secret for form in _written_forms(secret)}
        self._forms = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for form in self._forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text

    def scrub(self, value: Any) -> Any:
        """Redact secrets anywhere inside a JSON-like structure (keys too), before it is serialised."""
        return scrub(value, self)


def _written_forms(secret: str) -> set[str]:
    """The secret as written, as a JSON string body (ASCII-escaped or not) and as a Python repr body."""
    return {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1]}


def scrub(value: Any, redact: Callable[[str], str]) -> Any:
    """`value` with `redact` applied to every string inside it (dict keys too); containers keep their type."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {scrub(k, redact): scrub(v, redact) for k, v in value.items()}
    if type(value) in (list, tuple, set, frozenset):  # exact types: a namedtuple cannot be built from one iterable
        return type(value)(scrub(v, redact) for v in value)
    return value


def _redacted_record(record: logging.LogRecord, redact: Redactor) -> logging.LogRecord:
    """A copy of `record` (other handlers see the original) with its message, arguments and context
    fields redacted as structures, before any formatting can escape a secret inside them."""
    copy = logging.makeLogRecord(record.__dict__)
    copy.msg = redact.scrub(record.msg)
    if isinstance(record.args, Mapping | tuple):
        copy.args = redact.scrub(record.args)
    for key in CONTEXT_FIELDS:
        if (value := getattr(record, key, None)) is not None:
            setattr(copy, key, redact.scrub(value))
    return copy


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _context.get().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line with the context fields, for log collectors."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self._redact = redact

    def format(self, record: logging.LogRecord) -> str:
        record = _redacted_record(record, self._redact)
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in CONTEXT_FIELDS:
            if (value := getattr(record, key, None)) is not None:
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(self._redact.scrub(entry), default=lambda value: self._redact(str(value)))


class TextFormatter(logging.Formatter):
    """Human-readable lines for a terminal, context fields appended as key=value."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S")
        self._redact = redact

    def format(self, record: logging.LogRecord) -> str:
        record = _redacted_record(record, self._redact)
        line = super().format(record)
        extras = " ".join(f"{k}={getattr(record, k)}" for k in CONTEXT_FIELDS if getattr(record, k, None))
        return self._redact(f"{line} [{extras}]" if extras else line)


class LogStream(Protocol):
    """Where log lines are written: stderr, or a stream that keeps them above a progress bar."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...

    def isatty(self) -> bool: ...


def setup_logging(
    level: str = "INFO", secrets: Iterable[str] = (), stream: LogStream | None = None, json_lines: bool | None = None
) -> Redactor:
    """Configure the root logger once for the process; returns the redactor in use."""
    out = stream or sys.stderr
    redact = Redactor(secrets)
    as_json = (not out.isatty()) if json_lines is None else json_lines
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter(redact) if as_json else TextFormatter(redact))
    handler.addFilter(_ContextFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return redact


def setup_sentry(dsn: str | None, redact: Redactor, environment: str = "production") -> bool:
    """Start Sentry only when a DSN is given; every event is scrubbed of secret values before sending."""
    if not dsn:
        return False
    import sentry_sdk

    def before_send(event: dict[str, Any], _hint: dict[str, Any]) -> dict[str, Any]:
        scrubbed: dict[str, Any] = redact.scrub(event)
        return scrubbed

    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        before_send=before_send,  # type: ignore[arg-type]  # sentry types Event as a TypedDict; scrub takes any dict
        traces_sample_rate=0.0,
        default_integrations=True,
    )
    return True
