"""Package surface and the transport invariants that are properties of the source itself."""

from __future__ import annotations

from pathlib import Path

import hummingbird_agent.sandbox as sandbox
from hummingbird_agent.sandbox import ExecResult

PACKAGE = Path(sandbox.__file__).parent


def test_exported_names() -> None:
    assert sorted(sandbox.__all__) == sorted(
        ["SANDBOX_UID", "WORKDIR", "ByteChunks", "Duplex", "ExecResult", "KubePodSandbox", "KubePoolSandbox",
         "PodmanSandbox", "Sandbox", "SandboxFactory", "SandboxState", "duplex_exec", "pod_spec"]
    )  # fmt: skip


def test_host_side_never_encodes_or_unpacks_sandbox_data() -> None:
    # Archives are opaque bytes on the host (seed: the orchestrator never extracts them); no base64 anywhere.
    for module in PACKAGE.glob("*.py"):
        text = module.read_text()
        for forbidden in ("import base64", "import tarfile", "import gzip", "import zipfile", "shutil.unpack"):
            assert forbidden not in text, f"{module.name} uses {forbidden}"


def test_ok_needs_exit_zero_and_no_timeout() -> None:
    assert ExecResult(0, b"", b"").ok
    assert not ExecResult(0, b"", b"", timed_out=True).ok
    assert not ExecResult(1, b"", b"").ok
