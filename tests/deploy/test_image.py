"""The service image, built locally (scripts/build-service-image.sh) and run for real under Podman as uid 65532."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.podman

ROOT = Path(__file__).resolve().parents[2]
# A first build installs the pinned dependencies (minutes); later runs reuse the layers by content hash.
BUILD_TIMEOUT_S = 900
RUN_TIMEOUT_S = 60
UID = "65532"


@pytest.fixture(scope="module")
def image() -> str:
    build = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-service-image.sh")],
        capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    return build.stdout.strip().splitlines()[-1]


def podman_run(image: str, *args: str, user: str | None = UID, env: dict[str, str] | None = None,
               ) -> subprocess.CompletedProcess[str]:
    """One container as the cluster runs it: no network, read-only root, a writable /tmp."""
    cmd = ["podman", "run", "--rm", "--network=none", "--read-only", "--tmpfs", "/tmp:rw,size=64m,mode=1777"]
    if user:
        cmd += ["--user", f"{user}:{user}"]
    for name, value in (env or {}).items():
        cmd += ["--env", f"{name}={value}"]
    return subprocess.run([*cmd, image, *args], capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)


@pytest.mark.timeout(BUILD_TIMEOUT_S + 120)
def test_check_config_runs_as_uid_65532(image: str) -> None:
    result = podman_run(image, "python3", "-m", "hummingbird_agent", "check-config")
    assert result.returncode == 0, result.stderr
    assert "config: /app/config.yaml (valid)" in result.stdout
    assert "analyze-failures" in result.stdout
    # No secrets in the image: every env var the config names is reported missing.
    assert "missing env vars: HUMMINGBIRD_GITLAB_TOKEN" in result.stdout


@pytest.mark.timeout(BUILD_TIMEOUT_S + 120)
def test_serve_help_runs_as_uid_65532(image: str) -> None:
    result = podman_run(image, "python3", "-m", "hummingbird_agent", "serve", "--help")
    assert result.returncode == 0, result.stderr
    assert "--role {router,worker,ingress,all}" in " ".join(result.stdout.split())


@pytest.mark.timeout(BUILD_TIMEOUT_S + 120)
def test_image_defaults_are_uid_65532_in_app_with_serve(image: str) -> None:
    # Without --user: the image's own USER and WORKDIR apply.
    probe = "import os, hummingbird_agent; print(os.getuid(), os.getgid(), os.getcwd(), hummingbird_agent.__file__)"
    result = podman_run(image, "python3", "-c", probe, user=None)
    assert result.returncode == 0, result.stderr
    uid, _gid, cwd, module = result.stdout.split()
    assert (uid, cwd) == (UID, "/app")
    assert module == "/app/hummingbird_agent/__init__.py"
    inspect = subprocess.run(["podman", "image", "inspect", image], capture_output=True, text=True, check=True)
    config = json.loads(inspect.stdout)[0]["Config"]
    assert config["User"] == UID
    assert config["WorkingDir"] == "/app"
    assert config["Cmd"] == ["python3", "-m", "hummingbird_agent", "serve"]


@pytest.mark.timeout(BUILD_TIMEOUT_S + 120)
def test_bad_config_path_is_one_line_inside_the_image(image: str) -> None:
    result = podman_run(image, "python3", "-m", "hummingbird_agent", "check-config",
                        env={"HUMMINGBIRD_CONFIG": "/app/missing.yaml"})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "missing.yaml" in lines[0], result.stderr
