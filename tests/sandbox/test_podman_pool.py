"""The warm pool of Podman sandboxes, run for real: one container per run, the same isolation, nothing left."""

from __future__ import annotations

import asyncio
import time

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.sandbox import Sandbox, SandboxFactory
from hummingbird_agent.sandbox.podman_pool import PodmanPool, PooledPodmanSandbox

pytestmark = [pytest.mark.podman, pytest.mark.asyncio]

MiB = 1024 * 1024
CONFIG = SandboxConfig(memory_bytes=256 * MiB, workdir_bytes=64 * MiB, pids_limit=64)


async def podman_names() -> set[str]:
    """Names of every container on the host, running or not (`podman ps -a`)."""
    proc = await asyncio.create_subprocess_exec("podman", "ps", "-a", "--format", "{{.Names}}",
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    return set(out.decode().split())


async def wait_ready(pool: PodmanPool, count: int) -> None:
    deadline = time.monotonic() + 60
    while pool.ready < count:
        assert time.monotonic() < deadline, f"pool has {pool.ready} of {count} ready"
        await asyncio.sleep(0.1)


async def sh(box: Sandbox, command: str) -> str:
    result = await box.exec(command, 30)
    assert result.exit_code == 0, result
    return result.stdout.decode()


async def test_runs_get_their_own_ready_containers_and_nothing_is_left_after_shutdown() -> None:
    before = await podman_names()
    factory = SandboxFactory(CONFIG, warm_pool_size=2)
    await factory.start()
    assert factory.pool is not None
    try:
        first = factory.new("run-one")
        await first.start()  # the first start asks the pool, which starts filling
        await wait_ready(factory.pool, 2)
        boxes = [factory.new("run-two"), factory.new("run-three"), factory.new("run-four")]
        await asyncio.gather(*(box.start() for box in boxes))
        everyone = [first, *boxes]
        names = {box.name for box in everyone if isinstance(box, PooledPodmanSandbox)}
        assert len(names) == 4  # no two runs share a container
        assert [box.warm for box in boxes if isinstance(box, PooledPodmanSandbox)].count(True) == 2
        await sh(boxes[0], "echo mine > /tmp/data/owner")
        assert "No such file" in (await boxes[1].exec("cat /tmp/data/owner", 30)).stderr.decode()
        started = names | factory.pool.containers  # this pool's: another process's pool may run beside it
        assert names <= await podman_names() - before
        for box in everyone:
            await box.close()
    finally:
        await factory.close()
    assert started & await podman_names() == set()  # taken, ready and refilling ones all removed


async def test_a_pooled_sandbox_has_no_network_no_namespaces_and_the_limits() -> None:
    factory = SandboxFactory(CONFIG, warm_pool_size=1)
    await factory.start()
    assert factory.pool is not None
    try:
        factory.pool.take()  # start filling, as a worker's first run does
        await wait_ready(factory.pool, 1)
        async with factory.new("isolated") as box:
            assert isinstance(box, PooledPodmanSandbox) and box.warm
            assert (await sh(box, "ls /sys/class/net")).split() == ["lo"]
            assert (await sh(box, "tail -n +2 /proc/net/route")).strip() == ""
            assert (await sh(box, "id -u")).strip() == "65532"
            assert (await sh(box, "cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max")
                    ).strip() == "64"
            assert (await box.exec("unshare -U true", 30)).exit_code != 0
            assert (await box.exec("touch /etc/x", 30)).exit_code != 0
            inspect = await asyncio.create_subprocess_exec(
                "podman", "inspect", "--format", "{{.Config.Timeout}}", box.name, stdout=asyncio.subprocess.PIPE)
            timeout_s, _ = await inspect.communicate()
            # The lifetime backstop covers the time it may have waited in the pool.
            assert int(timeout_s) == budgets.SANDBOX_MAX_LIFETIME_S + budgets.SANDBOX_WARM_POOL_MAX_IDLE_S
    finally:
        await factory.close()


async def test_a_ready_container_unused_past_its_idle_time_is_replaced() -> None:
    pool = PodmanPool(CONFIG, size=1, max_idle_s=1.0)
    try:
        pool.take()
        await wait_ready(pool, 1)
        stale = set(pool.containers) & await podman_names()
        seen = set(stale)
        deadline = time.monotonic() + 60
        while True:
            await asyncio.sleep(0.5)
            current = pool.containers & await podman_names()
            seen |= current
            if pool.ready == 1 and not (stale & current) and current:
                break
            assert time.monotonic() < deadline, "the idle container was not replaced"
        warm = pool.take()
        assert warm is not None and warm.name not in stale
        pool.remove_later(warm.name, warm.scratch)
    finally:
        await pool.close()
    assert seen & await podman_names() == set()
