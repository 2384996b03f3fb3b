"""Chooses the sandbox backend from config and checks at startup that it is usable."""

from __future__ import annotations

from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.sandbox._kube import KubeApi
from hummingbird_agent.sandbox.base import Sandbox
from hummingbird_agent.sandbox.k8s_pod import KubePodSandbox
from hummingbird_agent.sandbox.k8s_pool import KubePoolSandbox
from hummingbird_agent.sandbox.podman import PodmanSandbox, check_podman


class SandboxFactory:
    """Built once at worker startup: `start()` raises ConfigError if the backend cannot work, `new()` per session."""

    def __init__(self, config: SandboxConfig) -> None:
        self._config = config
        self._kube: KubeApi | None = None

    async def start(self) -> None:
        if self._config.backend == "podman":
            await check_podman(self._config)
        else:
            self._kube = await KubeApi.connect(self._config)

    def new(self, session_id: str = "") -> Sandbox:
        """An unopened sandbox; the caller starts it (`async with`) and it is closed after the session."""
        if self._config.backend == "podman":
            return PodmanSandbox(self._config, session_id)
        if self._kube is None:
            raise RuntimeError("SandboxFactory.start() was not called")
        if self._config.backend == "k8s-pool":
            return KubePoolSandbox(self._kube, self._config, session_id)
        return KubePodSandbox(self._kube, self._config, session_id)

    async def close(self) -> None:
        if self._kube is not None:
            await self._kube.close()
            self._kube = None
