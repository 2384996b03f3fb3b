"""kubernetes/: every manifest parses and carries the fields the deployment depends on (seed §13.3), the
commented-out options are valid once switched on, and the cluster config validates against the code."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from hummingbird_agent.config.loading import load_config, required_env_names
from hummingbird_agent.events.webhook import build_app
from tests.deploy.manifests import KUBE_DIR, ROOT, agent_container, by_kind, documents, secret_names, uncommented

MANIFESTS = ("service/deployment.yaml", "service/secret.yaml", "rbac.yaml", "sandbox-pool.yaml",
             "networkpolicy.yaml", "monitoring/servicemonitor.yaml", "monitoring/prometheus-rules.yaml")
MANIFESTS += ("webhook/service.yaml", "webhook/route.yaml", "webhook/ingress.yaml")  # test_webhook_manifests.py
KUSTOMIZE = {"service/kustomization.yaml", "openshift/kustomization.yaml"}
# The knowledge base's overlays (tests/deploy/test_knowledge_manifests.py).
KNOWLEDGE = {f"knowledge/{o}/{f}" for o in ("servers", "embedded") for f in ("kustomization.yaml", "config.yaml")}
KNOWLEDGE |= {"knowledge/embedded/pvc.yaml"}


@pytest.mark.parametrize("name", MANIFESTS)
def test_manifest_parses_with_kind_and_name(name: str) -> None:
    docs = documents(name)
    assert docs
    for doc in docs:
        assert doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"], doc


def test_no_unexpected_manifests() -> None:
    found = {p.relative_to(KUBE_DIR).as_posix() for p in KUBE_DIR.glob("**/*.yaml")}
    assert found == set(MANIFESTS) | KUSTOMIZE | KNOWLEDGE


def deployment() -> dict[str, Any]:
    return by_kind("service/deployment.yaml", "Deployment")


def test_deployment_rollout_and_identity() -> None:
    spec = deployment()["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    pod = spec["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 900
    assert pod["serviceAccountName"] == "hummingbird-agent"
    assert pod["securityContext"]["runAsUser"] == 65532
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()


def test_deployment_env_comes_from_the_secret() -> None:
    container = agent_container(deployment())
    assert {"secretRef": {"name": "hummingbird-agent"}} in container["envFrom"]
    assert by_kind("service/secret.yaml", "Secret")["metadata"]["name"] == "hummingbird-agent"


def test_probes_hit_health_routes_the_service_serves() -> None:
    container = agent_container(deployment())
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    served = {r.resource.canonical for r in build_app([], None, "/webhook").router.routes() if r.resource}
    for probe in ("livenessProbe", "readinessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] in served, f"{probe} path {get['path']} is not served"
        assert get["port"] in ports
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def cluster_config_text() -> str:
    return str(by_kind("service/deployment.yaml", "ConfigMap")["data"]["config.yaml"])


@pytest.fixture
def cluster_config(tmp_path: Path) -> Any:
    """The ConfigMap's config.yaml laid out as in the container: /app/config.yaml next to /app/workflows."""
    app = tmp_path / "app"
    shutil.copytree(ROOT / "workflows", app / "workflows")
    (app / "config.yaml").write_text(cluster_config_text(), encoding="utf-8")
    return load_config(app / "config.yaml", environ={})


def test_cluster_config_validates_and_listens_where_the_probes_look(cluster_config: Any) -> None:
    cfg = cluster_config.config
    container = agent_container(deployment())
    assert cfg.webhook.host == "0.0.0.0"  # the kubelet probes the pod IP, not loopback
    assert cfg.webhook.port == container["ports"][0]["containerPort"]
    assert (cfg.queues.backend, cfg.sessions.backend) == ("sqs", "s3")
    assert cfg.queues.work_url.endswith(".fifo")
    grace = deployment()["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert cfg.queues.shutdown_grace_s < grace
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/app/config.yaml"]["subPath"] == "config.yaml"
    assert "--config" in container["command"] and "/app/config.yaml" in container["command"]


def test_cluster_config_secrets_are_live_keys_of_the_secret(cluster_config: Any) -> None:
    live, _ = secret_names()
    missing = [n for n in required_env_names(cluster_config.config) if n not in live]
    assert not missing, f"secret.yaml lacks required keys {missing}"


def test_secret_template_holds_no_values() -> None:
    data = by_kind("service/secret.yaml", "Secret")
    assert data["type"] == "Opaque"
    assert all(value == "" for value in data["stringData"].values())


def switched_on_deployment() -> dict[str, Any]:
    text = (KUBE_DIR / "service" / "deployment.yaml").read_text(encoding="utf-8")
    docs = [d for d in yaml.safe_load_all(uncommented(text)) if d]
    return next(d for d in docs if d["kind"] == "Deployment")


def test_commented_workflow_and_ca_mounts_work_once_uncommented() -> None:
    live = deployment()
    on = switched_on_deployment()
    live_paths = {m["mountPath"] for m in agent_container(live)["volumeMounts"]}
    assert "/app/workflows" not in live_paths and "/etc/pki/custom" not in live_paths  # off by default
    container = agent_container(on)
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in on["spec"]["template"]["spec"]["volumes"]}
    for path in ("/app/workflows", "/etc/pki/custom"):
        mount = mounts[path]
        assert mount["readOnly"] is True
        assert "configMap" in volumes[mount["name"]], f"{path} is not a ConfigMap volume"
    assert all(m["name"] in volumes for m in container["volumeMounts"])
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["REQUESTS_CA_BUNDLE"] == "/etc/pki/custom/ca-bundle.crt"


# --- the sandbox namespace (kubernetes/rbac.yaml, sandbox-pool.yaml, networkpolicy.yaml) ----------------


def test_rbac_grants_exactly_the_sandbox_verbs() -> None:
    role = by_kind("rbac.yaml", "Role")
    verbs = {res: set(rule["verbs"]) for rule in role["rules"] for res in rule["resources"]}
    assert verbs["pods"] == {"create", "get", "list", "delete", "patch"}
    assert "create" in verbs["pods/exec"]
    assert set(verbs) == {"pods", "pods/exec"}
    binding = by_kind("rbac.yaml", "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    account = by_kind("rbac.yaml", "ServiceAccount")["metadata"]["name"]
    assert account == deployment()["spec"]["template"]["spec"]["serviceAccountName"]
    assert [(s["kind"], s["name"]) for s in binding["subjects"]] == [("ServiceAccount", account)]


def test_rbac_binds_the_agents_account_from_its_own_namespace() -> None:
    binding = by_kind("rbac.yaml", "RoleBinding")
    assert all(s.get("namespace") for s in binding["subjects"] if s["kind"] == "ServiceAccount")


def test_sandbox_pool_is_a_standby_deployment() -> None:
    pool = by_kind("sandbox-pool.yaml", "Deployment")["spec"]
    assert pool["replicas"] == 3
    assert pool["revisionHistoryLimit"] == 2
    assert pool["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    assert pool["template"]["metadata"]["labels"]["hummingbird/role"] == "standby"
    assert pool["selector"]["matchLabels"]["hummingbird/role"] == "standby"
    pod = pool["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False
    (container,) = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert container["resources"]["limits"]["memory"]


def test_networkpolicy_denies_all_traffic_of_every_pod() -> None:
    policy = by_kind("networkpolicy.yaml", "NetworkPolicy")["spec"]
    assert policy["podSelector"] == {}
    assert policy["egress"] == []
    assert set(policy["policyTypes"]) >= {"Egress"}


# --- kustomize: the service namespace and its OpenShift overlay -------------------------------------------


def kustomize(directory: str) -> list[dict[str, Any]]:
    """What `kubectl apply -k` would apply (kubectl's built-in kustomize, no cluster needed)."""
    built = subprocess.run(["kubectl", "kustomize", str(KUBE_DIR / directory)], capture_output=True, text=True,
                           timeout=60, check=False)
    assert built.returncode == 0, built.stderr
    return [d for d in yaml.safe_load_all(built.stdout) if d]


def test_service_kustomization_has_the_account_the_deployment_runs_as() -> None:
    docs = {(d["kind"], d["metadata"]["name"]) for d in kustomize("service")}
    assert {("ServiceAccount", "hummingbird-agent"), ("Deployment", "hummingbird-agent"),
            ("ConfigMap", "hummingbird-agent-config"), ("Secret", "hummingbird-agent")} == docs
    assert deployment()["spec"]["template"]["spec"]["serviceAccountName"] == "hummingbird-agent"


def test_openshift_overlay_fixes_no_uid_and_meets_restricted_v2() -> None:
    [dep] = [d for d in kustomize("openshift") if d["kind"] == "Deployment"]
    pod = dep["spec"]["template"]["spec"]
    text = yaml.safe_dump(dep)
    assert "runAsUser" not in text and "runAsGroup" not in text and "fsGroup" not in text
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    for container in pod["containers"]:
        ctx = container["securityContext"]
        assert ctx["allowPrivilegeEscalation"] is False and ctx["capabilities"] == {"drop": ["ALL"]}
    assert all("hostPath" not in v for v in pod["volumes"]) and not pod.get("hostNetwork")
    # Everything but the uid is the base's.
    [base] = [d for d in kustomize("service") if d["kind"] == "Deployment"]
    base["spec"]["template"]["spec"]["securityContext"].pop("runAsUser")
    base["spec"]["template"]["spec"]["securityContext"].pop("runAsGroup")
    assert base == dep
