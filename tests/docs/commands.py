"""The tested commands of the getting-started and first-analysed-MR pages, run as a reader runs them on a fresh
clone: `bash` in the clone's directory with the `.venv` interpreter first on PATH (the pages assume
`. .venv/bin/activate`) and none of the service's secrets set. The clone's own directory is shown on the page as
/path/to/hummingbird-agent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.docs.blocks import REPO

PAGES = (REPO / "docs" / "getting-started.md", REPO / "docs" / "first-analysed-mr.md")
SHOWN_ROOT = "/path/to/hummingbird-agent"


def environment() -> dict[str, str]:
    """A clean environment: the interpreter's bin first on PATH, this checkout importable, no secrets."""
    bin_dir = str(Path(sys.executable).parent)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": os.environ.get(
        "HOME", "/tmp"), "LANG": "C.UTF-8", "COLUMNS": "100", "PYTHONPATH": str(REPO), "TERM": "dumb"}


def run(commands: str) -> str:
    """The output (stdout and stderr, in order) of `commands` run with bash, the clone's path masked."""
    done = subprocess.run(["bash", "-c", commands], cwd=REPO, env=environment(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120, check=False)
    return done.stdout.replace(str(REPO), SHOWN_ROOT)
