"""The service image, built locally (scripts/build-service-image.sh) and run for real under Podman as uid 65532."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
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


def _get_inside(name: str, path: str) -> subprocess.CompletedProcess[str]:
    probe = ("import urllib.request; r = urllib.request.urlopen('http://127.0.0.1:8080" + path + "', timeout=2); "
             "print(r.status); print(r.read().decode())")
    return subprocess.run(["podman", "exec", name, "python3", "-c", probe], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, check=False)


@pytest.mark.timeout(BUILD_TIMEOUT_S + 180)
def test_default_command_serves_with_the_baked_config(image: str) -> None:
    # As shipped: the image's CMD and /app/config.yaml, a read-only root, /tmp writable, no secrets.
    name = f"hb-serve-test-{uuid.uuid4().hex[:8]}"
    started = subprocess.run(["podman", "run", "-d", "--name", name, "--network=none", "--read-only",
                              "--tmpfs", "/tmp:rw,size=64m,mode=1777", image],
                             capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    assert started.returncode == 0, started.stderr
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        ready = _get_inside(name, "/readyz")
        while ready.stdout.split()[:1] != ["200"] and time.monotonic() < deadline:
            time.sleep(0.5)
            ready = _get_inside(name, "/readyz")
        logs = subprocess.run(["podman", "logs", name], capture_output=True, text=True, check=False)
        assert ready.stdout.split()[:1] == ["200"], (ready.stderr, logs.stderr[-2000:])
        assert "serve ready: role=all transport=embedded (/tmp/hummingbird/queue.sqlite)" in logs.stderr
        metrics = _get_inside(name, "/metrics")
        assert metrics.stdout.split()[:1] == ["200"] and "hummingbird_queue_messages" in metrics.stdout
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "5", name], capture_output=True, check=False, timeout=60)
