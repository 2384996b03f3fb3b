"""Direct Kubernetes pod backend: one restricted-v2 pod per sandbox; its commands go over one exec websocket
running the pod's command server (opened at the first command), not an exec each."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import SandboxError
from hummingbird_agent.sandbox._core import SandboxBase
from hummingbird_agent.sandbox._kube import KubeApi
from hummingbird_agent.sandbox._link_relay import SERVE_ARGV, RelayCommand, RelayLink
from hummingbird_agent.sandbox.base import WORKDIR

log = logging.getLogger(__name__)

APP_LABELS = {"app.kubernetes.io/name": "hummingbird-sandbox"}
ROLE_LABEL = "hummingbird/role"
SESSION_LABEL = "hummingbird/session"
# Kubernetes cannot limit pids per pod from the spec (that is a kubelet setting); the other limits are here.
CONTAINER_NAME = "sandbox"


def pod_spec(config: SandboxConfig, *, pool: bool = False) -> dict[str, Any]:
    """Pod spec passing OpenShift restricted-v2; shared by direct pods and the pool Deployment template."""
    pod_security: dict[str, Any] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    if config.run_as_user is not None:
        uid = config.run_as_user
        pod_security |= {"runAsUser": uid, "runAsGroup": uid, "fsGroup": uid}
    memory, cpus = str(config.memory_bytes), f"{int(config.cpus * 1000)}m"
    spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "restartPolicy": "Always" if pool else "Never",
        "terminationGracePeriodSeconds": 1,
        "securityContext": pod_security,
        "containers": [
            {
                "name": CONTAINER_NAME,
                "image": config.image,
                "command": ["/usr/local/bin/sandbox-init"],
                "workingDir": WORKDIR,
                "env": [{"name": "HOME", "value": WORKDIR}, {"name": "TMPDIR", "value": WORKDIR}],
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "privileged": False,
                    "readOnlyRootFilesystem": True,
                    "runAsNonRoot": True,
                },
                "resources": {
                    "requests": {"cpu": "100m", "memory": memory},
                    "limits": {"cpu": cpus, "memory": memory, "ephemeral-storage": str(config.workdir_bytes)},
                },
                "volumeMounts": [{"name": "workdir", "mountPath": WORKDIR}],
            }
        ],
        "volumes": [{"name": "workdir", "emptyDir": {"sizeLimit": str(config.workdir_bytes)}}],
    }
    if not pool:
        # A pool pod gets its deadline when claimed (it is mutable); a standby must not expire.
        spec["activeDeadlineSeconds"] = int(budgets.SANDBOX_MAX_LIFETIME_S)
    return spec


def pod_manifest(config: SandboxConfig, name: str, session_id: str) -> dict[str, Any]:
    labels = APP_LABELS | {ROLE_LABEL: "direct", SESSION_LABEL: session_id or "none"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": config.namespace, "labels": labels},
        "spec": pod_spec(config),
    }


def pod_is_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


class KubePodSandbox(SandboxBase):
    """A sandbox pod created for one session and deleted after it."""

    def __init__(self, api: KubeApi, config: SandboxConfig, session_id: str = "") -> None:
        super().__init__(f"hb-sandbox-{uuid.uuid4().hex[:12]}")
        self._api = api
        self._config = config
        self._session_id = session_id
        self.pod: str | None = None
        """Name of the pod this sandbox owns and deletes on close."""
        self._link: RelayLink | None = None
        self._connecting = asyncio.Lock()

    async def _create(self) -> None:
        self.pod = self.name  # set first: a cancelled create still gets deleted by name
        await self._api.create_pod(pod_manifest(self._config, self.name, self._session_id))
        await self._wait_ready(self.name)

    async def _wait_ready(self, name: str) -> None:
        while True:
            pod = await self._api.read_pod(name)
            if pod_is_ready(pod):
                return
            if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
                raise SandboxError(f"sandbox pod {name} ended before it was ready")
            await asyncio.sleep(budgets.SANDBOX_POOL_POLL_S)

    async def _open(self, argv: list[str], stdin: bool, stream_out: bool = False, sweep: bool = False
                    ) -> RelayCommand:
        link = await self._connected()
        return await link.spawn(argv, stdin, budgets.SANDBOX_SWEEP_REAP_S if sweep else 0.0)

    async def _sweep(self) -> None:
        await (await self._connected()).sweep()

    async def _connected(self) -> RelayLink:
        """The pod's channel, opened by the first command (a box no command uses costs no exec)."""
        async with self._connecting:
            if self._link is None:
                assert self.pod is not None
                link = RelayLink(self.name, await self._api.open_exec(self.pod, SERVE_ARGV, stdin=True))
                await link.open()
                self._link = link
        self._link.check()
        return self._link

    async def _destroy(self) -> None:
        if self._link is not None:
            await self._link.close()
        if self.pod is not None:
            await self._api.delete_pod(self.pod)
            log.info("sandbox pod deleted pod=%s", self.pod)
