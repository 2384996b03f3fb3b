"""Local-directory session store: round trip, id validation, malformed sessions."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hummingbird_agent.errors import PermanentError
from hummingbird_agent.sessions import LocalSessionStore, load_directory, save_directory, validate_session_id

CONTEXT = {"session_id": "x", "contents": [{"role": "user", "parts": [{"text": "{}"}]}]}


async def chunks(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), 1000):
        yield data[start : start + 1000]


async def test_round_trip_through_the_store(tmp_path: Path) -> None:
    store = LocalSessionStore(tmp_path)
    sid = str(uuid.uuid4())
    archive = bytes(range(256)) * 50
    assert not await store.exists(sid)
    await store.save(sid, CONTEXT, "# transcript\n", chunks(archive))
    assert await store.exists(sid)
    loaded = await store.load(sid)
    assert loaded.context == CONTEXT and loaded.transcript == "# transcript\n"
    assert loaded.archive is not None
    assert b"".join([c async for c in loaded.archive()]) == archive
    assert sorted(p.name for p in (tmp_path / sid).iterdir()) == ["context.json", "sandbox.tar.gz", "transcript.md"]


async def test_a_session_without_archive_loads_without_one(tmp_path: Path) -> None:
    await save_directory(tmp_path / "s", CONTEXT, "", None)
    assert load_directory(tmp_path / "s").archive is None


@pytest.mark.parametrize("bad", ["../../etc", "not-a-uuid", "1EE4B6B5-3827-4914-9043-3A61CB08CA8B", "", "a/b"])
async def test_session_ids_must_be_canonical_uuids(tmp_path: Path, bad: str) -> None:
    with pytest.raises(PermanentError, match="invalid session id"):
        validate_session_id(bad)
    with pytest.raises(PermanentError):
        await LocalSessionStore(tmp_path).exists(bad)


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "is unreadable"), (json.dumps({"contents": "x"}), "is not a saved session")],
)
def test_malformed_context_is_one_clear_error(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "context.json").write_text(content)
    with pytest.raises(PermanentError, match=message):
        load_directory(tmp_path)
