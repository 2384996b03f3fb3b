"""Kubernetes pod and pool backends against an emulated API server (no controllers: the test plays kubelet)."""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import kmock
import pytest
import yaml

from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.sandbox import KubePodSandbox, KubePoolSandbox, SandboxFactory, SandboxState, pod_spec
from kubernetes import client as k8s
from tests.sandbox.kube_server import StrictEmulator

NS = "sbx"
REPO = Path(__file__).resolve().parents[2]


class Cluster:
    def __init__(self, emulator: StrictEmulator, url: str, kubeconfig: Path) -> None:
        self.emulator, self.url, self.kubeconfig = emulator, url, kubeconfig
        cfg = k8s.Configuration()
        cfg.host = url
        self.core = k8s.CoreV1Api(k8s.ApiClient(cfg))

    def config(self, backend: str = "k8s", **kw: Any) -> SandboxConfig:
        return SandboxConfig(backend=backend, kubeconfig=str(self.kubeconfig), namespace=NS, **kw)

    def pods(self) -> dict[str, dict[str, Any]]:
        return self.emulator.pods(NS)

    async def add_standby(self, name: str, ready: bool = True) -> None:
        labels = {"app.kubernetes.io/name": "hummingbird-sandbox", "hummingbird/role": "standby"}
        body = {"metadata": {"name": name, "labels": labels}, "spec": pod_spec(self.config(), pool=True)}
        await asyncio.to_thread(self.core.create_namespaced_pod, NS, body)
        if ready:
            await self.set_ready(name)

    async def set_ready(self, name: str) -> None:
        status = {"phase": "Running", "startTime": "2026-01-01T00:00:00+00:00",
                  "conditions": [{"type": "Ready", "status": "True"}]}  # fmt: skip
        await asyncio.to_thread(self.core.patch_namespaced_pod_status, name, NS, {"status": status})

    async def kubelet(self) -> None:
        """Marks every new direct pod Ready, as a node would after pulling the image."""
        while True:
            for name, pod in self.pods().items():
                if pod.get("metadata", {}).get("labels", {}).get("hummingbird/role") == "direct" and not pod.get(
                    "status"
                ):
                    await self.set_ready(name)
            await asyncio.sleep(0.05)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with StrictEmulator() as emulator, kmock.Server(emulator) as server:
        with warnings.catch_warnings():  # kmock reads its bundled resource list with a deprecated API
            warnings.simplefilter("ignore", DeprecationWarning)
            emulator.resources.load_bundled()
        url = f"http://127.0.0.1:{server.port}"
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "emu", "cluster": {"server": url}}],
                    "users": [{"name": "u", "user": {"token": "t"}}],
                    "contexts": [{"name": "c", "context": {"cluster": "emu", "user": "u"}}],
                    "current-context": "c",
                }
            )
        )
        yield Cluster(emulator, url, kubeconfig)


@contextlib.asynccontextmanager
async def factory_for(config: SandboxConfig) -> AsyncIterator[SandboxFactory]:
    factory = SandboxFactory(config)
    await factory.start()
    try:
        yield factory
    finally:
        await factory.close()


@contextlib.asynccontextmanager
async def kubelet(cluster: Cluster) -> AsyncIterator[None]:
    task = asyncio.ensure_future(cluster.kubelet())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_direct_pod_carries_every_restricted_v2_field_and_is_deleted(cluster: Cluster) -> None:
    async with factory_for(cluster.config()) as factory, kubelet(cluster):
        box = factory.new("sess-1")
        assert isinstance(box, KubePodSandbox)
        async with box:
            pod = cluster.pods()[box.name]
        assert box.state is SandboxState.CLOSED
    spec = pod["spec"]
    assert spec["automountServiceAccountToken"] is False and spec["enableServiceLinks"] is False
    assert spec["restartPolicy"] == "Never" and spec["activeDeadlineSeconds"] > 0
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == 65532
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = spec["containers"]
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["readOnlyRootFilesystem"] is True and sc["runAsNonRoot"] is True
    assert set(container["resources"]["requests"]) >= {"cpu", "memory"}
    assert set(container["resources"]["limits"]) >= {"cpu", "memory", "ephemeral-storage"}
    assert container["volumeMounts"] == [{"name": "workdir", "mountPath": "/tmp/data"}]
    assert spec["volumes"] == [{"name": "workdir", "emptyDir": {"sizeLimit": str(512 * 1024 * 1024)}}]
    assert pod["metadata"]["labels"]["hummingbird/session"] == "sess-1"
    assert cluster.pods() == {}


def test_openshift_may_assign_the_uid() -> None:
    spec = pod_spec(SandboxConfig(run_as_user=None))
    assert "runAsUser" not in spec["securityContext"] and spec["securityContext"]["runAsNonRoot"] is True


async def test_concurrent_claims_never_take_the_same_standby_pod(cluster: Cluster) -> None:
    for i in range(4):
        await cluster.add_standby(f"standby-{i}")
    config = cluster.config("k8s-pool", pool_claim_wait_s=0.3)
    # Separate factories: separate API clients, as separate worker replicas would have.
    async with contextlib.AsyncExitStack() as stack:
        factories = [await stack.enter_async_context(factory_for(config)) for _ in range(7)]
        await stack.enter_async_context(kubelet(cluster))
        boxes = [f.new(f"s{i}") for i, f in enumerate(factories)]
        assert all(isinstance(b, KubePoolSandbox) for b in boxes)
        await asyncio.gather(*(b.start() for b in boxes))
        owned = [b.pod for b in boxes if isinstance(b, KubePoolSandbox)]
        claimed = sorted(b.pod or "" for b in boxes if isinstance(b, KubePoolSandbox) and b.claimed)
        assert len(set(owned)) == len(owned) == 7
        assert claimed == [f"standby-{i}" for i in range(4)]
        for box in boxes:
            labels = cluster.pods()[box.pod]["metadata"]["labels"]  # type: ignore[attr-defined]
            assert labels["hummingbird/session"] == box._session_id  # type: ignore[attr-defined]
            assert labels["hummingbird/role"] in ("claimed", "direct")
        await asyncio.gather(*(b.close() for b in boxes))
    assert cluster.pods() == {}


async def test_two_claimers_one_pod_exactly_one_wins(cluster: Cluster) -> None:
    for round_ in range(3):
        await cluster.add_standby(f"only-{round_}")
        config = cluster.config("k8s-pool", pool_claim_wait_s=0.0)
        async with factory_for(config) as fa, factory_for(config) as fb, kubelet(cluster):
            a, b = fa.new("a"), fb.new("b")
            await asyncio.gather(a.start(), b.start())
            assert sorted([a.claimed, b.claimed]) == [False, True]  # type: ignore[attr-defined]
            await asyncio.gather(a.close(), b.close())
        assert cluster.pods() == {}


async def test_falls_back_to_direct_creation_when_no_standby_is_ready(cluster: Cluster) -> None:
    await cluster.add_standby("warming-up", ready=False)
    async with factory_for(cluster.config("k8s-pool", pool_claim_wait_s=0.4)) as factory, kubelet(cluster):
        box = factory.new("s")
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with box:
            assert isinstance(box, KubePoolSandbox) and not box.claimed
            assert loop.time() - started >= 0.4
            assert cluster.pods()[box.name]["metadata"]["labels"]["hummingbird/role"] == "direct"
    assert set(cluster.pods()) == {"warming-up"}
    assert cluster.pods()["warming-up"]["metadata"]["labels"]["hummingbird/role"] == "standby"


async def test_cancelled_start_deletes_the_pod_it_created(cluster: Cluster) -> None:
    async with factory_for(cluster.config()) as factory:  # no kubelet: the pod never becomes ready
        box = factory.new("s")
        task = asyncio.ensure_future(box.start())
        for _ in range(100):
            if cluster.pods():
                break
            await asyncio.sleep(0.02)
        assert set(cluster.pods()) == {box.name}
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert cluster.pods() == {}


async def test_unreachable_api_or_missing_kubeconfig_is_a_startup_error(cluster: Cluster, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="kubeconfig") as missing:
        await SandboxFactory(SandboxConfig(backend="k8s", kubeconfig=str(tmp_path / "nope"))).start()
    assert "\n" not in str(missing.value)
    text = cluster.kubeconfig.read_text().replace(cluster.url, "http://127.0.0.1:9")
    (tmp_path / "dead").write_text(text)
    with pytest.raises(ConfigError, match="namespace 'sbx'"):
        await SandboxFactory(SandboxConfig(backend="k8s-pool", kubeconfig=str(tmp_path / "dead"), namespace=NS)).start()


def test_no_kubeconfig_outside_a_cluster_is_a_startup_error() -> None:
    with pytest.raises(ConfigError, match="in-cluster service account"):
        asyncio.run(SandboxFactory(SandboxConfig(backend="k8s")).start())


def load_manifests(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((REPO / "kubernetes" / name).read_text()) if d]


def test_pool_deployment_template_is_the_direct_pod_spec() -> None:
    (deployment,) = load_manifests("sandbox-pool.yaml")
    template = deployment["spec"]["template"]
    image = template["spec"]["containers"][0]["image"]
    assert template["spec"] == pod_spec(SandboxConfig(image=image), pool=True)
    assert template["metadata"]["labels"]["hummingbird/role"] == "standby"
    assert deployment["spec"]["selector"]["matchLabels"] == template["metadata"]["labels"]
    assert deployment["spec"]["replicas"] == 3 and deployment["spec"]["revisionHistoryLimit"] == 2
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}


def test_rbac_and_network_policy() -> None:
    docs = {d["kind"]: d for d in load_manifests("rbac.yaml")}
    rules = {tuple(r["resources"]): set(r["verbs"]) for r in docs["Role"]["rules"]}
    assert rules == {("pods",): {"create", "get", "list", "delete", "patch"}, ("pods/exec",): {"create", "get"}}
    assert docs["RoleBinding"]["subjects"][0]["name"] == docs["ServiceAccount"]["metadata"]["name"]
    (policy,) = load_manifests("networkpolicy.yaml")
    assert policy["spec"]["podSelector"] == {} and policy["spec"]["egress"] == []
    assert "Egress" in policy["spec"]["policyTypes"]
