"""The service image's start check, run by both image builds and by tests/deploy/test_image.py in the built
image (stdlib only). In the directory holding hummingbird_agent/ and config.yaml (the image's /app):
  1. every module of the package imports (pkgutil.walk_packages), and so does each module named (the
     dependencies' modules from runtime-packages.txt, the ones our code imports lazily included);
  2. `python3 -m hummingbird_agent serve` starts on that config (no secrets: webhooks are refused and events
     wait, see README.md "Quick start") and its HTTP edge answers /healthz 200 {"status": "ok"} and /readyz 200
     {"status": "ready", ...} within START_TIMEOUT_S;
  3. SIGTERM stops it with exit code 0 within STOP_TIMEOUT_S.
Whatever serve wrote under the temporary directory is removed again. Exit 0, or 1 with the reasons.

    python3 image_start_check.py [--port 8080] [--modules-from FILE] [MODULE...]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
from pathlib import Path

START_TIMEOUT_S = 120.0  # a cold start on a loaded 2-core builder imports ~190 modules first
STOP_TIMEOUT_S = 30.0
POLL_S = 0.25


def import_all(modules: list[str]) -> tuple[int, list[str]]:
    """(modules imported, failures): every module of hummingbird_agent, then `modules`."""
    failures: list[str] = []

    def import_one(name: str) -> bool:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - each failure is reported, the check goes on to the next
            failures.append(f"import {name}: {type(exc).__name__}: {exc}")
            traceback.print_exc(limit=-3)
            return False
        return True

    count = 0
    if import_one("hummingbird_agent"):
        package = sys.modules["hummingbird_agent"]
        # __main__ runs the CLI when imported; it is the `python3 -m` entry that step 2 starts.
        names = [m.name for m in pkgutil.walk_packages(package.__path__, "hummingbird_agent.",
                                                       onerror=lambda name: failures.append(f"walk {name}"))]
        count = 1 + sum(import_one(name) for name in names if not name.endswith(".__main__"))
    return count + sum(import_one(name) for name in modules), failures


def get(port: int, path: str) -> tuple[int, dict[str, object]]:
    """(status, JSON body) of GET http://127.0.0.1:port/path; (0, {}) when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
    except (OSError, ValueError):
        return 0, {}


def wait_ready(process: subprocess.Popen[bytes], port: int) -> tuple[int, dict[str, object]]:
    """Poll /readyz until it answers 200, the process exits, or START_TIMEOUT_S passes; the last answer."""
    deadline = time.monotonic() + START_TIMEOUT_S
    answer = get(port, "/readyz")
    while answer[0] != 200 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(POLL_S)
        answer = get(port, "/readyz")
    return answer


def stop(process: subprocess.Popen[bytes]) -> int | None:
    """SIGTERM, then the exit code; None (and SIGKILL) when it does not exit within STOP_TIMEOUT_S."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None


def check_serve(port: int, log: Path) -> list[str]:
    """Start serve, demand /healthz and /readyz as documented, stop it; the failures."""
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "hummingbird_agent", "serve"], stdout=out,
                                   stderr=subprocess.STDOUT)
    failures: list[str] = []
    try:
        ready = wait_ready(process, port)
        if ready[0] != 200 or ready[1].get("status") != "ready":
            failures.append(f"/readyz answered {ready[0] or 'nothing'} {ready[1]}")
        else:
            print(f"image start check: /readyz 200 after {time.monotonic() - started:.1f} s: {json.dumps(ready[1])}")
            health = get(port, "/healthz")
            if health != (200, {"status": "ok"}):
                failures.append(f"/healthz answered {health}")
    finally:
        exited = process.poll()
        code = stop(process)
    if exited is not None:
        failures.append(f"serve exited by itself with code {exited}")
    elif code != 0:
        failures.append(f"serve did not stop cleanly on SIGTERM (exit code {code})")
    if failures:
        sys.stderr.write(log.read_text(errors="replace")[-4000:])
    return failures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8080, help="the baked config's webhook.port")
    parser.add_argument("--modules-from", type=Path, help="a file naming dependency modules to import, one a line")
    parser.add_argument("modules", nargs="*", help="dependency modules to import")
    args = parser.parse_args(argv)
    modules = [*args.modules, *(args.modules_from.read_text().split() if args.modules_from else [])]
    sys.path.insert(0, os.getcwd())  # the package beside config.yaml, as `python3 -m` finds it
    count, failures = import_all(modules)
    print(f"image start check: {count} modules imported, {len(failures)} failed")
    tmp = Path(tempfile.gettempdir())
    before = set(tmp.iterdir())
    log = Path(tempfile.mkdtemp(prefix="image-start-check.")) / "serve.log"
    try:
        failures += check_serve(args.port, log)
    finally:
        for path in set(tmp.iterdir()) - before:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
    for failure in failures:
        print(f"image start check failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
