"""`bamboo backup` / `restore` of the embedded stores (back up, wipe, restore: the same diagnosis) and
`bamboo reindex` after an embedder change, through the CLI on a config of embedded stores."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.cli import main
from tests.bamboo.cli_kb import GEMINI_KEY_ENV, learned_config
from tests.bamboo.kb import CAUSE_A, LIKE_A, rules
from tests.servers import GeminiServer


@pytest.fixture
def config(tmp_path: Path, gemini_server: GeminiServer, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> Path:
    """A config of embedded stores under tmp_path/kb holding incidents A and B."""
    gemini_server.respond_with(rules)
    monkeypatch.setenv(GEMINI_KEY_ENV, "test-key")
    path = learned_config(tmp_path, gemini_server.url)
    like_a = tmp_path / "like_a.json"
    like_a.write_text(json.dumps({"task_data": dict(LIKE_A.task_data), "task_logs": dict(LIKE_A.task_logs)}))
    capsys.readouterr()
    return path


def diagnose(config: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["bamboo", "analyze", "--config", str(config), str(config.parent / "like_a.json"), "--json"]) == 0
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_back_up_wipe_restore_gives_the_same_diagnosis(config: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    before = diagnose(config, capsys)
    assert before["root_cause"] == CAUSE_A
    assert main(["bamboo", "backup", "--config", str(config), str(tmp_path / "bak")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("backup: 2 incidents,") and "(checked: the copy holds the same)" in out
    shutil.rmtree(tmp_path / "kb")  # the volume is lost
    assert diagnose(config, capsys)["root_cause"] != CAUSE_A
    assert main(["bamboo", "restore", "--config", str(config), str(tmp_path / "bak")]) == 0
    assert capsys.readouterr().out.startswith("restore: 2 incidents,")
    assert sorted(p.name for p in (tmp_path / "kb").iterdir()) == ["graph", "qdrant"]  # no scratch copy left
    assert diagnose(config, capsys) == before
    assert main(["bamboo", "backup", "--config", str(config), str(tmp_path / "bak")]) == 2  # never over a backup
    assert "is not empty" in capsys.readouterr().err


def test_a_backup_refuses_while_another_process_holds_the_stores(config: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    holder = subprocess.Popen(  # another process with the graph open, as the running service would have it
        [sys.executable, "-c", "import ladybug, sys; db = ladybug.Database(sys.argv[1]); print('open', flush=True); "
         "sys.stdin.read()", str(tmp_path / "kb" / "graph")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        assert main(["bamboo", "backup", "--config", str(config), str(tmp_path / "bak")]) == 2
    finally:
        holder.communicate("", timeout=60)
    err = capsys.readouterr().err
    assert "is locked" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "bak").exists()


def test_reindex_after_an_embedder_change_keeps_the_diagnosis(config: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    before = diagnose(config, capsys)
    assert main(["bamboo", "stats", "--config", str(config)]) == 0
    points_before = int(capsys.readouterr().out.split("vector points: ", 1)[1].split()[0])
    raw = json.loads(config.read_text())
    raw["bamboo"]["embeddings"]["dimensions"] = 96
    config.write_text(json.dumps(raw))
    assert main(["bamboo", "analyze", "--config", str(config), str(tmp_path / "like_a.json")]) == 2
    err = capsys.readouterr().err
    assert "holds 64-d vectors, the embedder makes 96-d ones" in err and "run `bamboo reindex`" in err
    assert main(["bamboo", "reindex", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "of 2 incidents embedded again (96 dimensions); 2 whole-log points dropped" in out
    embedded = int(out.split("reindex: ", 1)[1].split()[0])
    assert embedded == points_before - 2
    after = diagnose(config, capsys)
    assert after["root_cause"] == before["root_cause"] == CAUSE_A
    assert after["resolution"] == before["resolution"]
    assert not list((tmp_path / "kb").glob("*.reindex.jsonl*"))  # the work file is gone once done
    assert_dimensions(tmp_path / "kb" / "qdrant", 96)
    # Learning the incidents again brings back their whole-log points (the graph is unchanged).
    assert main(["bamboo", "populate", "--config", str(config), str(tmp_path / "incidents.jsonl")]) == 0
    capsys.readouterr()
    assert main(["bamboo", "stats", "--config", str(config)]) == 0
    assert int(capsys.readouterr().out.split("vector points: ", 1)[1].split()[0]) == points_before


def assert_dimensions(path: Path, size: int) -> None:
    import asyncio

    async def check() -> None:
        store = QdrantVectorStore("bamboo", size, path=str(path))
        await store.open()  # refuses a collection of another size
        await store.aclose()

    asyncio.run(check())


def test_backup_of_server_stores_points_to_their_own_tools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"bamboo": {"enabled": True, "graph": {"backend": "neo4j", "uri": "bolt://db:7687"}},
                                  "workflows": {}}))
    assert main(["bamboo", "backup", "--config", str(config), str(tmp_path / "bak")]) == 2
    err = capsys.readouterr().err
    assert "neo4j-admin database dump" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "bak").exists()
