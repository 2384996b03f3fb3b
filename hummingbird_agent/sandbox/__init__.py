"""Sandboxes where model-requested commands run: interface, Podman, Kubernetes pod and pod-pool backends."""

from hummingbird_agent.sandbox.base import (
    SANDBOX_UID,
    WORKDIR,
    ByteChunks,
    ExecResult,
    Sandbox,
    SandboxState,
)
from hummingbird_agent.sandbox.duplex import Duplex, duplex_exec
from hummingbird_agent.sandbox.factory import SandboxFactory
from hummingbird_agent.sandbox.k8s_pod import KubePodSandbox, pod_spec
from hummingbird_agent.sandbox.k8s_pool import KubePoolSandbox
from hummingbird_agent.sandbox.podman import PodmanSandbox

__all__ = [
    "SANDBOX_UID",
    "WORKDIR",
    "ByteChunks",
    "Duplex",
    "ExecResult",
    "KubePodSandbox",
    "KubePoolSandbox",
    "PodmanSandbox",
    "Sandbox",
    "SandboxFactory",
    "SandboxState",
    "duplex_exec",
    "pod_spec",
]
