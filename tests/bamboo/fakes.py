"""What the knowledge-base tests answer at its two vendor boundaries: the model and the Neo4j driver.

Rules (`rule(system, user) -> text`) answer like an LLM would, from the prompt text, order-independent;
the scripted Gemini server plays them (`gemini_server.respond_with(rule)`) to the real adapter, and
`count`/`users` read the prompts it received. `LadybugDriver` speaks the neo4j async driver's
session/transaction API and runs every Cypher statement it receives on a real Cypher engine (ladybug),
so the Neo4j backend's statements execute for real.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Protocol

from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.models import ScriptedModel
from tests.servers.model_common import Rule

__all__ = ["Rule"]


class Prompted(Protocol):
    """A fake model server: (system, user) of each generation call it received."""

    @property
    def prompts(self) -> list[tuple[str, str]]: ...


def count(server: Prompted, prompt_start: str) -> int:
    """How many calls the model server received whose system prompt starts with `prompt_start`."""
    return sum(1 for system, _ in server.prompts if system.startswith(prompt_start))


def users(server: Prompted, prompt_start: str) -> list[str]:
    """The user texts of those calls, in the order received."""
    return [user for system, user in server.prompts if system.startswith(prompt_start)]


def uncalled_llm() -> JsonLLM:
    """The model of a part that must not call one (code-only facts, tool listings): the package's scripted
    model with no turns, so a call fails the test."""
    return JsonLLM(ModelText(ScriptedModel([]), "scripted"))


EXTRACT = "You turn one resolved incident"
REVIEW = "You review a knowledge graph"
SUMMARY = "Write a short narrative"


def facts_of(user: str, kind: str) -> list[str]:
    """Fact names of one type listed in an extraction prompt."""
    block = user.split("## Facts extracted by code", 1)[1].split("##", 1)[0]
    return re.findall(rf"^- {kind}: (.+)$", block, re.MULTILINE)


def causal_answer(cause: str, resolution: str = "", procedure: str = "read the job log") -> str:
    answer: dict[str, Any] = {"causes": [{"name": cause, "description": f"{cause} happened", "confidence": 0.8}],
                              "procedures": [{"name": procedure, "tools": ["get_job_log"], "cause": cause}]}
    if resolution:
        answer["resolutions"] = [{"name": resolution, "steps": ["do it"], "cause": cause}]
    return json.dumps(answer)


def approving(system: str, user: str) -> str:
    """Review approves, summary is a fixed sentence; extraction must be handled by the caller."""
    if system.startswith(REVIEW):
        return json.dumps({"approved": True, "confidence": 0.9, "issues": [], "feedback": ""})
    if system.startswith(SUMMARY):
        return "A summary."
    raise AssertionError("unexpected prompt")


class _Result:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    async def data(self) -> list[dict[str, Any]]:
        return self._rows


class _Tx:
    def __init__(self, session: LadybugSession, inner: Any) -> None:
        self._session, self._inner = session, inner

    async def run(self, query: str, parameters: dict[str, Any] | None = None) -> _Result:
        return _Result(await self._inner.run(query, parameters or {}))


class _Session:
    def __init__(self, driver: LadybugDriver) -> None:
        self._driver = driver

    async def __aenter__(self) -> _Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def run(self, query: str, parameters: dict[str, Any] | None = None) -> _Result:
        # Schema statements (Neo4j constraints) are recorded: ladybug has its own DDL.
        self._driver.schema.append(query)
        return _Result([])

    async def execute_write(self, work: Callable[[Any], Any]) -> Any:
        db = self._driver.db
        return await db.write(lambda inner: work(_Tx(db, inner)))

    async def execute_read(self, work: Callable[[Any], Any]) -> Any:
        db = self._driver.db
        return await db.write(lambda inner: work(_Tx(db, inner)))


class LadybugDriver:
    """The subset of neo4j.AsyncDriver the Neo4j backend uses, over an embedded ladybug database."""

    def __init__(self, path: str) -> None:
        self.db = LadybugSession(path)
        self.schema: list[str] = []
        self.databases: list[str | None] = []
        self.closed = False

    async def verify_connectivity(self) -> None:
        await self.db.open()

    def session(self, database: str | None = None) -> _Session:
        self.databases.append(database)
        return _Session(self)

    async def close(self) -> None:
        await self.db.aclose()
        self.closed = True
