"""The knowledge-base CLI's manners: a disabled knowledge base creates nothing and says how to enable it, a store
held by another process names the lock and the backends that can be shared, an unreachable server is named."""

from __future__ import annotations

import contextlib
import gc
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hummingbird_agent.cli import main

HOLD = {
    "graph": "import ladybug, sys\ndb = ladybug.Database(sys.argv[1])\nprint('ready', flush=True)\nsys.stdin.read()",
    "vectors": "from qdrant_client import QdrantClient\nimport sys\nc = QdrantClient(path=sys.argv[1])\n"
               "print('ready', flush=True)\nsys.stdin.read()",
}


def write_config(tmp_path: Path, bamboo: dict[str, object]) -> str:
    (tmp_path / "turns.json").write_text(json.dumps({"turns": []}))
    config = {"model": {"provider": "scripted", "script": "turns.json"}, "workflows": {}, "bamboo": bamboo}
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    return str(tmp_path / "config.yaml")


@contextlib.contextmanager
def held(kind: str, path: Path) -> Iterator[int]:
    """Another process holding the store at `path` open; yields its pid."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD[kind], str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc.pid
    finally:
        proc.communicate("", timeout=30)


@pytest.mark.parametrize("command", [["stats"], ["analyze", "i.json"], ["populate", "in.jsonl"]])
def test_a_disabled_knowledge_base_creates_nothing_and_says_how_to_enable(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    config = write_config(tmp_path, {"enabled": False})
    (tmp_path / "in.jsonl").write_text("{}\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["bamboo", *command, "--config", config]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: bamboo {command[0]}: the knowledge base is off") and len(err.splitlines()) == 1
    assert "`bamboo: {enabled: true}`" in err and "Nothing was created" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_locked_graph_names_the_holder_and_the_shareable_backend(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, {"enabled": True, "graph": {"path": str(tmp_path / "graph")},
                                     "vectors": {"path": str(tmp_path / "qdrant")}})
    with held("graph", tmp_path / "graph") as pid:
        assert main(["bamboo", "stats", "--config", config]) == 2
    err = capsys.readouterr().err
    assert f"graph store {tmp_path / 'graph'} is locked by process {pid}" in err
    assert "bamboo.graph.backend: neo4j" in err and len(err.splitlines()) == 1


# qdrant-client leaves its lock file handle open when the folder is locked (the CLI exits right after).
@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_locked_vector_store_names_the_lock_and_the_server_option(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, {"enabled": True, "graph": {"path": str(tmp_path / "graph")},
                                     "vectors": {"path": str(tmp_path / "qdrant")}})
    (tmp_path / "qdrant").mkdir()
    with held("vectors", tmp_path / "qdrant"):
        assert main(["bamboo", "stats", "--config", config]) == 2
    err = capsys.readouterr().err
    assert f"lock file {tmp_path / 'qdrant'}/.lock" in err and "bamboo.vectors.url" in err
    assert len(err.splitlines()) == 1
    gc.collect()  # the leaked handle is closed here, under this test's filter


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_servers_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = closed_port()
    config = write_config(tmp_path, {"enabled": True, "graph": {"backend": "neo4j", "uri": f"bolt://127.0.0.1:{port}"}})
    assert main(["bamboo", "stats", "--config", config]) == 2
    assert f"neo4j connect to bolt://127.0.0.1:{port}: ServiceUnavailable" in capsys.readouterr().err
    config = write_config(tmp_path, {"enabled": True, "graph": {"path": str(tmp_path / "g")},
                                     "vectors": {"url": f"http://127.0.0.1:{port}"}})
    assert main(["bamboo", "stats", "--config", config]) == 2
    assert f"qdrant open at http://127.0.0.1:{port}: ConnectError" in capsys.readouterr().err
