"""Pod-pool backend: claim a Ready standby pod of the sandbox-pool Deployment, else create one directly.

Claiming relabels the pod (role standby -> claimed), so the Deployment's ReplicaSet lets it go and starts a
replacement. The patch carries the pod's resourceVersion: of two concurrent claimers the API server lets
exactly one win (409 for the other). A claimed pod is deleted after use, never returned to the pool.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from datetime import UTC, datetime
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.sandbox._kube import CONFLICT, NOT_FOUND, KubeError
from hummingbird_agent.sandbox.k8s_pod import APP_LABELS, ROLE_LABEL, SESSION_LABEL, KubePodSandbox, pod_is_ready

log = logging.getLogger(__name__)

STANDBY_SELECTOR = APP_LABELS | {ROLE_LABEL: "standby"}


def is_standby(pod: dict[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in STANDBY_SELECTOR.items()) and pod_is_ready(pod)


def claim_patch(pod: dict[str, Any], session_id: str, now: datetime) -> dict[str, Any]:
    """The relabel patch, conditional on the listed resourceVersion, with the sandbox's lifetime deadline."""
    meta = pod.get("metadata") or {}
    started = (pod.get("status") or {}).get("startTime")
    age_s = (now - datetime.fromisoformat(started)).total_seconds() if started else 0.0
    patch: dict[str, Any] = {
        "metadata": {"labels": {ROLE_LABEL: "claimed", SESSION_LABEL: session_id or "none"}},
        # activeDeadlineSeconds counts from pod start, so add the time it spent on standby.
        "spec": {"activeDeadlineSeconds": int(max(age_s, 0) + budgets.SANDBOX_MAX_LIFETIME_S)},
    }
    if meta.get("resourceVersion"):
        patch["metadata"]["resourceVersion"] = meta["resourceVersion"]
    return patch


class KubePoolSandbox(KubePodSandbox):
    """A sandbox on a claimed standby pod; falls back to a directly created pod."""

    claimed = False
    """True when the pod came from the pool, False after a fallback to direct creation."""

    async def _create(self) -> None:
        deadline = time.monotonic() + self._config.pool_claim_wait_s
        while True:
            if await self._try_claim():
                self.claimed = True
                log.info("sandbox claimed standby pod=%s", self.pod)
                return
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(budgets.SANDBOX_POOL_POLL_S)
        log.warning("no ready standby pod within %.1f s; creating sandbox pod directly", self._config.pool_claim_wait_s)
        await super()._create()

    async def _try_claim(self) -> bool:
        pods = [p for p in await self._api.list_pods(STANDBY_SELECTOR) if is_standby(p)]
        random.shuffle(pods)  # replicas racing for the pool rarely pick the same pod first
        for pod in pods:
            name = pod["metadata"]["name"]
            patch = claim_patch(pod, self._session_id, datetime.now(UTC))
            if await self._patch_owned(name, patch):
                self.pod = name
                return True
        return False

    async def _patch_owned(self, name: str, patch: dict[str, Any]) -> bool:
        """Apply the claim; True if we own the pod. Ownership is recorded even if we are cancelled meanwhile."""
        task = asyncio.ensure_future(self._api.patch_pod(name, patch))
        try:
            await asyncio.shield(task)
        except KubeError as exc:
            if exc.status in (CONFLICT, NOT_FOUND):
                return False
            raise
        except asyncio.CancelledError:
            if await _succeeded(task):
                self.pod = name  # so close() deletes it
            raise
        return True


async def _succeeded(task: asyncio.Future[None]) -> bool:
    try:
        await task
    except KubeError:
        return False
    return True
