"""Shared pieces of the PanDA tests: the fake server with its scenario, credentials, a docs and a source
tree indexed offline, and the tool support bound to them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent.bamboo.panda import index as panda_index
from hummingbird_agent.bamboo.panda.index import PandaIndex
from hummingbird_agent.bamboo.panda.tools import PandaSupport
from hummingbird_agent.data_sources.panda import PandaClient, PandaCredentials
from tests.servers.panda import PandaServer

TOKEN = "oidc-id-token-7f3a9c1e5b-secret"
VO = "atlas"
PROXY = "x509up_u1000"
DOCS = {
    "brokerage.rst": "Brokerage\n=========\n\nJEDI brokerage selects candidate sites. A site is skipped when the "
                     "memory requirement (ramCount) exceeds the site's maxrss; no candidates leaves the task "
                     "pending.\n\nClient API\n==========\n\nThe API of the memory client.\n",
    "task_status.md": "# Task status exhausted\n\nA task becomes exhausted when jobs keep failing: the retry "
                      "limit is reached. Check the memory and the jobs summary.\n\n# Scouts\n\nScout jobs run "
                      "first to measure memory and walltime.\n",
}
SOURCE = {
    "pandajedi/jedibrokerage/AtlasAnalJobBroker.py": "\n".join(
        ["def check_memory(site, task):"] + ["    pass"] * 45
        + ["    msg = 'Insufficient memory at sites'", "    raise BrokerageError(msg)"]),
    "pandaserver/taskbuffer/retry.py": "def retry_module(job):\n    return 'retry action'\n",
}
HELP = "usage: prun [options]\n  --exec EXEC  the command to run\n  --memory MB  memory per core\n"


@pytest.fixture
def panda() -> Iterator[PandaServer]:
    server = PandaServer(TOKEN, VO).scenario()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def indexes(tmp: Path) -> tuple[PandaIndex, PandaIndex, Path]:
    panda_index.build(write_tree(tmp / "docs", DOCS), "docs", tmp / "index" / "docs.json")
    panda_index.build(write_tree(tmp / "src", SOURCE), "source", tmp / "index" / "source.json")
    (tmp / "help").mkdir(exist_ok=True)
    (tmp / "help" / "prun.txt").write_text(HELP)
    return PandaIndex(tmp / "index" / "docs.json"), PandaIndex(tmp / "index" / "source.json"), tmp / "help"


def support(server: PandaServer, tmp: Path, timeout_s: float = 10.0, token: str = TOKEN) -> PandaSupport:
    (tmp / PROXY).write_text("-----BEGIN CERTIFICATE-----\nnot a real proxy\n")
    client = PandaClient(server.api_url, server.log_url, PandaCredentials(token, VO, str(tmp / PROXY)),
                         timeout_s=timeout_s)
    docs, source, help_dir = indexes(tmp)
    return PandaSupport(client, docs, source, help_dir)


def task(server: PandaServer, tid: int = 1001) -> dict[str, Any]:
    data = dict(server.tasks[tid])
    data["errorDialog"] = data["errorDialog"].replace("{base}", server.url)
    return data
