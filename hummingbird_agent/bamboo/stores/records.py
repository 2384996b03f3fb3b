"""The fields an incident record keeps beside its contribution (its causes' names, its project), and their
backfill in records written before a field existed (run at open; a no-op afterwards)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from hummingbird_agent.bamboo.incident_graph import NodeType, incident_project
from hummingbird_agent.bamboo.stores import cypher, owners

log = logging.getLogger(__name__)


class CypherTx(Protocol):
    async def run(self, query: str, params: dict[str, object]) -> list[dict[str, Any]]: ...

    async def run_all(self, statements: Sequence[tuple[str, dict[str, object]]]) -> None:
        """Run statements in order, discarding their rows (one hop to the engine where it can)."""
        ...


def cause_names(contrib: dict[str, Any]) -> list[str]:
    """The stored (keyed) names of the incident's causes."""
    return sorted({n["name"] for n in contrib["nodes"] if n["type"] == NodeType.CAUSE.value})


def project(contrib: dict[str, Any]) -> str:
    if owners.OWNER in contrib:
        return str(contrib[owners.OWNER])
    return incident_project((n["type"], owners.plain(n["name"])) for n in contrib["nodes"])


async def _backfill_projects(tx: CypherTx) -> None:
    """The project of incident records written before the records kept it, from the `project=` feature of their
    contribution; one with none (or several) is nobody's (a no-op afterwards)."""
    rows = await tx.run(*cypher.unowned_incidents())
    found = [{"gid": r["gid"], "project": project(json.loads(r["contribution"]))} for r in rows]
    if found:
        await tx.run_all([cypher.set_incident_projects(found)])
    if unowned := sum(1 for r in found if not r["project"]):
        log.warning("%d learned incident(s) have no project: no project's diagnosis or triage sees them", unowned)


async def _backfill_causes(tx: CypherTx) -> None:
    """The causes' names of incident records written before the records kept them (a no-op afterwards)."""
    rows = await tx.run(*cypher.uncounted_incidents())
    if rows:
        await tx.run_all([cypher.set_incident_causes([
            {"gid": r["gid"], "causes": cause_names(json.loads(r["contribution"]))} for r in rows])])


async def backfill(tx: CypherTx) -> None:
    await _backfill_causes(tx)
    await _backfill_projects(tx)
