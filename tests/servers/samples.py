"""Real third-party payloads copied into tests/fixtures/samples/, loaded as fresh copies."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

SAMPLES_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "samples"


@functools.cache
def _text(subpath: str) -> str:
    return (SAMPLES_DIR / subpath).read_text(encoding="utf-8")


def load(subpath: str) -> Any:
    """A fresh (mutable) copy of the JSON sample at `subpath`, e.g. "gitlab/api/job_single.json"."""
    return json.loads(_text(subpath))
