"""Reading the Kubernetes manifests of kubernetes/: documents by kind, the commented-out options made
live the way an operator would (delete the `# `), and secret.yaml's listed variable names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
KUBE_DIR = ROOT / "kubernetes"
# A commented-out YAML line: `# key: ...` or `# - key: ...` (prose comments have no leading `word:`).
_COMMENTED_YAML = re.compile(r"^(\s*)# ((?:\s*)(?:- )?[A-Za-z][\w-]*:(?: |$).*)$")
_COMMENTED_KEY = re.compile(r"^\s*#\s*([A-Z][A-Z0-9_]*):")


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((KUBE_DIR / name).read_text(encoding="utf-8")) if d]


def by_kind(name: str, kind: str) -> dict[str, Any]:
    found = [d for d in documents(name) if d.get("kind") == kind]
    assert len(found) == 1, f"{name}: expected one {kind}, found {len(found)}"
    return found[0]


def uncommented(text: str) -> str:
    """The manifest with every commented-out YAML line switched on."""
    lines = []
    for line in text.splitlines():
        match = _COMMENTED_YAML.match(line)
        lines.append(match.group(1) + match.group(2) if match else line)
    return "\n".join(lines) + "\n"


def agent_container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def secret_names() -> tuple[set[str], set[str]]:
    """(keys with a value in stringData, keys listed but commented out) of kubernetes/service/secret.yaml."""
    text = (KUBE_DIR / "service" / "secret.yaml").read_text(encoding="utf-8")
    live = set(by_kind("service/secret.yaml", "Secret").get("stringData", {}))
    commented = {m.group(1) for line in text.splitlines() if (m := _COMMENTED_KEY.match(line))}
    return live, commented - live
