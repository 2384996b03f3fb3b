"""Chooses the sandbox backend from config and checks at startup that it is usable."""

from __future__ import annotations

from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.sandbox._kube import KubeApi
from hummingbird_agent.sandbox.base import Sandbox
from hummingbird_agent.sandbox.k8s_pod import KubePodSandbox
from hummingbird_agent.sandbox.k8s_pool import KubePoolSandbox
from hummingbird_agent.sandbox.podman import PodmanSandbox, check_podman
from hummingbird_agent.sandbox.podman_pool import PodmanPool, PooledPodmanSandbox


class SandboxFactory:
    """Built once at worker startup: `start()` raises ConfigError if the backend cannot work, `new()` per session.
    With `warm_pool_size`, Podman sandboxes come from a warm pool of that many started containers."""

    def __init__(self, config: SandboxConfig, warm_pool_size: int = 0) -> None:
        self._config = config
        self._kube: KubeApi | None = None
        self._warm_pool_size = warm_pool_size
        self.pool: PodmanPool | None = None

    async def start(self) -> None:
        if self._config.backend == "podman":
            await check_podman(self._config)
            if self._warm_pool_size > 0:
                self.pool = PodmanPool(self._config, self._warm_pool_size)
        else:
            self._kube = await KubeApi.connect(self._config)

    def new(self, session_id: str = "") -> Sandbox:
        """An unopened sandbox; the caller starts it (`async with`) and it is closed after the session."""
        if self._config.backend == "podman":
            if self.pool is not None:
                return PooledPodmanSandbox(self.pool, self._config, session_id)
            return PodmanSandbox(self._config, session_id)
        if self._kube is None:
            raise RuntimeError("SandboxFactory.start() was not called")
        if self._config.backend == "k8s-pool":
            return KubePoolSandbox(self._kube, self._config, session_id)
        return KubePodSandbox(self._kube, self._config, session_id)

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()
        if self._kube is not None:
            await self._kube.close()
            self._kube = None
