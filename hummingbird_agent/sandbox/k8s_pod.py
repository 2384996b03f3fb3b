"""Direct Kubernetes pod backend: one restricted-v2 pod per sandbox, commands through the exec API."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import SandboxError
from hummingbird_agent.sandbox._channel import SWEEP_SCRIPT, run_channel
from hummingbird_agent.sandbox._core import SandboxBase
from hummingbird_agent.sandbox._kube import ExecSocket, KubeApi
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

    async def _open(self, argv: list[str], stdin: bool, stream_out: bool = False) -> ExecSocket:
        assert self.pod is not None
        return await self._api.open_exec(self.pod, argv, stdin)

    async def _sweep(self) -> None:
        channel = await self._open(["sh", "-c", SWEEP_SCRIPT], stdin=False)
        await run_channel(channel, None)

    async def _destroy(self) -> None:
        if self.pod is not None:
            await self._api.delete_pod(self.pod)
            log.info("sandbox pod deleted pod=%s", self.pod)
