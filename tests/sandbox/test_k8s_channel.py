"""The Kubernetes backends' channel against the emulated API server with an exec endpoint: one exec websocket a
box, running the pod's command server, which relays every command's streams. A Podman container plays each pod
(the test is the kubelet), so the commands really run; what a real API server or kubelet adds is not tested."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import SandboxError
from hummingbird_agent.sandbox import KubePodSandbox, SandboxFactory, _wire, duplex_exec
from hummingbird_agent.sandbox.podman import check_podman, run_argv
from tests.sandbox.test_channel import assert_no_command_forges_another
from tests.sandbox.test_k8s import Cluster
from tests.sandbox.test_k8s import cluster as cluster_fixture

cluster = cluster_fixture  # the emulated API server of test_k8s.py, as this module's fixture

pytestmark = [pytest.mark.podman, pytest.mark.asyncio]

MiB = 1024 * 1024
NO_HANG_S = 60


class PodmanKubelet:
    """Runs each direct pod as a Podman sandbox container (the same isolation) and marks it Ready."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.containers: dict[str, str] = {}
        cluster.emulator.exec_into = self.containers.get

    async def run(self) -> None:
        while True:
            for name, pod in self.cluster.pods().items():
                if pod["metadata"]["labels"].get("hummingbird/role") == "direct" and name not in self.containers:
                    await self.start(name)
            await asyncio.sleep(0.05)

    async def start(self, pod: str) -> None:
        container = f"hb-k8s-{pod}"
        # The pod's container has no channel of its own: its init only reaps, as in a pod.
        argv = [a for a in run_argv(SandboxConfig(pids_limit=64), container) if a != "--preserve-fds=1"]
        assert await podman(*argv[1:]) == 0
        self.containers[pod] = container
        await self.cluster.set_ready(pod)

    async def remove_all(self) -> None:
        for container in self.containers.values():
            await podman("rm", "--force", "--time=0", container)


async def podman(*args: str) -> int:
    proc = await asyncio.create_subprocess_exec("podman", *args, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.DEVNULL)
    return await proc.wait()


@contextlib.asynccontextmanager
async def kube_box(cluster: Cluster) -> AsyncIterator[tuple[KubePodSandbox, PodmanKubelet]]:
    await check_podman(SandboxConfig())
    kubelet = PodmanKubelet(cluster)
    task = asyncio.ensure_future(kubelet.run())
    factory = SandboxFactory(cluster.config())
    await factory.start()
    try:
        box = factory.new("chan")
        assert isinstance(box, KubePodSandbox)
        async with box:
            yield box, kubelet
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await factory.close()
        await kubelet.remove_all()


async def sh(box: Any, command: str, timeout_s: float = 30) -> str:
    result = await box.exec(command, timeout_s)
    assert result.exit_code == 0, result
    return str(result.stdout.decode())


async def test_a_box_s_commands_files_and_archive_share_one_exec(cluster: Cluster, tmp_path: Path) -> None:
    async with kube_box(cluster) as (box, _):
        result = await box.exec("echo out; echo err >&2; exit 7", 30)
        assert (result.exit_code, result.stdout, result.stderr) == (7, b"out\n", b"err\n")
        sent = hashlib.sha256()
        blocks = [os.urandom(MiB) for _ in range(8)]
        for block in blocks:
            sent.update(block)
        await box.write_file("/tmp/data/blob", blocks)
        back = hashlib.sha256()
        async for chunk in box.read_file_iter("/tmp/data/blob"):
            assert len(chunk) <= budgets.STREAM_CHUNK_BYTES
            back.update(chunk)
        assert back.hexdigest() == sent.hexdigest()
        assert (await sh(box, "sha256sum blob")).split()[0] == sent.hexdigest()
        assert (await box.stream_exec("wc -c", [b"x" * 1000] * 3, 30)).stdout.strip() == b"3000"
        archive = b"".join([chunk async for chunk in box.archive()])
        assert archive[:2] == b"\x1f\x8b"
        async with duplex_exec(box, "while read l; do echo got-$l; done", 30) as duplex:
            await duplex.send(b"a\n")
            assert await duplex.readline() == b"got-a"
        assert cluster.emulator.exec_requests == [["/usr/local/bin/sandbox-init", "--serve"]]


async def test_timeouts_caps_and_sweeps_hold_over_the_channel(cluster: Cluster) -> None:
    async with kube_box(cluster) as (box, _):
        timed = await box.exec("sleep 100 & setsid sleep 200 & sleep 300", 1.5)
        assert timed.timed_out
        assert "sleep" not in await sh(box, "ps -eo args")
        flood = await box.exec("cat /dev/zero", 2)
        assert flood.timed_out and len(flood.stdout) == budgets.SANDBOX_STDOUT_CAP_BYTES and flood.stdout_truncated
        left = await box.exec("sleep 100 & setsid sleep 200 & echo started", 30)
        assert left.ok and left.stdout == b"started\n"
        assert "sleep" not in await sh(box, "ps -eo args")
        assert (await sh(box, "echo alive")) == "alive\n"


async def test_the_pod_dying_mid_command_is_one_line(cluster: Cluster) -> None:
    async with kube_box(cluster) as (box, kubelet):
        running = asyncio.ensure_future(box.exec("echo started; sleep 50", 120))
        await asyncio.sleep(0.5)
        assert box.pod is not None
        assert await podman("kill", kubelet.containers[box.pod]) == 0
        async with asyncio.timeout(NO_HANG_S):
            with pytest.raises(SandboxError) as died:
                await running
            with pytest.raises(SandboxError) as after:
                await box.exec("echo again", 30)
    for exc in (died.value, after.value):
        assert "\n" not in str(exc) and box.name in str(exc)


async def test_a_malformed_request_is_refused_in_one_line_and_the_next_box_works(cluster: Cluster) -> None:
    async with kube_box(cluster) as (box, _):
        await sh(box, "true")
        assert box._link is not None
        await box._link._send_frame(_wire.encode(99, 1, b"nonsense"))
        async with asyncio.timeout(NO_HANG_S):
            with pytest.raises(SandboxError) as refused:
                await box.exec("echo never", 30)
        assert "\n" not in str(refused.value)
    async with kube_box(cluster) as (fresh, _):
        assert await sh(fresh, "echo ok") == "ok\n"


async def test_input_a_command_leaves_unread_is_bounded_and_the_box_goes_on(cluster: Cluster) -> None:
    """The relayed stdin of a command that never reads it waits in the box's server only up to its bound: the
    command is killed saying so, the rest of the input is dropped, and the box serves the next command."""
    cap = budgets.SANDBOX_STDIN_PENDING_BYTES
    async with kube_box(cluster) as (box, _):
        async with asyncio.timeout(NO_HANG_S * 2):
            result = await box.stream_exec("sleep 100", [b"x" * MiB] * (cap // MiB + 8), 100)
        assert not result.timed_out and result.exit_code != 0
        assert f"input left unread beyond {cap} bytes".encode() in result.stderr
        assert await sh(box, "echo alive") == "alive\n"
        assert "sleep" not in await sh(box, "ps -eo args")


async def test_no_command_reaches_the_pods_server_to_forge_another_commands_result(cluster: Cluster) -> None:
    """The pod's `sandbox-init --serve` runs as the commands' uid and relays every frame on its stdout: it is not
    dumpable, so a command cannot open /proc/<server>/fd/1 and write another command's exit code."""
    async with kube_box(cluster) as (box, _):
        await assert_no_command_forges_another(box)
