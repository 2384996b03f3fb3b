"""Local-directory session store: one directory per session (or exactly the directory given to
`run --save-session`). Files are written to a temporary name first, so a crash leaves no torn file."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import time
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.errors import PermanentError
from hummingbird_agent.sessions.base import (
    ARCHIVE_FILE,
    CONTEXT_FILE,
    TRANSCRIPT_FILE,
    StoredSession,
    validate_session_id,
)

log = logging.getLogger(__name__)


async def save_directory(
    directory: Path, context: Mapping[str, Any], transcript: str, archive_chunks: AsyncIterable[bytes] | None
) -> None:
    """Write the three session files into `directory` (created if needed)."""
    directory.mkdir(parents=True, exist_ok=True)
    _write_atomic(directory / CONTEXT_FILE, json.dumps(context, ensure_ascii=False, indent=1).encode())
    _write_atomic(directory / TRANSCRIPT_FILE, transcript.encode())
    if archive_chunks is not None:
        tmp = directory / f".{ARCHIVE_FILE}.tmp"
        with tmp.open("wb") as out:
            async for chunk in archive_chunks:
                out.write(chunk)
        os.replace(tmp, directory / ARCHIVE_FILE)


def load_directory(directory: Path) -> StoredSession:
    """Read a saved session; PermanentError (one line) when it is missing or malformed."""
    try:
        context = json.loads((directory / CONTEXT_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PermanentError(f"no saved session in {directory} ({CONTEXT_FILE} not found)") from None
    except (OSError, ValueError) as exc:
        raise PermanentError(f"{directory / CONTEXT_FILE} is unreadable: {exc}") from None
    if not isinstance(context, dict) or not isinstance(context.get("contents"), list):
        raise PermanentError(f"{directory / CONTEXT_FILE} is not a saved session (no contents list)")
    transcript_path = directory / TRANSCRIPT_FILE
    transcript = transcript_path.read_text(encoding="utf-8") if transcript_path.is_file() else ""
    archive_path = directory / ARCHIVE_FILE
    return StoredSession(context, transcript, (lambda: _read_chunks(archive_path)) if archive_path.is_file() else None)


class LocalSessionStore:
    """SessionStore over `root/<session-id>/`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, session_id: str) -> Path:
        return self.root / validate_session_id(session_id)

    async def save(
        self,
        session_id: str,
        context: Mapping[str, Any],
        transcript: str,
        archive_chunks: AsyncIterable[bytes] | None,
    ) -> None:
        await save_directory(self.path(session_id), context, transcript, archive_chunks)

    async def load(self, session_id: str) -> StoredSession:
        return load_directory(self.path(session_id))

    async def exists(self, session_id: str) -> bool:
        return (self.path(session_id) / CONTEXT_FILE).is_file()

    def expire(self, max_age_s: float, now: float | None = None) -> int:
        """Delete every session last saved more than `max_age_s` ago (its context.json's mtime; a directory
        without one, a save cut short, by its own); returns how many. Entries not named by a session id are
        not ours and stay."""
        cutoff = (time.time() if now is None else now) - max_age_s
        removed = 0
        for entry in self.root.iterdir() if self.root.is_dir() else ():
            if not _is_session_id(entry.name) or not entry.is_dir():
                continue
            marker = entry / CONTEXT_FILE
            try:
                saved = (marker if marker.exists() else entry).stat().st_mtime
            except FileNotFoundError:  # removed meanwhile
                continue
            if saved < cutoff:
                shutil.rmtree(entry, ignore_errors=True)
                removed += not entry.exists()
        return removed


async def sweep(store: LocalSessionStore, max_age_s: float) -> int:
    """`store.expire` off the event loop, logged when it removed something."""
    removed = await asyncio.to_thread(store.expire, max_age_s)
    if removed:
        log.info("sessions expired: %d removed (last saved over %g days ago)", removed, max_age_s / 86400)
    return removed


async def sweep_periodically(store: LocalSessionStore, max_age_s: float, interval_s: float) -> None:
    """`sweep` every `interval_s` until cancelled (the service's lifetime)."""
    while True:
        await asyncio.sleep(interval_s)
        await sweep(store, max_age_s)


def _is_session_id(name: str) -> bool:
    try:
        return validate_session_id(name) == name
    except PermanentError:
        return False


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


async def _read_chunks(path: Path) -> AsyncIterator[bytes]:
    with path.open("rb") as src:
        while chunk := src.read(budgets.STREAM_CHUNK_BYTES):
            yield chunk
