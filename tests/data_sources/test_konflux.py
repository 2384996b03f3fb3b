"""Konflux tools through the registry against fake Kubearchive and live API servers: pagination,
dedup across sources and selectors, status filter counts, broken streams and expired pod logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent.data_sources import konflux
from hummingbird_agent.data_sources.kube import KubeCredentials, load_kubeconfig
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools.registry import ToolRegistry
from tests.data_sources.conftest import sandbox_text
from tests.servers.k8s import KubeServer, tekton_object

pytestmark = [pytest.mark.podman]
async_module = pytest.mark.asyncio(loop_scope="module")

SHA = "3f2a9c0d" * 5
NS = "hummingbird-tenant"
BUILD = {konflux.BUILD_SHA_LABEL: SHA, "appstudio.openshift.io/component": "bash"}
TEST = {konflux.TEST_SHA_LABEL: SHA}
CLUSTER = "https://api.kflux-prd-rh03.nnv1.p1.openshiftapps.com:6443"


def register(registry: ToolRegistry, live: KubeServer, archive: KubeServer | None) -> None:
    creds = KubeCredentials(live.url, live.token)
    konflux.register(registry, CLUSTER, "", archive.url if archive else None, credentials=creds)


def run(name: str, reason: str = "Succeeded", status: str = "True", labels: dict[str, str] | None = None,
        uid: str | None = None) -> dict:
    return tekton_object("pipelineruns", name, namespace=NS, labels=labels or BUILD, reason=reason,
                         status=status, uid=uid)


@async_module
async def jsonl(result, sandbox: PodmanSandbox) -> list[dict]:
    assert result.ok, result
    text = await sandbox_text(sandbox, result.spilled_path) if result.spilled_path else result.content
    return [json.loads(line) for line in text.splitlines() if line]


@async_module
async def test_pipelineruns_across_pages_sources_and_selectors_are_deduplicated(
        registry: ToolRegistry, sandbox: PodmanSandbox, kube_live: KubeServer, kubearchive: KubeServer) -> None:
    archived = [run(f"bash-on-pull-request-{n}", "Failed", "False") for n in range(5)]
    for obj in archived:
        kubearchive.add(obj)
    kube_live.add(json.loads(json.dumps(archived[0])))  # archived and still live: same uid
    kube_live.add(run("rpms-testing-farm-x86-64", labels=BUILD | TEST))  # matches both selectors
    kube_live.add(run("other-commit", labels={konflux.BUILD_SHA_LABEL: "0" * 40}))
    kubearchive.page_size = kube_live.page_size = 2
    register(registry, kube_live, kubearchive)

    result = await registry.execute("konflux_get_pipelineruns", {"namespace": NS, "commit_sha": SHA})

    names = [item["metadata"]["name"] for item in await jsonl(result, sandbox)]
    assert sorted(names) == sorted([o["metadata"]["name"] for o in archived] + ["rpms-testing-farm-x86-64"])
    assert result.metadata["counts"] == {"Failed": 5, "Succeeded": 1}
    assert result.metadata["included"] == 6 and result.metadata["excluded"] == 0
    assert result.metadata["konflux_ui"] == "https://konflux-ui.apps.kflux-prd-rh03.nnv1.p1.openshiftapps.com"
    assert "{namespace}" in result.metadata["konflux_pipelinerun_url_pattern"]
    continued = [r for r in kubearchive.requests_to("pipelineruns") if r.arg("continue")]
    assert len(continued) >= 2, "the archive's 5 runs must take three pages"
    assert all(r.header("Authorization") == "Bearer kube-token" for r in kubearchive.requests)
    assert "kube-token" not in json.dumps(result.to_response())


@async_module
async def test_status_allowlist_filters_but_counts_every_run(
        registry: ToolRegistry, sandbox: PodmanSandbox, kube_live: KubeServer) -> None:
    kube_live.add(run("ok", "Completed", "True"))
    kube_live.add(run("bad", "PipelineRunTimeout", "False"))
    kube_live.add(run("busy", "Running", "Unknown"))
    no_conditions = run("new")
    no_conditions["status"]["conditions"] = []
    kube_live.add(no_conditions)
    register(registry, kube_live, None)

    result = await registry.execute("konflux_get_pipelineruns",
                                    {"namespace": NS, "commit_sha": SHA, "status": ["False"]})

    names = [item["metadata"]["name"] for item in await jsonl(result, sandbox)]
    assert names == ["bad", "new"]
    assert result.metadata["counts"] == {"Completed": 1, "PipelineRunTimeout": 1, "Running": 1, "NoConditions": 1}
    assert (result.metadata["included"], result.metadata["excluded"]) == (2, 2)


@async_module
async def test_truncated_gzip_page_stops_that_source_and_states_the_gap(
        registry: ToolRegistry, sandbox: PodmanSandbox, kube_live: KubeServer, kubearchive: KubeServer) -> None:
    for n in range(40):
        kubearchive.add(run(f"archived-{n}", "Failed", "False"))
    kube_live.add(run("live-only"))
    kubearchive.truncate_next_page_at = 700
    register(registry, kube_live, kubearchive)

    result = await registry.execute("konflux_get_pipelineruns", {"namespace": NS, "commit_sha": SHA})

    names = [item["metadata"]["name"] for item in await jsonl(result, sandbox)]
    assert "live-only" in names and len(names) < 41
    assert any("kubearchive" in gap and "stopped early" in gap for gap in result.metadata["gaps"])


@async_module
@pytest.mark.parametrize("tail", [b', {"metadata": {"uid": "bad"}, "spec": tru}]}', b"]} trailing"])
async def test_malformed_or_trailing_json_keeps_earlier_items_and_states_the_offset(
        registry: ToolRegistry, sandbox: PodmanSandbox, kube_live: KubeServer, tail: bytes) -> None:
    good = [json.dumps(run(f"good-{n}", "Failed", "False", uid=f"uid-{n}")).encode() for n in range(3)]
    head = b'{"kind": "PipelineRunList", "items": [' + b", ".join(good)
    kube_live.generated[(NS, "pipelineruns", f"{konflux.BUILD_SHA_LABEL}={SHA}")] = lambda: [head, tail]
    register(registry, kube_live, None)

    result = await registry.execute("konflux_get_pipelineruns", {"namespace": NS, "commit_sha": SHA})

    names = [item["metadata"]["name"] for item in await jsonl(result, sandbox)]
    assert names == ["good-0", "good-1", "good-2"]
    [gap] = [g for g in result.metadata["gaps"] if "stopped early" in g]
    offset = int(gap.split("at byte ")[1].split(":")[0])
    assert len(head) <= offset < len(head) + len(tail), gap


@async_module
async def test_unreachable_archive_and_error_status_become_gaps(
        registry: ToolRegistry, sandbox: PodmanSandbox, kube_live: KubeServer) -> None:
    kube_live.add(run("live", labels=BUILD | TEST))  # the BUILD query fails, the TEST query finds it
    kube_live.fail_next(1, 503, path="pipelineruns")
    creds = KubeCredentials(kube_live.url, kube_live.token)
    konflux.register(registry, CLUSTER, "", "http://127.0.0.1:9", credentials=creds)

    result = await registry.execute("konflux_get_pipelineruns", {"namespace": NS, "commit_sha": SHA})

    assert [item["metadata"]["name"] for item in await jsonl(result, sandbox)] == ["live"]
    gaps = result.metadata["gaps"]
    assert any(g.startswith("kubearchive:") and "ConnectionError" in g for g in gaps)
    assert any(g.startswith("live: HTTP 503") for g in gaps)


@async_module
async def test_taskruns_of_one_pipelinerun_use_the_server_side_selector(
        registry: ToolRegistry, kube_live: KubeServer, kubearchive: KubeServer) -> None:
    mine = {konflux.PIPELINERUN_LABEL: "bash-on-pull-request-1"}
    kubearchive.add(tekton_object("taskruns", "bash-build", namespace=NS, labels=mine, pod="bash-build-pod"))
    kube_live.add(tekton_object("taskruns", "other", namespace=NS, labels={konflux.PIPELINERUN_LABEL: "x"}))
    register(registry, kube_live, kubearchive)

    result = await registry.execute("konflux_get_taskruns", {"namespace": NS, "pipelinerun": "bash-on-pull-request-1"})

    items = [json.loads(line) for line in result.content.splitlines()]
    assert [i["status"]["podName"] for i in items] == ["bash-build-pod"]
    selectors = {r.arg("labelSelector") for r in kube_live.requests + kubearchive.requests}
    assert selectors == {"tekton.dev/pipelineRun=bash-on-pull-request-1"}
    both = await registry.execute("konflux_get_taskruns", {"namespace": NS})
    assert both.error_kind == "bad_arguments"


@async_module
async def test_pod_logs_prefer_kubearchive_and_state_expired_containers(
        registry: ToolRegistry, kube_live: KubeServer, kubearchive: KubeServer) -> None:
    kubearchive.add_pod(NS, "build-pod", {"step-init": "archived init\n", "step-build": None})
    kube_live.add_pod(NS, "build-pod", {"step-init": "live init\n", "step-build": None})
    register(registry, kube_live, kubearchive)

    result = await registry.execute("konflux_get_pod_log", {"namespace": NS, "pod": "build-pod"})

    assert result.ok
    assert result.content.startswith("=== step-init ===\narchived init\n=== step-build ===\n[log of container ")
    assert "pod has probably expired" in result.content
    assert result.metadata["containers"] == ["step-init", "step-build"]
    assert any("step-build" in gap for gap in result.metadata["gaps"])


@async_module
async def test_single_container_log_falls_back_to_the_live_api(
        registry: ToolRegistry, kube_live: KubeServer, kubearchive: KubeServer) -> None:
    kube_live.add_pod(NS, "test-pod", {"step-test": "FAIL: test_x\n"})
    register(registry, kube_live, kubearchive)

    result = await registry.execute("konflux_get_pod_log", {"namespace": NS, "pod": "test-pod",
                                                            "container": "step-test"})

    assert result.content == "FAIL: test_x\n"
    assert kubearchive.requests_to("/pods/test-pod/log"), "Kubearchive must be asked first"


@async_module
async def test_expired_pod_is_a_stated_gap_not_a_crash(registry: ToolRegistry, kube_live: KubeServer,
                                                       kubearchive: KubeServer) -> None:
    register(registry, kube_live, kubearchive)

    result = await registry.execute("konflux_get_pod_log", {"namespace": NS, "pod": "gone-pod"})

    assert result.error_kind == "not_found" and "expired" in result.content


@async_module
async def test_bad_namespace_is_refused_before_any_request(registry: ToolRegistry, kube_live: KubeServer) -> None:
    register(registry, kube_live, None)
    result = await registry.execute("konflux_get_pipelineruns", {"namespace": "../../secrets", "commit_sha": SHA})
    assert result.error_kind == "bad_arguments" and not kube_live.requests


def test_kubeconfig_gives_server_and_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("sha256~secret\n")
    path = tmp_path / "kubeconfig"
    path.write_text(f"""
apiVersion: v1
current-context: konflux
contexts:
- {{name: other, context: {{cluster: c2, user: u2}}}}
- {{name: konflux, context: {{cluster: c1, user: u1}}}}
clusters:
- {{name: c1, cluster: {{server: "https://api.example:6443/", insecure-skip-tls-verify: true}}}}
- {{name: c2, cluster: {{server: "https://wrong:6443"}}}}
users:
- {{name: u1, user: {{tokenFile: "{token_file}"}}}}
- {{name: u2, user: {{token: wrong}}}}
""")
    creds = load_kubeconfig(str(path))
    assert (creds.server, creds.token, creds.verify) == ("https://api.example:6443", "sha256~secret", False)
    assert "secret" not in repr(creds)


@pytest.mark.parametrize("text", ["clusters: [", "apiVersion: v1\nusers: []\n", "- just a list\n"])
def test_unusable_kubeconfig_is_one_line_config_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_kubeconfig(str(path))
    assert "\n" not in str(info.value) and "kubeconfig" in str(info.value)
