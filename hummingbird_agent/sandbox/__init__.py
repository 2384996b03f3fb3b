"""Sandboxes where model-requested commands run: interface, Podman, Kubernetes pod and pod-pool backends."""

from hummingbird_agent.sandbox.base import (
    SANDBOX_UID,
    WORKDIR,
    ByteChunks,
    ExecResult,
    Sandbox,
    SandboxState,
)
from hummingbird_agent.sandbox.podman import PodmanSandbox

__all__ = [
    "SANDBOX_UID",
    "WORKDIR",
    "ByteChunks",
    "ExecResult",
    "PodmanSandbox",
    "Sandbox",
    "SandboxState",
]
