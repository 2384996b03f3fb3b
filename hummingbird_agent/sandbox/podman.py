"""Podman backend (local development and CI): one hardened long-lived container per sandbox.

Only this module runs the podman CLI. Commands go through `podman exec` child processes whose stdin and
stdout pipes carry raw bytes; nothing touches the host filesystem.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import uuid

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import ConfigError, SandboxError
from hummingbird_agent.sandbox._core import SandboxBase
from hummingbird_agent.sandbox.base import SANDBOX_UID, WORKDIR

log = logging.getLogger(__name__)

# Label on every sandbox container, so an operator can find orphans: podman ps -a --filter label=...
SANDBOX_LABEL = "io.hummingbird.sandbox=1"
# The pipes to and from `podman exec` hold 1 MiB (Linux's default pipe-max-size; the default is 64 KiB, one
# chunk), so podman keeps writing while this process is between two reads: a 64 KiB pipe made a 100 MB read
# ~30 % slower than podman writing to a file.
_PIPE_SIZE_BYTES = 1024 * 1024
# The reader's buffer above the pipe's, so a fast producer is not paused per chunk read; the writer queues
# as much before drain() waits. At most twice this is buffered per stream.
_PIPE_LIMIT_BYTES = 4 * _PIPE_SIZE_BYTES
_WRITE_HIGH_BYTES = _PIPE_SIZE_BYTES


def run_argv(config: SandboxConfig, name: str) -> list[str]:
    """The `podman run` command line of a sandbox container (pure; every isolation flag is here)."""
    # Imported here, not with the package: `python -m hummingbird_agent.sandbox.seccomp` (regenerating the
    # profile) would otherwise find its module imported already and warn.
    from hummingbird_agent.sandbox import seccomp

    user = f"{SANDBOX_UID}:{SANDBOX_UID}"
    return [
        config.podman_binary, "run", "--detach", "--rm", "--name", name, "--label", SANDBOX_LABEL,
        "--network=none", "--read-only", "--read-only-tmpfs=false", "--ipc=none",
        f"--tmpfs={WORKDIR}:rw,size={config.workdir_bytes},U,mode=0700,nosuid,nodev",
        f"--user={user}", f"--workdir={WORKDIR}", f"--env=HOME={WORKDIR}", f"--env=TMPDIR={WORKDIR}",
        "--cap-drop=ALL", "--security-opt=no-new-privileges", f"--security-opt=seccomp={seccomp.profile_path()}",
        f"--memory={config.memory_bytes}", f"--memory-swap={config.memory_bytes}",
        f"--pids-limit={config.pids_limit}", f"--cpus={config.cpus}",
        f"--timeout={int(budgets.SANDBOX_MAX_LIFETIME_S)}",
        config.image, "/usr/local/bin/sandbox-init",
    ]  # fmt: skip


class _ExecChannel:
    """A `podman exec` child process as a Channel."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc

    async def write(self, data: bytes) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(data)
        await self._proc.stdin.drain()

    async def close_stdin(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            await self._proc.stdin.wait_closed()
        except (BrokenPipeError, ConnectionResetError):
            return

    async def read_stdout(self) -> bytes:
        assert self._proc.stdout is not None
        return await self._proc.stdout.read(budgets.STREAM_CHUNK_BYTES)

    async def read_stderr(self) -> bytes:
        assert self._proc.stderr is not None
        return await self._proc.stderr.read(budgets.STREAM_CHUNK_BYTES)

    async def wait(self) -> int:
        return await self._proc.wait()

    async def abort(self) -> None:
        if self._proc.returncode is None:
            self._proc.kill()
            await self._proc.wait()


class PodmanSandbox(SandboxBase):
    """A sandbox container: no network, read-only root, tmpfs working dir, uid 65532, no capabilities."""

    def __init__(self, config: SandboxConfig, session_id: str = "") -> None:
        suffix = uuid.uuid4().hex[:12]
        super().__init__(f"hb-sandbox-{session_id[:8]}-{suffix}" if session_id else f"hb-sandbox-{suffix}")
        self._config = config
        # The working directory of the podman calls: conmon writes a file named `oom` into it when a command
        # is OOM-killed, which must not land in the service's (or a developer's) current directory.
        self._scratch: str | None = None

    async def _create(self) -> None:
        self._scratch = tempfile.mkdtemp(prefix=f"{self.name}-")
        code, _, err = await _podman(run_argv(self._config, self.name), self._scratch)
        if code != 0:
            raise SandboxError(f"podman run failed for {self.name}: {_first_line(err)}")

    async def _open(self, argv: list[str], stdin: bool) -> _ExecChannel:
        cmd = [self._config.podman_binary, "exec", *(["--interactive"] if stdin else []), self.name, *argv]
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=_PIPE_LIMIT_BYTES,
            pipesize=_PIPE_SIZE_BYTES,
            cwd=self._scratch,
        )
        if proc.stdin is not None:
            # Let a few chunks queue before drain() waits, so the feeder is not woken per 64 KB write.
            proc.stdin.transport.set_write_buffer_limits(high=_WRITE_HIGH_BYTES)
        return _ExecChannel(proc)

    async def _sweep(self) -> None:
        # kill(-1) reaches every process of the sandbox uid except PID 1 (sandbox-init) and the caller, in
        # one walk that fork() cannot race (a child forked with SIGKILL pending never runs). Retried only when
        # the exec itself failed: right after a fork bomb the pids limit can refuse it.
        err = b""
        for _ in range(budgets.SANDBOX_SWEEP_ATTEMPTS):
            code, _, err = await _podman([self._config.podman_binary, "exec", self.name, "kill", "-KILL", "-1"],
                                         self._scratch)
            if code in (0, 1):  # 1: there was nothing left to kill
                return
            await asyncio.sleep(budgets.SANDBOX_SWEEP_RETRY_S)
        log.warning("sandbox sweep failed name=%s error=%s", self.name, _first_line(err))

    async def _destroy(self) -> None:
        code, _, err = await _podman([self._config.podman_binary, "rm", "--force", "--time=0", self.name],
                                     self._scratch)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
        if code != 0 and b"no such container" not in err:
            raise SandboxError(f"podman rm failed for {self.name}: {_first_line(err)}")


async def _podman(argv: list[str], cwd: str | None = None) -> tuple[int, bytes, bytes]:
    """Run one short podman CLI call to completion (killed if the caller is cancelled)."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
    )
    try:
        out, err = await proc.communicate()
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await asyncio.shield(proc.wait())
        raise
    assert proc.returncode is not None
    return proc.returncode, out, err


def _first_line(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else "(no output)"


async def check_podman(config: SandboxConfig) -> None:
    """Raise ConfigError (one line) unless podman runs and the sandbox image is present."""
    if shutil.which(config.podman_binary) is None:
        raise ConfigError(
            f"sandbox.backend podman: {config.podman_binary!r} not found (install it: scripts/setup-host.sh)"
        )
    code, _, err = await _podman([config.podman_binary, "image", "exists", config.image])
    if code == 1:
        raise ConfigError(f"sandbox.image {config.image!r} is not present (build it: sandbox-image/build-local.sh)")
    if code != 0:
        raise ConfigError(f"sandbox.backend podman is unusable: {_first_line(err)}")
