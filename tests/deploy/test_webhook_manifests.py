"""kubernetes/webhook/: the Service, OpenShift Route and Ingress that take GitLab webhooks straight to the pods
reach the Deployment's HTTP port, expose only the webhook path the cluster config serves, over TLS."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent.config.loading import check_role, load_config
from tests.deploy.manifests import ROOT, agent_container, by_kind

SERVICE = by_kind("webhook/service.yaml", "Service")


def pod_template() -> dict[str, Any]:
    return dict(by_kind("service/deployment.yaml", "Deployment")["spec"]["template"])


@pytest.fixture
def webhook_on(tmp_path: Path) -> Any:
    """The cluster config as an operator switches the webhook on: `enabled: true` and nothing else changed."""
    app = tmp_path / "app"
    shutil.copytree(ROOT / "workflows", app / "workflows")
    text = str(by_kind("service/deployment.yaml", "ConfigMap")["data"]["config.yaml"])
    assert text.count("enabled: false") == 1
    (app / "config.yaml").write_text(text.replace("enabled: false", "enabled: true"), encoding="utf-8")
    loaded = load_config(app / "config.yaml", environ={})
    check_role(loaded, "all")  # what serve checks before it starts
    return loaded.config.webhook


def test_service_reaches_the_agent_pods_http_port() -> None:
    template = pod_template()
    assert SERVICE["spec"]["selector"].items() <= template["metadata"]["labels"].items()
    [port] = SERVICE["spec"]["ports"]
    container = agent_container({"spec": {"template": template}})
    container_ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert port["targetPort"] in container_ports
    assert port["port"] == container_ports[port["targetPort"]]


def test_route_exposes_only_the_webhook_path_over_tls(webhook_on: Any) -> None:
    route = by_kind("webhook/route.yaml", "Route")["spec"]
    assert route["to"] == {"kind": "Service", "name": SERVICE["metadata"]["name"]}
    assert route["port"]["targetPort"] in {p["name"] for p in SERVICE["spec"]["ports"]}
    assert webhook_on.enabled and route["path"] == webhook_on.path == "/webhook"
    assert route["tls"] == {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"}


def test_ingress_exposes_only_the_webhook_path_over_tls(webhook_on: Any) -> None:
    spec = by_kind("webhook/ingress.yaml", "Ingress")["spec"]
    [rule] = spec["rules"]
    [path] = rule["http"]["paths"]
    assert (path["path"], path["pathType"]) == (webhook_on.path, "Exact")
    backend = path["backend"]["service"]
    assert backend["name"] == SERVICE["metadata"]["name"]
    assert backend["port"]["name"] in {p["name"] for p in SERVICE["spec"]["ports"]}
    assert [t["hosts"] for t in spec["tls"]] == [[rule["host"]]]
