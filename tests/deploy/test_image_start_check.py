"""scripts/image_start_check.py on this checkout (the .venv's python): it names what does not import and a serve
that does not answer. The image builds run it in the image; test_image.py runs it in the built image."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "image_start_check.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def app_dir(tmp_path: Path, port: int) -> Path:
    """The image's /app in miniature: the package and workflows, config.yaml with its own port; state under it."""
    app = tmp_path / "app"
    app.mkdir()
    for name in ("hummingbird_agent", "workflows"):
        (app / name).symlink_to(ROOT / name)
    config = (ROOT / "config.yaml").read_text()
    assert "\n  port: 8080\n" in config
    (app / "config.yaml").write_text(config.replace("\n  port: 8080\n", f"\n  port: {port}\n"))
    (tmp_path / "tmp").mkdir()
    return app


def run_check(app: Path, port: int, *modules: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUMMINGBIRD_", "GEMINI_", "GITLAB_"))}
    env["TMPDIR"] = str(app.parent / "tmp")
    return subprocess.run([sys.executable, str(CHECK), "--port", str(port), *modules], cwd=app, env=env,
                          capture_output=True, text=True, timeout=240, check=False)


def failures(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("image start check failed: ")]


@pytest.mark.timeout(300)
def test_a_module_that_does_not_import_fails_the_check_and_serve_is_still_checked(tmp_path: Path) -> None:
    port = free_port()
    app = app_dir(tmp_path, port)
    result = run_check(app, port, "json", "not_in_any_image")
    assert result.returncode == 1, result.stderr[-3000:]
    assert failures(result) == ["image start check failed: import not_in_any_image: ModuleNotFoundError: "
                                "No module named 'not_in_any_image'"]
    assert "image start check: /readyz 200 after " in result.stdout
    assert '"status": "ready"' in result.stdout
    # What serve wrote under the temporary directory is gone again.
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.timeout(300)
def test_a_serve_that_cannot_listen_fails_the_check(tmp_path: Path) -> None:
    port = free_port()
    app = app_dir(tmp_path, port)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))  # bound, not listening: serve cannot bind, nothing answers
        result = run_check(app, port)
    assert result.returncode == 1, result.stderr[-3000:]
    assert failures(result) == ["image start check failed: /readyz answered nothing {}",
                                "image start check failed: serve exited by itself with code 2"]
    assert f"webhook: cannot listen on 127.0.0.1:{port}" in result.stderr
