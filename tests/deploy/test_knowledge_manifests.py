"""kubernetes/knowledge/: the knowledge base deployed, on existing Neo4j and Qdrant servers (their secrets and
CA) or on the embedded stores on a persistent volume (one replica, Recreate: the embedded graph's lock)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from hummingbird_agent.config.loading import LoadedConfig, load_config, required_env_names
from tests.deploy.manifests import ROOT, agent_container
from tests.deploy.test_manifests import cluster_config_text, deployment, kustomize

OVERLAYS = ("servers", "embedded")


def built(overlay: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in kustomize(f"knowledge/{overlay}")}


def overlay_config(overlay: str, tmp_path: Path) -> LoadedConfig:
    """The overlay's ConfigMap as the container sees it: /app/config.yaml beside /app/workflows."""
    text = built(overlay)[("ConfigMap", "hummingbird-agent-config")]["data"]["config.yaml"]
    app = tmp_path / "app"
    shutil.copytree(ROOT / "workflows", app / "workflows")
    (app / "config.yaml").write_text(text, encoding="utf-8")
    return load_config(app / "config.yaml", environ={})


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_overlay_is_the_cluster_config_plus_the_knowledge_base(overlay: str, tmp_path: Path) -> None:
    cfg = overlay_config(overlay, tmp_path).config
    assert cfg.bamboo.enabled
    assert {"bamboo-accumulate", "bamboo-diagnose"} <= set(cfg.workflows)
    base, mine = yaml.safe_load(cluster_config_text()), yaml.safe_load(
        built(overlay)[("ConfigMap", "hummingbird-agent-config")]["data"]["config.yaml"])
    mine.pop("bamboo")
    for name in ("bamboo-accumulate", "bamboo-diagnose"):
        mine["workflows"].pop(name)
    assert mine == base  # nothing else drifted from kubernetes/service
    labels = built(overlay)[("ConfigMap", "hummingbird-agent-config")]["metadata"]["labels"]
    assert labels == {"app.kubernetes.io/name": "hummingbird-agent"}


def test_servers_overlay_has_their_secrets_and_ca(tmp_path: Path) -> None:
    cfg = overlay_config("servers", tmp_path).config
    assert cfg.bamboo.graph.backend == "neo4j" and cfg.bamboo.graph.uri.startswith("neo4j+s://")
    assert cfg.bamboo.vectors.url.startswith("https://")
    docs = built("servers")
    secret = docs[("Secret", "hummingbird-agent")]["stringData"]
    assert set(required_env_names(cfg)) | {cfg.bamboo.vectors.api_key_env} <= set(secret)
    assert all(value == "" for value in secret.values())
    dep = docs[("Deployment", "hummingbird-agent")]
    container = agent_container(dep)
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert volumes[mounts["/etc/pki/custom"]["name"]]["configMap"] == {"name": "hummingbird-agent-ca"}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["REQUESTS_CA_BUNDLE"] == "/etc/pki/custom/ca-bundle.crt"  # LoadedConfig.ca_bundle: both stores
    assert dep["spec"]["replicas"] == deployment()["spec"]["replicas"]
    assert dep["spec"]["strategy"] == deployment()["spec"]["strategy"]  # servers: nothing local to hand over


def test_embedded_overlay_keeps_the_stores_on_a_volume_with_one_replica(tmp_path: Path) -> None:
    cfg = overlay_config("embedded", tmp_path).config
    assert cfg.bamboo.graph.backend == "embedded" and not cfg.bamboo.vectors.url
    docs = built("embedded")
    claim = docs[("PersistentVolumeClaim", "hummingbird-agent-bamboo")]["spec"]
    assert claim["accessModes"] == ["ReadWriteOnce"]
    dep = docs[("Deployment", "hummingbird-agent")]
    # The embedded graph is locked by its one process: a second pod (replica or rolling update) cannot open it.
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"] == {"type": "Recreate"}
    pod = dep["spec"]["template"]["spec"]
    container = agent_container(dep)
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "bamboo"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["bamboo"]["persistentVolumeClaim"] == {"claimName": "hummingbird-agent-bamboo"}
    for path in (cfg.bamboo.graph.path, cfg.bamboo.vectors.path):
        assert Path(path).is_relative_to(mount["mountPath"]), path  # not the /tmp emptyDir
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]
    assert container["resources"]["limits"]["memory"] == "4Gi"  # 3.1 GB peak RSS measured at 100k incidents
