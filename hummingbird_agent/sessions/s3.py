"""S3 session store on aiobotocore: sessions/{id}/context.json, transcript.md, sandbox.tar.gz.

The archive streams sandbox -> S3 as a multipart upload (never whole in memory) and back as a streamed body.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hummingbird_agent import budgets
from hummingbird_agent.aws import AwsClient, map_aws_errors
from hummingbird_agent.errors import PermanentError
from hummingbird_agent.lifecycle import ClientState
from hummingbird_agent.sessions.base import (
    ARCHIVE_FILE,
    CONTEXT_FILE,
    TRANSCRIPT_FILE,
    StoredSession,
    validate_session_id,
)

_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})


def map_s3_errors(action: str, key: str) -> contextlib.AbstractContextManager[None]:
    # A missing key is permanent (an expired session); everything else may pass.
    return map_aws_errors(f"S3 {action} {key}", _MISSING)


class S3SessionStore:
    """SessionStore over one bucket and prefix."""

    def __init__(self, bucket: str, prefix: str, region: str, endpoint_url: str | None) -> None:
        self._bucket, self._prefix = bucket, prefix.rstrip("/") + "/" if prefix else ""
        self._aws = AwsClient("s3", region, endpoint_url)

    @property
    def state(self) -> ClientState:
        return self._aws.state

    @property
    def _client(self) -> Any:
        return self._aws.client

    async def start(self) -> None:
        await self._aws.start()

    async def aclose(self) -> None:
        await self._aws.aclose()

    def key(self, session_id: str, name: str) -> str:
        return f"{self._prefix}{validate_session_id(session_id)}/{name}"

    async def save(
        self, session_id: str, context: Mapping[str, Any], transcript: str,
        archive_chunks: AsyncIterable[bytes] | None,
    ) -> None:
        # The archive goes first: context.json is what marks a session as present, so a crash mid-save
        # leaves the previous session (or none) rather than a context pointing at a missing archive.
        if archive_chunks is not None:
            await self._upload_stream(self.key(session_id, ARCHIVE_FILE), archive_chunks)
        await self._put(self.key(session_id, TRANSCRIPT_FILE), transcript.encode(), "text/markdown")
        body = json.dumps(context, ensure_ascii=False).encode()
        await self._put(self.key(session_id, CONTEXT_FILE), body, "application/json")

    async def load(self, session_id: str) -> StoredSession:
        context = json.loads(await self._get(self.key(session_id, CONTEXT_FILE)))
        if not isinstance(context, dict) or not isinstance(context.get("contents"), list):
            raise PermanentError(f"session {session_id}: context.json has no contents list")
        try:
            transcript = (await self._get(self.key(session_id, TRANSCRIPT_FILE))).decode()
        except PermanentError:
            transcript = ""
        archive_key = self.key(session_id, ARCHIVE_FILE)
        has_archive = await self._exists(archive_key)
        return StoredSession(context, transcript, (lambda: self._stream(archive_key)) if has_archive else None)

    async def exists(self, session_id: str) -> bool:
        return await self._exists(self.key(session_id, CONTEXT_FILE))

    async def _exists(self, key: str) -> bool:
        try:
            with map_s3_errors("head", key):
                await self._client.head_object(Bucket=self._bucket, Key=key)
        except PermanentError:
            return False
        return True

    async def _put(self, key: str, body: bytes, content_type: str) -> None:
        with map_s3_errors("put", key):
            await self._client.put_object(Bucket=self._bucket, Key=key, Body=body, ContentType=content_type)

    async def _get(self, key: str) -> bytes:
        with map_s3_errors("get", key):
            reply = await self._client.get_object(Bucket=self._bucket, Key=key)
            async with reply["Body"] as stream:
                data: bytes = await stream.read()
                return data

    async def _stream(self, key: str) -> AsyncIterator[bytes]:
        with map_s3_errors("get", key):
            reply = await self._client.get_object(Bucket=self._bucket, Key=key)
            async with reply["Body"] as stream:
                while chunk := await stream.read(budgets.STREAM_CHUNK_BYTES):
                    yield chunk

    async def _upload_stream(self, key: str, chunks: AsyncIterable[bytes]) -> None:
        """Multipart upload in S3_PART_BYTES parts; a small archive is one plain put."""
        buffer, upload_id = bytearray(), None
        parts: list[dict[str, Any]] = []
        try:
            async for chunk in chunks:
                buffer += chunk
                if len(buffer) >= budgets.S3_PART_BYTES:
                    upload_id = upload_id or await self._create_upload(key)
                    parts.append(await self._upload_part(key, upload_id, len(parts) + 1, bytes(buffer)))
                    buffer.clear()
            if upload_id is None:
                await self._put(key, bytes(buffer), "application/gzip")
                return
            if buffer:
                parts.append(await self._upload_part(key, upload_id, len(parts) + 1, bytes(buffer)))
            with map_s3_errors("complete upload", key):
                await self._client.complete_multipart_upload(
                    Bucket=self._bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
                )
        except BaseException:
            if upload_id is not None:
                with contextlib.suppress(ClientError, BotoCoreError):
                    await self._client.abort_multipart_upload(Bucket=self._bucket, Key=key, UploadId=upload_id)
            raise

    async def _create_upload(self, key: str) -> str:
        with map_s3_errors("create upload", key):
            reply = await self._client.create_multipart_upload(
                Bucket=self._bucket, Key=key, ContentType="application/gzip"
            )
            return str(reply["UploadId"])

    async def _upload_part(self, key: str, upload_id: str, number: int, data: bytes) -> dict[str, Any]:
        with map_s3_errors("upload part", key):
            reply = await self._client.upload_part(
                Bucket=self._bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=data
            )
            return {"PartNumber": number, "ETag": reply["ETag"]}
