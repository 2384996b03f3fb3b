"""The Podman backend, run for real: isolation, limits, timeouts, streaming, archive and restore."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import ConfigError, SandboxError
from hummingbird_agent.sandbox import PodmanSandbox, SandboxFactory, SandboxState
from hummingbird_agent.sandbox.podman import check_podman

pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]

MiB = 1024 * 1024
# Small limits so the limit tests are quick; still room for the 100 MB stream test.
CONFIG = SandboxConfig(memory_bytes=768 * MiB, workdir_bytes=256 * MiB, pids_limit=128, cpus=1.0)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sbx() -> AsyncIterator[PodmanSandbox]:
    await check_podman(CONFIG)
    async with PodmanSandbox(CONFIG, session_id="testmodule") as box:
        yield box


async def container_exists(name: str) -> bool:
    proc = await asyncio.create_subprocess_exec("podman", "container", "exists", name)
    return await proc.wait() == 0


async def sh(box: PodmanSandbox, command: str, timeout_s: float = 30) -> str:
    result = await box.exec(command, timeout_s)
    assert result.exit_code == 0, result
    return result.stdout.decode()


async def test_runs_as_uid_65532_without_capabilities(sbx: PodmanSandbox) -> None:
    out = await sh(sbx, "id -u; id -g; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; pwd")
    lines = out.split()
    assert lines[:2] == ["65532", "65532"]
    assert "0000000000000000" in out and "NoNewPrivs:\t1" in out.replace("NoNewPrivs: ", "NoNewPrivs:\t")
    assert lines[-1] == "/tmp/data"


async def test_network_has_only_loopback_and_no_route(sbx: PodmanSandbox) -> None:
    assert (await sh(sbx, "ls /sys/class/net")).split() == ["lo"]
    assert (await sh(sbx, "tail -n +2 /proc/net/route")).strip() == ""  # no IPv4 route at all
    ipv6_devices = {line.split()[-1] for line in (await sh(sbx, "cat /proc/net/ipv6_route")).splitlines()}
    assert ipv6_devices <= {"lo"}


async def test_cannot_reach_a_port_listening_on_the_host_loopback(sbx: PodmanSandbox) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    port = server.getsockname()[1]
    try:
        probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
        result = await sbx.exec(f'python3 -c "{probe}"', 20)
        assert result.exit_code != 0
        assert b"ConnectionRefusedError" in result.stderr
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing ever arrived on the host side
    finally:
        server.close()


async def test_cannot_write_outside_the_working_directory(sbx: PodmanSandbox) -> None:
    for path in ["/x", "/etc/x", "/tmp/x", "/var/tmp/x", "/usr/x", "/root/x", "/dev/x", "/run/x", "/home/x"]:
        result = await sbx.exec(f"echo hi > {path}", 10)
        assert result.exit_code != 0, path
    assert await sh(sbx, "echo hi > /tmp/data/ok && cat /tmp/data/ok") == "hi\n"


async def test_working_directory_is_size_capped(sbx: PodmanSandbox) -> None:
    result = await sbx.exec("head -c 300M /dev/zero > big; rc=$?; rm -f big; exit $rc", 60)
    assert result.exit_code != 0
    assert b"No space left on device" in result.stderr


async def test_exit_code_and_both_streams_come_back(sbx: PodmanSandbox) -> None:
    result = await sbx.exec("echo out; echo err >&2; exit 7", 10)
    assert (result.exit_code, result.stdout, result.stderr, result.timed_out) == (7, b"out\n", b"err\n", False)


async def test_output_is_capped_at_the_source(sbx: PodmanSandbox) -> None:
    result = await sbx.exec("head -c 3M /dev/zero; echo done >&2", 30)
    assert result.exit_code == 0
    assert len(result.stdout) == budgets.SANDBOX_STDOUT_CAP_BYTES and result.stdout_truncated
    assert result.stderr == b"done\n" and not result.stderr_truncated


async def test_sleep_is_killed_at_its_timeout_with_its_whole_tree(sbx: PodmanSandbox) -> None:
    result = await sbx.exec("sleep 100 & setsid sleep 200 & nohup sleep 300 >/dev/null & sleep 400", 1.5)
    assert result.timed_out and not result.ok
    assert "sleep" not in await sh(sbx, "ps -eo args")


async def test_background_processes_do_not_outlive_a_command_that_exits_normally(sbx: PodmanSandbox) -> None:
    result = await sbx.exec("sleep 100 & setsid sleep 200 & nohup sleep 300 >/dev/null 2>&1 & echo started", 30)
    assert result.ok and result.stdout == b"started\n"
    assert "sleep" not in await sh(sbx, "ps -eo args")


def stray_processes(ps_output: str) -> list[str]:
    return [p for p in ps_output.splitlines() if "sandbox-init" not in p and "ps -eo" not in p]


async def test_fork_bomb_is_contained_by_the_pids_limit(sbx: PodmanSandbox) -> None:
    # On a busy machine the bomb's own shell may fail to fork and exit before the timeout: either way
    # the bomb hit the pids limit, nothing of it survives, and the box keeps working.
    result = await sbx.exec("f() { f | f & }; f; sleep 100", 4)
    assert not result.ok
    stderr = result.stderr.lower()
    assert result.timed_out or b"fork" in stderr or b"resource temporarily unavailable" in stderr
    assert stray_processes(await sh(sbx, "ps -eo pid=,args=")) == []
    assert await sh(sbx, "echo alive") == "alive\n"


async def test_a_detached_fork_bomb_dies_when_its_command_returns(sbx: PodmanSandbox) -> None:
    result = await sbx.exec("setsid sh -c 'f() { f | f & }; f' >/dev/null 2>&1 & echo detached", 30)
    assert result.ok and result.stdout == b"detached\n"
    assert stray_processes(await sh(sbx, "ps -eo pid=,args=")) == []
    assert await sh(sbx, "echo alive") == "alive\n"


# One process spinning on a core that ends by itself, so a test that dies before killing it leaves nothing.
SPINNER = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end:\n    pass"


async def test_commands_after_a_fork_bomb_run_on_a_busy_machine(sbx: PodmanSandbox) -> None:
    # Killed bomb processes hold their pids until PID 1 reaps them; with the CPU taken by others that is slow,
    # and the next command's own first fork used to fail against the pids limit.
    hogs = [subprocess.Popen([sys.executable, "-c", SPINNER]) for _ in range(3)]
    try:
        for _ in range(3):
            assert (await sbx.exec("setsid sh -c 'f() { f | f & }; f' >/dev/null 2>&1 & echo detached", 30)).ok
            assert stray_processes(await sh(sbx, "ps -eo pid=,args=")) == []
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


async def test_a_command_is_not_swept_while_another_runs(sbx: PodmanSandbox) -> None:
    slow = asyncio.ensure_future(sbx.exec("sleep 3; echo slow-done", 60))
    await asyncio.sleep(0.5)
    assert await sh(sbx, "echo quick") == "quick\n"
    result = await slow
    assert result.ok and result.stdout == b"slow-done\n"


async def test_commands_started_together_after_leftovers_all_run_and_find_none(sbx: PodmanSandbox) -> None:
    assert (await sbx.exec("sleep 300 >/dev/null 2>&1 & echo left", 30)).ok
    # The first one in sweeps in its own exec; the others must wait for that, or it would kill them.
    results = await asyncio.gather(*(sbx.exec(f"sleep 1; echo {i}", 30) for i in range(4)))
    assert [(r.exit_code, r.stdout) for r in results] == [(0, b"%d\n" % i) for i in range(4)]
    assert "sleep 300" not in await sh(sbx, "ps -eo args")


async def test_leftovers_of_the_last_command_die_with_no_next_command(sbx: PodmanSandbox) -> None:
    pid = (await sh(sbx, "nohup sleep 300 >/dev/null 2>&1 & echo $!")).strip()
    # Watched from outside with plain `podman exec`, so no command of ours sweeps before it looks.
    for _ in range(120):
        if not await alive_outside(sbx.name, pid):
            break
        await asyncio.sleep(0.25)
    assert not await alive_outside(sbx.name, pid)


async def alive_outside(name: str, pid: str) -> bool:
    proc = await asyncio.create_subprocess_exec("podman", "exec", name, "kill", "-0", pid,
                                                stderr=asyncio.subprocess.DEVNULL)
    return await proc.wait() == 0


async def test_memory_hog_is_killed_by_the_memory_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A sandbox of its own, started from tmp_path: conmon marks an OOM kill with a file `oom` in the directory the
    # container was started from, which must never be the service's (or a developer's) current directory.
    monkeypatch.chdir(tmp_path)
    async with PodmanSandbox(CONFIG) as box:
        result = await box.exec("python3 -c \"b = b'x' * (2 * 1024 ** 3)\"", 60)
        assert result.exit_code == 137 and not result.timed_out
        assert await sh(box, "echo alive") == "alive\n"
    assert list(tmp_path.iterdir()) == []


def random_chunks(total: int, digest: hashlib._Hash) -> Iterator[bytes]:
    block = os.urandom(MiB)
    for i in range(total // MiB):
        chunk = block[i % 256 :] + block[: i % 256]  # vary content without paying for 100 MB urandom
        digest.update(chunk)
        yield chunk


async def test_100_mb_stream_in_and_out_keeps_sha256(sbx: PodmanSandbox) -> None:
    sent = hashlib.sha256()
    await sbx.write_file("/tmp/data/blob.bin", random_chunks(100 * MiB, sent))
    inside = (await sh(sbx, "sha256sum blob.bin")).split()[0]
    assert inside == sent.hexdigest()
    back = hashlib.sha256()
    sizes = set()
    async for chunk in sbx.read_file_iter("/tmp/data/blob.bin"):
        back.update(chunk)
        sizes.add(len(chunk))
    assert back.hexdigest() == sent.hexdigest()
    assert max(sizes) <= budgets.STREAM_CHUNK_BYTES
    await sh(sbx, "rm blob.bin")


async def test_stream_exec_feeds_stdin_from_an_async_iterator(sbx: PodmanSandbox) -> None:
    async def parts() -> AsyncIterator[bytes]:
        for i in range(100):
            yield b"%d\n" % i

    result = await sbx.stream_exec("wc -l", parts(), 30)
    assert result.exit_code == 0 and result.stdout.strip() == b"100"


async def test_reading_a_missing_file_is_a_sandbox_error(sbx: PodmanSandbox) -> None:
    with pytest.raises(SandboxError, match="No such file"):
        async for _ in sbx.read_file_iter("/tmp/data/missing"):
            pass


async def test_archive_restores_into_a_fresh_sandbox_without_host_extraction(
    sbx: PodmanSandbox, tmp_path: os.PathLike[str]
) -> None:
    marker = f"marker-{os.getpid()}-{time.time_ns()}"
    await sh(sbx, f"mkdir -p _out sub && echo spilled > _out/r1.txt && echo x > {marker} "
                  "&& head -c 200000 /dev/urandom > sub/bin && ln -s sub/bin link")  # fmt: skip
    listing = "find . -path ./.cache -prune -o -print | sort; find . -type f -exec sha256sum {} + | sort"
    before = await sh(sbx, listing)
    archive = bytearray()
    async for chunk in sbx.archive():
        archive += chunk
    assert archive[:2] == b"\x1f\x8b"  # opaque gzip bytes, nothing unpacked on this side
    async with PodmanSandbox(CONFIG) as fresh:
        await fresh.restore([bytes(archive[i : i + 65536]) for i in range(0, len(archive), 65536)])
        assert await sh(fresh, listing) == before
        assert (await sh(fresh, "readlink link")).strip() == "sub/bin"
    assert not any(marker in name for _, dirs, files in os.walk(tmp_path) for name in dirs + files)
    assert not os.path.exists(marker)


async def test_close_is_idempotent_and_removes_the_container() -> None:
    box = PodmanSandbox(CONFIG)
    assert box.state is SandboxState.UNOPENED
    await box.start()
    assert box.state is SandboxState.OPEN and await container_exists(box.name)
    await box.close()
    await box.close()
    assert box.state is SandboxState.CLOSED and not await container_exists(box.name)
    with pytest.raises(SandboxError, match="closed"):
        await box.exec("true", 5)


async def test_cancelled_exec_then_close_leaves_nothing_behind() -> None:
    box = PodmanSandbox(CONFIG)
    task = asyncio.ensure_future(_use_and_hang(box))
    await asyncio.sleep(1.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert box.state is SandboxState.CLOSED and not await container_exists(box.name)


async def _use_and_hang(box: PodmanSandbox) -> None:
    async with box:
        await box.exec("sleep 60", 120)


@pytest.mark.parametrize("after_s", [0.05, 0.06, 0.07, 0.08, 0.09, 0.10, 0.11, 0.12, 0.13])
async def test_cancelled_start_leaves_no_container_and_no_process(after_s: float) -> None:
    # Cancelled at points through `podman run` (~0.13 s here): killed half-way it left conmon and `runc init`
    # running, named after the box, with no container record. A start that finished first is closed instead.
    box = PodmanSandbox(CONFIG)
    task = asyncio.ensure_future(box.start())
    await asyncio.sleep(after_s)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await box.close()
    assert box.state is SandboxState.CLOSED
    await asyncio.sleep(0.5)
    assert not await container_exists(box.name)
    # -ww: no width limit (ps otherwise cuts lines at $COLUMNS, and conmon's name argument is far along)
    host_processes = subprocess.run(["ps", "-ww", "-eo", "args="], capture_output=True, text=True, check=True).stdout
    assert box.name not in host_processes


async def test_unusable_podman_is_a_one_line_startup_error() -> None:
    with pytest.raises(ConfigError, match="not found") as missing:
        await SandboxFactory(SandboxConfig(podman_binary="/nonexistent/podman")).start()
    with pytest.raises(ConfigError, match="is not present") as no_image:
        await SandboxFactory(SandboxConfig(image="localhost/no-such-image:none")).start()
    assert "\n" not in str(missing.value) + str(no_image.value)
