"""S3 session store on each AWS backend (moto, LocalStack) through the real aiobotocore client."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import AsyncIterator

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.errors import PermanentError
from hummingbird_agent.sessions.s3 import S3SessionStore
from tests.servers import AwsServer

SID = "0b6c3d1e-2f4a-4b5c-8d6e-7f8091a2b3c4"


@pytest.fixture
def bucket(aws_server: AwsServer) -> str:
    """A bucket of this test's own: LocalStack is shared by every test and cannot be reset."""
    name = f"sessions-{uuid.uuid4().hex[:12]}"
    s3 = aws_server.client("s3")
    s3.create_bucket(Bucket=name)
    s3.close()
    return name


@pytest.fixture
async def store(aws_server: AwsServer, bucket: str) -> AsyncIterator[S3SessionStore]:
    store = S3SessionStore(bucket, "sessions/", aws_server.region, aws_server.endpoint)
    await store.start()
    yield store
    await store.aclose()


async def _chunks(data: bytes, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


async def test_round_trip_with_multipart_archive(store: S3SessionStore, aws_server: AwsServer, bucket: str) -> None:
    archive = os.urandom(budgets.S3_PART_BYTES * 2 + 12345)  # three parts
    context = {"session_id": SID, "contents": [{"role": "user", "parts": [{"text": "héllo"}]}]}
    assert not await store.exists(SID)
    await store.save(SID, context, "# transcript", _chunks(archive))
    assert await store.exists(SID)
    loaded = await store.load(SID)
    assert loaded.context == context and loaded.transcript == "# transcript"
    assert loaded.archive is not None
    digest = hashlib.sha256()
    async for chunk in loaded.archive():
        assert len(chunk) <= budgets.STREAM_CHUNK_BYTES
        digest.update(chunk)
    assert digest.hexdigest() == hashlib.sha256(archive).hexdigest()
    s3 = aws_server.client("s3")
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"])
    s3.close()
    assert keys == [f"sessions/{SID}/{n}" for n in ("context.json", "sandbox.tar.gz", "transcript.md")]


async def test_small_archive_and_overwrite(store: S3SessionStore) -> None:
    await store.save(SID, {"contents": [1]}, "one", _chunks(b"small"))
    await store.save(SID, {"contents": [1, 2]}, "two", None)
    loaded = await store.load(SID)
    assert loaded.context == {"contents": [1, 2]} and loaded.transcript == "two"
    assert loaded.archive is not None  # the earlier archive stays


async def test_missing_and_invalid_sessions(store: S3SessionStore) -> None:
    with pytest.raises(PermanentError, match="NoSuchKey|404"):
        await store.load(SID)
    for bad in ["../../etc/passwd", "x" * 36, SID.upper() + "/"]:
        with pytest.raises(PermanentError, match="invalid session id"):
            await store.exists(bad)
