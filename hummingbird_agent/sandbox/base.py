"""The Sandbox interface every backend implements, its result type and lifecycle states."""

from __future__ import annotations

import enum
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, Self

# The only writable directory inside every sandbox; `_out/` (auto-spill) lives inside it.
WORKDIR = "/tmp/data"
# Non-root uid/gid every sandbox command runs as (distroless "nonroot").
SANDBOX_UID = 65532

ByteChunks = AsyncIterable[bytes] | Iterable[bytes]


class SandboxState(enum.Enum):
    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class ExecResult:
    """Outcome of one command. Output is capped at the source; `*_truncated` says bytes were dropped."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Sandbox(Protocol):
    """An isolated box with no network and no credentials where model-requested commands run."""

    @property
    def state(self) -> SandboxState: ...

    async def start(self) -> None:
        """Create the box. Cleans up after itself if creation fails or is cancelled."""

    async def exec(self, command: str, timeout_s: float) -> ExecResult:
        """Run `command` with `sh -c` in WORKDIR; the whole process tree dies at `timeout_s`."""

    async def stream_exec(self, command: str, chunks: ByteChunks, timeout_s: float = ...) -> ExecResult:
        """Run `command` feeding `chunks` to its stdin."""

    def read_file_iter(self, path: str) -> AsyncIterator[bytes]:
        """Raw bytes of a file in the sandbox, in chunks of at most STREAM_CHUNK_BYTES."""

    async def write_file(self, path: str, chunks: ByteChunks) -> None:
        """Create or replace a file in the sandbox from a byte stream."""

    def archive(self) -> AsyncIterator[bytes]:
        """tar.gz of WORKDIR, made inside the sandbox; the host treats it as opaque bytes."""

    async def restore(self, chunks: ByteChunks) -> None:
        """Unpack an `archive()` stream into WORKDIR, inside the sandbox."""

    async def close(self) -> None:
        """Destroy the box. Idempotent; completes even when the caller is cancelled."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
