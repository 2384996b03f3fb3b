"""The service image, built locally (scripts/build-service-image.sh) and run for real under Podman as uid 65532."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

import hummingbird_agent

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
               volumes: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """One container as the cluster runs it: no network, read-only root, a writable /tmp."""
    cmd = ["podman", "run", "--rm", "--network=none", "--read-only", "--tmpfs", "/tmp:rw,size=64m,mode=1777"]
    if user:
        cmd += ["--user", f"{user}:{user}"]
    for name, value in (env or {}).items():
        cmd += ["--env", f"{name}={value}"]
    for source, target in (volumes or {}).items():
        cmd += ["--volume", f"{source}:{target}:ro"]
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


def _get(port: str, path: str) -> tuple[int, str]:
    """(status, body) of GET http://127.0.0.1:port/path from the host; (0, error) when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def _post_webhook(port: str) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/webhook", data=b"{}", method="POST",
                                     headers={"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": "guess"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.timeout(BUILD_TIMEOUT_S + 180)
def test_default_command_serves_readyz_on_a_port_published_to_127_0_0_1(image: str) -> None:
    # As shipped: the image's CMD and /app/config.yaml, a read-only root, /tmp writable, no secrets; the HTTP
    # edge's port published on the host's loopback only.
    name = f"hb-serve-test-{uuid.uuid4().hex[:8]}"
    started = subprocess.run(["podman", "run", "-d", "--name", name, "--read-only", "-p", "127.0.0.1::8080",
                              "--tmpfs", "/tmp:rw,size=64m,mode=1777", image],
                             capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    assert started.returncode == 0, started.stderr
    try:
        published = subprocess.run(["podman", "port", name, "8080/tcp"], capture_output=True, text=True,
                                   timeout=RUN_TIMEOUT_S, check=True).stdout.split()
        assert len(published) == 1 and published[0].startswith("127.0.0.1:"), published
        port = published[0].rsplit(":", 1)[1]
        deadline = time.monotonic() + RUN_TIMEOUT_S
        ready = _get(port, "/readyz")
        while ready[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
            ready = _get(port, "/readyz")
        logs = subprocess.run(["podman", "logs", name], capture_output=True, text=True, check=False)
        assert ready[0] == 200, (ready, logs.stderr[-2000:])
        # Without secrets the worker waits (events stay queued) and /readyz says why; webhooks are refused.
        assert json.loads(ready[1]) == {"status": "ready", "worker": "HUMMINGBIRD_GITLAB_TOKEN, GEMINI_API_KEY not set"}
        assert _get(port, "/healthz") == (200, '{"status": "ok"}')
        assert "serve ready: role=all transport=embedded (/tmp/hummingbird/queue.sqlite)" in logs.stderr
        metrics = _get(port, "/metrics")
        assert metrics[0] == 200 and "hummingbird_queue_messages" in metrics[1]
        status, body = _post_webhook(port)
        assert (status, json.loads(body)) == (
            401, {"status": "rejected", "reason": "webhook secret is not configured on this server"})
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "5", name], capture_output=True, check=False, timeout=60)


@pytest.mark.timeout(BUILD_TIMEOUT_S + 180)
def test_start_check_passes_in_the_image_and_names_what_does_not_import(image: str) -> None:
    # The build ran it already; here it runs again in a container as the cluster starts one, with one module
    # that no image installs added to the list.
    modules = subprocess.run([sys.executable, str(ROOT / "scripts" / "runtime_packages.py"), "modules"],
                             capture_output=True, text=True, check=True).stdout.split()
    result = podman_run(image, "python3", "/run/check/image_start_check.py", *modules, "not_in_any_image",
                        volumes={str(ROOT / "scripts"): "/run/check"})
    assert result.returncode == 1, result.stderr[-3000:]
    package = [m.name for m in pkgutil.walk_packages(hummingbird_agent.__path__, "hummingbird_agent.")
               if not m.name.endswith(".__main__")]
    assert f"image start check: {1 + len(package) + len(modules)} modules imported, 1 failed" in result.stdout
    assert "image start check: /readyz 200 after " in result.stdout
    failures = [line for line in result.stderr.splitlines() if line.startswith("image start check failed")]
    assert failures == ["image start check failed: import not_in_any_image: ModuleNotFoundError: "
                        "No module named 'not_in_any_image'"]
