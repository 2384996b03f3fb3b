"""`python -m hummingbird_agent bamboo investigate` driven through a pseudo-terminal: the scripted model
proposes code calling a read-only and a state-changing tool of a stdio MCP server; it waits for `approve`
(the prompt shows the proposal's id), an approval of the replaced proposal runs nothing, and it runs (the
server records the restart) once the corrected block is approved, and finalize + confirm store the
procedure, cause and resolution. The preview merges into what the investigation's project stored, never into
another project's cause or procedure of the same name."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hummingbird_agent.bamboo import incident_graph as kg
from hummingbird_agent.bamboo.factory import build_stores
from hummingbird_agent.bamboo.learn.accumulator import store_knowledge
from hummingbird_agent.bamboo.mcp.procedures import procedure_node
from hummingbird_agent.bamboo.stores.base import opened
from hummingbird_agent.config.loading import load_config
from tests.bamboo.kb import view
from tests.bamboo.mcp_server import __file__ as SERVER_FILE

pytestmark = [pytest.mark.podman, pytest.mark.timeout(240)]
REPO = Path(__file__).resolve().parents[2]
CODE = ("info = await tools.get_runner_info(runner=task['runner'])\n"
        "done = await tools.restart_runner(runner=task['runner'])\n"
        "return {'free_disk_gb': info['free_disk_gb'], 'restart': done}")


def write_config(tmp_path: Path, turns: list[dict[str, str]]) -> Path:
    (tmp_path / "turns.json").write_text(json.dumps({"turns": turns}))
    (tmp_path / "mcp.json").write_text(json.dumps({"servers": [{
        "name": "ci", "command": sys.executable, "args": [SERVER_FILE, "stdio"],
        "env": {"MCP_TEST_MARKER": str(tmp_path / "restarted.txt"), "PYTHONPATH": str(REPO)},
        "read_only_tools": ["^get_runner_info$"], "include_tools": ["get_runner_info", "restart_runner"]}]}))
    config = {"model": {"provider": "scripted", "script": "turns.json"},
              "sandbox": {"memory_bytes": 512 * 2**20, "workdir_bytes": 64 * 2**20},
              "bamboo": {"enabled": True, "mcp_servers_config": "mcp.json", "graph": {"path": "kb/graph"},
                         "vectors": {"path": "kb/qdrant"}, "embeddings": {"dimensions": 64}},
              "workflows": {}}
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    (tmp_path / "incident.json").write_text(json.dumps({"task_data": {"project": "g/app", "runner": "r1"}}))
    return tmp_path / "config.yaml"


class Terminal:
    """The command on a pseudo-terminal: `expect` reads until a text appears, `send` types a line."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.fd, child = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "hummingbird_agent", *args], stdin=child, stdout=child,
                                     stderr=child, cwd=cwd, close_fds=True,
                                     env={**os.environ, "PYTHONPATH": str(REPO), "LOG_LEVEL": "ERROR"})
        os.close(child)
        self.seen = ""

    def expect(self, text: str, timeout_s: float = 120.0) -> str:
        deadline = time.monotonic() + timeout_s
        while text not in self.seen:
            assert time.monotonic() < deadline, f"timed out waiting for {text!r}; output:\n{self.seen}"
            ready, _, _ = select.select([self.fd], [], [], 0.5)
            if ready:
                try:
                    self.seen += os.read(self.fd, 65536).decode(errors="replace")
                except OSError:  # the child closed the terminal
                    assert text in self.seen, f"ended before {text!r}; output:\n{self.seen}"
        before, _, self.seen = self.seen.partition(text)
        return before + text

    def send(self, line: str) -> None:
        os.write(self.fd, (line + "\n").encode())

    def close(self) -> int:
        try:
            return self.proc.wait(60)
        finally:
            os.close(self.fd)


def proposal_id(text: str) -> str:
    """The id of the one proposal shown in `text` (a terminal's output or an MR note)."""
    found = re.findall(r"\*\*Proposed code\*\* `([0-9a-f]{16})`", text)
    assert len(found) == 1, text
    return str(found[0])


async def stored(config: Path) -> tuple[list[str], list[str], int]:
    stores = build_stores(load_config(config, environ={}))
    async with opened(stores):
        mine = view(stores, "g/app").graph
        procedures = await mine.names("Procedure")
        causes = await mine.names("Cause")
        incidents = len(await mine.incident_ids())
    return procedures, causes, incidents


def learned(project: str, cause: str, code: str | None = None) -> kg.ExtractedKnowledge:
    node = kg.make_node(kg.NodeType.CAUSE, cause, f"{project}'s words")
    feature = kg.make_node(kg.NodeType.TASK_FEATURE, f"project={project}", attribute="project", value=project)
    nodes, edges = [node, feature], [kg.Edge(feature.key, kg.RelType.CONTRIBUTE_TO, node.key)]
    if code and (procedure := procedure_node(code, f"{project}'s steps")):
        nodes.append(procedure)
        edges.append(kg.Edge(node.key, kg.RelType.INVESTIGATED_BY, procedure.key))
    return kg.ExtractedKnowledge(f"{project}#1", kg.KnowledgeGraph(tuple(nodes), tuple(edges)), cause, ())


async def seed(config: Path) -> None:
    """g/app learned the cause this investigation will name; another project learned a cause and a procedure of
    the names it will store too."""
    stores = build_stores(load_config(config, environ={}))
    async with opened(stores):
        await store_knowledge(stores, [learned("g/app", "runner r1 disk full"),
                                       learned("other/team", "runner r1 disk full", CODE)])


def test_investigate_at_a_terminal_waits_for_approval_and_stores_once(tmp_path: Path) -> None:
    config = write_config(tmp_path, [{"text": json.dumps({"orchestration_code": CODE, "capability_gaps": [
        {"investigation": "runner host kernel logs", "suggested_tool_capability": "journalctl reader"}]})}])
    asyncio.run(seed(config))
    term = Terminal(["bamboo", "investigate", "--config", str(config), "--incident", "incident.json",
                     "why did runner r1 fail the build?"], tmp_path)
    proposal = term.expect("]> ")
    first = proposal_id(proposal)
    assert proposal.endswith(f"investigate [approve {first}]> ")  # the prompt holds the id shown
    assert "`restart_runner` **changes state**" in proposal and "`get_runner_info` reads only" in proposal
    assert "runner host kernel logs" in proposal
    assert not (tmp_path / "restarted.txt").exists()  # nothing ran before the approval
    for line in ["```python", *CODE.replace("task['runner']", "'r9'").splitlines(), "```"]:
        term.send(line)  # a corrected block: proposed again, and it waits again
    corrected = term.expect("]> ")
    second = proposal_id(corrected)
    assert "tools.restart_runner(runner='r9')" in corrected and f"Reply `approve {second}`" in corrected
    assert second != first and corrected.endswith(f"investigate [approve {second}]> ")
    term.send(f"approve {first}")  # the proposal read first: replaced since
    stale = term.expect(f"investigate [approve {second}]> ")
    assert "The proposal changed" in stale and not (tmp_path / "restarted.txt").exists()
    term.send("approve")  # bare at the prompt: the id the prompt showed
    ran = term.expect("investigate> ")
    assert "Approved and ran" in ran and '"free_disk_gb": 3' in ran
    assert (tmp_path / "restarted.txt").read_text() == "r9\n"
    term.send("finalize cause: runner r1 disk full resolution: restart the runner")
    preview = term.expect("investigate> ")
    assert "Cause `runner r1 disk full` (merges with the stored one)" in preview  # g/app's own
    assert "Procedure `proc__get_runner_info__restart_runner` (new)" in preview  # the other project's is not
    term.send("confirm")
    assert "**Stored** incident `investigate:" in term.expect("The investigation is closed.")
    assert term.close() == 0
    procedures, causes, incidents = asyncio.run(stored(config))
    assert procedures == ["proc__get_runner_info__restart_runner"] and causes == ["runner r1 disk full"]
    assert incidents == 2  # g/app's first and the investigation


@pytest.mark.parametrize(("extra", "message"), [(["--incident", "incident.json", "--project", "g/app"],
                                                 "give either --incident or --project/--mr, not both"),
                                                (["--mr", "7"], "--mr needs --project")])
def test_contradictory_options_are_one_error_line(tmp_path: Path, extra: list[str], message: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from hummingbird_agent.cli import main

    config = write_config(tmp_path, [])
    assert main(["bamboo", "investigate", "--config", str(config), "why?", *extra]) == 2
    assert capsys.readouterr().err == f"error: bamboo investigate: {message}\n"
    assert not (tmp_path / "kb").exists()  # nothing was created
