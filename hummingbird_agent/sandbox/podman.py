"""Podman backend (local development and CI): one hardened long-lived container per sandbox.

Only this module runs the podman CLI, twice a box: `podman run` and `podman rm`. `podman run` hands the box's
PID 1 (its command server) one end of a socketpair; every command, sweep, file and archive of the box then goes
over it (`_link_pipes`), not through `podman exec`. Nothing touches the host filesystem.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import uuid

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import ConfigError, SandboxError
from hummingbird_agent.sandbox._core import SandboxBase
from hummingbird_agent.sandbox._link_pipes import PipeCommand, PipeLink, socket_pair
from hummingbird_agent.sandbox.base import SANDBOX_UID, WORKDIR

log = logging.getLogger(__name__)

# Label on every sandbox container, so an operator can find orphans: podman ps -a --filter label=...
SANDBOX_LABEL = "io.hummingbird.sandbox=1"
# `podman run` started with the box's end of the socketpair as its stdin, moved to fd 3 (what `--preserve-fds=1`
# hands the container's PID 1); its own stdin is /dev/null. The shell execs podman: nothing stays between.
_STDIN_AS_FD3 = ["/bin/sh", "-c", 'exec "$@" 3<&0 0</dev/null', "sh"]


def run_argv(config: SandboxConfig, name: str, lifetime_s: float = budgets.SANDBOX_MAX_LIFETIME_S) -> list[str]:
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
        f"--timeout={int(lifetime_s)}", "--preserve-fds=1",
        config.image, "/usr/local/bin/sandbox-init",
    ]  # fmt: skip


class PodmanSandbox(SandboxBase):
    """A sandbox container: no network, read-only root, tmpfs working dir, uid 65532, no capabilities."""

    def __init__(self, config: SandboxConfig, session_id: str = "") -> None:
        suffix = uuid.uuid4().hex[:12]
        super().__init__(f"hb-sandbox-{session_id[:8]}-{suffix}" if session_id else f"hb-sandbox-{suffix}")
        self._config = config
        # The working directory of the podman calls: conmon writes a file named `oom` into it when a command
        # is OOM-killed, which must not land in the service's (or a developer's) current directory.
        self._scratch: str | None = None
        self._link: PipeLink | None = None

    async def _create(self) -> None:
        self._scratch = tempfile.mkdtemp(prefix=f"{self.name}-")
        self._link = await create_container(self._config, self.name, self._scratch)

    async def _open(self, argv: list[str], stdin: bool, stream_out: bool = False, sweep: bool = False
                    ) -> PipeCommand:
        return await self._opened_link().spawn(argv, stdin, budgets.SANDBOX_SWEEP_REAP_S if sweep else 0.0)

    async def _sweep(self) -> None:
        await self._opened_link().sweep()

    def _opened_link(self) -> PipeLink:
        if self._link is None:
            raise SandboxError(f"sandbox {self.name} has no channel")
        return self._link

    async def _destroy(self) -> None:
        try:
            await remove_container(self._config, self.name, self._scratch)
        finally:
            if self._link is not None:
                await self._link.close()


async def create_container(config: SandboxConfig, name: str, scratch: str,
                           lifetime_s: float = budgets.SANDBOX_MAX_LIFETIME_S) -> PipeLink:
    """Start sandbox container `name` (`podman run`, calls made from `scratch`) and return the channel to its
    command server; SandboxError if it fails."""
    host, box = socket_pair()
    try:
        code, _, err = await _podman([*_STDIN_AS_FD3, *run_argv(config, name, lifetime_s)], scratch,
                                     budgets.SANDBOX_CREATE_SETTLE_S, stdin=box.fileno())
    except BaseException:
        host.close()
        raise
    finally:
        box.close()  # the box's PID 1 holds the only copy now: its end closes when the box ends
    if code != 0:
        host.close()
        raise SandboxError(f"podman run failed for {name}: {_first_line(err)}")
    link = PipeLink(name, host)
    await link.open()
    return link


async def remove_container(config: SandboxConfig, name: str, scratch: str | None) -> None:
    """Kill and remove container `name` and its scratch directory; a container that is not there is fine."""
    code, _, err = await _podman([config.podman_binary, "rm", "--force", "--time=0", name], scratch)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
    if code != 0 and b"no such container" not in err:
        raise SandboxError(f"podman rm failed for {name}: {_first_line(err)}")


async def _podman(argv: list[str], cwd: str | None = None, settle_s: float = 0.0,
                  stdin: int = asyncio.subprocess.DEVNULL) -> tuple[int, bytes, bytes]:
    """Run one short podman CLI call to completion; if the caller is cancelled, the call may finish for up to
    `settle_s` before it is killed."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=stdin, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
    )
    try:
        out, err = await proc.communicate()
    except BaseException:
        if proc.returncode is None:
            await _settle(proc, settle_s)
        raise
    assert proc.returncode is not None
    return proc.returncode, out, err


async def _settle(proc: asyncio.subprocess.Process, settle_s: float) -> None:
    """Let a cancelled call end by itself for up to `settle_s`, then kill it. A `podman run` killed half-way
    leaves conmon and `runc init` running with no container record left to remove them by."""
    with contextlib.suppress(TimeoutError, asyncio.CancelledError):
        await asyncio.shield(asyncio.wait_for(proc.wait(), settle_s))
    if proc.returncode is None:
        proc.kill()
        await asyncio.shield(proc.wait())


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
