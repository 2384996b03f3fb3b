"""The llama.cpp tier: one real server per session (loading the model once), skipped with the install hint when
scripts/install-llamacpp-tier.sh has not run (`make test-llamacpp` runs it first)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.llamacpp import LlamaCppServer, missing


@pytest.fixture(scope="session")
def llamacpp() -> Iterator[LlamaCppServer]:
    """A started llama.cpp server with the packaged Qwen2.5-Coder-0.5B-Instruct model (greedy sampling)."""
    reason = missing()
    if reason:
        pytest.skip(reason)
    with LlamaCppServer() as server:
        yield server
