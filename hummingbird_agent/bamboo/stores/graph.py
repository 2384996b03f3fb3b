"""The graph store logic, written once over a `CypherSession` (embedded ladybug or Neo4j).

Replacing an incident runs in one write transaction: read its previous contribution, withdraw it,
merge the new one, record it. An unchanged contribution (same digest) is not rewritten.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import KnowledgeGraph, NodeType, RelType
from hummingbird_agent.bamboo.stores import cypher, owners, records
from hummingbird_agent.bamboo.stores.base import CauseRow, ClueCause, EdgeRow, GraphCounts, NodeRow
from hummingbird_agent.bamboo.stores.records import CypherTx

T = TypeVar("T")
SAMPLE = budgets.BAMBOO_CAUSE_SAMPLE_INCIDENTS
REKEY_BATCH = budgets.BAMBOO_REKEY_BATCH
log = logging.getLogger(__name__)


class CypherSession(Protocol):
    """A Cypher engine: transactional units of work plus lifecycle."""

    async def open(self) -> None: ...

    async def aclose(self) -> None: ...

    async def write(self, work: Callable[[CypherTx], Awaitable[T]]) -> T: ...

    async def read(self, query: str, params: dict[str, object]) -> list[dict[str, Any]]: ...


def contribution(graph: KnowledgeGraph) -> dict[str, Any]:
    """The rows an incident contributes, keyed by its project (owners.py), sorted so equal graphs give equal
    digests."""
    stored = graph.stored_part()
    nodes = [{"type": n.type.value, "name": n.name, "description": n.description,
              "confidence": n.confidence, "props": n.props_json()} for n in stored.nodes]
    edges = [{"group": [e.source[0].value, e.type.value, e.target[0].value], "src": e.source[1],
              "tgt": e.target[1], "confidence": e.confidence, "props": e.props_json()} for e in stored.edges]
    nodes.sort(key=lambda r: (r["type"], r["name"]))
    edges.sort(key=lambda r: (r["group"], r["src"], r["tgt"]))
    return owners.keyed({"nodes": nodes, "edges": edges}, graph.project)


def _digest(contrib: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(contrib, sort_keys=True).encode()).hexdigest()


def _withdraw(old: dict[str, Any], gid: str) -> list[cypher.Statement]:
    statements: list[cypher.Statement] = []
    edges = cypher.group_rows((_group(e), {"src": e["src"], "tgt": e["tgt"], "confidence": e["confidence"]})
                              for e in old["edges"])
    for group, rows in edges.items():
        statements += cypher.remove_edges(group, rows, gid)
    for label in cypher.GRAPH_LABELS:
        rows = [{"name": n["name"], "confidence": n["confidence"]} for n in old["nodes"] if n["type"] == label]
        if rows:
            statements += cypher.remove_nodes(label, rows, gid)
    return statements


def _support(rows: dict[Any, dict[str, Any]], key: Any, gid: str, item: dict[str, Any],
             fields: dict[str, Any]) -> None:
    """Fold one incident's element into its batch row: support, confidence sum, first non-empty text."""
    row = rows.setdefault(key, {**fields, "description": "", "props": "{}", "gids": [], "conf_sum": 0.0})
    row["gids"].append(gid)
    row["conf_sum"] += item["confidence"]
    if not row["description"]:
        row["description"] = item.get("description", "")
    if row["props"] == "{}":
        row["props"] = item["props"]


def _contribute(news: list[tuple[str, dict[str, Any]]]) -> list[cypher.Statement]:
    """Merge statements for several incidents' contributions: one per label and edge group."""
    nodes: dict[tuple[str, str], dict[str, Any]] = {}
    edges: dict[tuple[cypher.EdgeGroup, str, str], dict[str, Any]] = {}
    for gid, new in news:
        for n in new["nodes"]:
            _support(nodes, (n["type"], n["name"]), gid, n, {"name": n["name"]})
        for e in new["edges"]:
            _support(edges, (_group(e), e["src"], e["tgt"]), gid, e, {"src": e["src"], "tgt": e["tgt"]})
    statements = [cypher.merge_nodes(label, [r for (t, _), r in sorted(nodes.items()) if t == label])
                  for label in cypher.GRAPH_LABELS if any(t == label for t, _ in nodes)]
    grouped = cypher.group_rows((group, row) for (group, _, _), row in sorted(edges.items()))
    statements += [cypher.merge_edges(g, rows) for g, rows in grouped.items()]
    return statements


def _group(edge: dict[str, Any]) -> cypher.EdgeGroup:
    """A contribution edge's (source label, relationship, target label)."""
    source, rel, target = edge["group"]
    return source, rel, target


def _mean(row: dict[str, Any]) -> float:
    freq = int(row.get("frequency") or 0)
    return round(float(row.get("conf_sum") or 0.0) / freq, 6) if freq else 0.0


async def _replace_all(tx: CypherTx, prepared: list[tuple[str, dict[str, Any], str]]) -> list[bool]:
    """One read of the incidents' records, their statements in order, one recount and one record write
    for the whole batch (a later copy of an incident in the batch replaces the earlier one)."""
    rows = await tx.run(*cypher.incident_contributions(sorted({gid for gid, _, _ in prepared})))
    current: dict[str, tuple[str, dict[str, Any]]] = {
        r["gid"]: (r["digest"], json.loads(r["contribution"])) for r in rows}
    changed: list[bool] = []
    statements: list[cypher.Statement] = []
    touched: list[dict[str, Any]] = []
    latest: dict[str, dict[str, Any]] = {}
    for gid, new, digest in prepared:
        digest_then, old = current.get(gid, ("", None))
        changed.append(digest_then != digest)
        if digest_then == digest:
            continue
        if old and gid not in latest:  # a copy earlier in this batch was never written: nothing to withdraw
            statements += _withdraw(old, gid)
            touched.append(old)
        latest.pop(gid, None)  # support lists then read as if the batch had been written one by one
        latest[gid] = new
        current[gid] = (digest, new)
    if latest:
        statements += _contribute(list(latest.items()))
        statements += _recount(*touched, *latest.values())
        statements.append(cypher.put_incidents([{
            "gid": gid, "digest": current[gid][0], "contribution": json.dumps(latest[gid], sort_keys=True),
            "causes": records.cause_names(latest[gid]), "project": records.project(latest[gid])}
            for gid in sorted(latest)]))
        await tx.run_all(statements)
    return changed


def _recount(*contributions: dict[str, Any] | None) -> list[cypher.Statement]:
    """Specificity counts of every clue node these contributions touch (withdrawn or added)."""
    by_label = {(n["type"], n["name"]) for c in contributions if c for n in c["nodes"]
                if n["type"] in cypher.CLUE_LABELS}
    return [cypher.recount_causes(g, sorted(name for label, name in by_label if label == g[0]))
            for g in cypher.clue_groups() if any(label == g[0] for label, _ in by_label)]


def _node_row(label: str, r: dict[str, Any]) -> NodeRow:
    return NodeRow(label, r["name"], r["description"] or "", tuple(r.get("incidents") or ()),
                   int(r["frequency"] or 0), _mean(r), json.loads(r["props"] or "{}"))


class CypherGraphStore:
    """GraphStore over any CypherSession; the same statements run on every backend."""

    def __init__(self, session: CypherSession) -> None:
        self._session = session

    async def open(self) -> None:
        await self._session.open()

        async def backfill(tx: CypherTx) -> None:
            await tx.run_all([cypher.backfill_causes(g) for g in cypher.clue_groups()])
            await records.backfill(tx)

        await self._session.write(backfill)
        await self._rekey()

    async def _rekey(self) -> None:
        """Key by project the nodes of incidents learned before nodes were keyed (a no-op afterwards): each such
        incident is withdrawn and merged again under its project's keys, a batch a transaction."""
        done = 0
        while rows := await self._session.read(*cypher.unkeyed_incidents(owners.KEYED_PREFIX, REKEY_BATCH)):
            olds = [(str(r["gid"]), json.loads(r["contribution"])) for r in rows]
            prepared = [(gid, new, _digest(new)) for gid, new in
                        ((gid, owners.keyed(old, records.project(old))) for gid, old in olds)]

            async def work(tx: CypherTx, batch: list[tuple[str, dict[str, Any], str]] = prepared) -> list[bool]:
                return await _replace_all(tx, batch)

            await self._session.write(work)
            done += len(prepared)
        if done:
            log.warning("%d incident(s) learned before knowledge was kept by project were keyed by their project", done)

    async def aclose(self) -> None:
        await self._session.aclose()

    async def replace_incident(self, incident_id: str, graph: KnowledgeGraph) -> bool:
        return (await self.replace_incidents([(incident_id, graph)]))[0]

    async def replace_incidents(self, items: Sequence[tuple[str, KnowledgeGraph]]) -> list[bool]:
        """Replace several incidents in one write transaction (one commit for the whole batch)."""
        prepared = [(gid, new, _digest(new)) for gid, new in ((gid, contribution(g)) for gid, g in items)]

        async def work(tx: CypherTx) -> list[bool]:
            return await _replace_all(tx, prepared)

        return await self._session.write(work) if prepared else []

    async def remove_incident(self, incident_id: str) -> None:
        async def work(tx: CypherTx) -> None:
            found = await tx.run(*cypher.get_incident(incident_id))
            if not found:
                return
            old = json.loads(found[0]["contribution"])
            await tx.run_all([*_withdraw(old, incident_id), *_recount(old), cypher.delete_incident(incident_id)])

        await self._session.write(work)

    async def incident_ids(self) -> list[str]:
        return [str(r["gid"]) for r in await self._session.read(*cypher.list_incidents())]

    async def contribution(self, incident_id: str) -> dict[str, Any] | None:
        rows = await self._session.read(*cypher.get_incident(incident_id))
        return dict(json.loads(rows[0]["contribution"])) if rows else None

    async def counts(self) -> GraphCounts:
        nodes = {label: await self._count(cypher.count_nodes(label)) for label in cypher.GRAPH_LABELS}
        edges = {rel.value: await self._count(cypher.count_edges(rel.value)) for rel in RelType}
        return GraphCounts(nodes, edges, await self._count(cypher.count_nodes(cypher.INCIDENT_LABEL)),
                           await self._count(cypher.count_unowned()))

    async def count(self, node_type: str) -> int:
        return await self._count(cypher.count_nodes(NodeType(node_type).value))

    async def _count(self, statement: cypher.Statement) -> int:
        rows = await self._session.read(*statement)
        return int(rows[0]["c"]) if rows else 0

    async def nodes(self, node_type: str) -> list[NodeRow]:
        label = NodeType(node_type).value
        return [_node_row(label, r) for r in await self._session.read(*cypher.list_nodes(label))]

    async def names(self, node_type: str) -> list[str]:
        return [str(r["name"]) for r in await self._session.read(*cypher.list_names(NodeType(node_type).value))]

    async def clue_causes(self, clues: Mapping[str, Sequence[str]]) -> list[ClueCause]:
        out: list[ClueCause] = []
        for group in cypher.clue_groups():
            names = sorted({n for n in clues.get(group[0], ()) if n})
            for r in await self._session.read(*cypher.clue_causes(group, names, SAMPLE)) if names else []:
                out.append(ClueCause(group[0], r["clue"], int(r["shared_by"] or 0), _node_row(group[2], r)))
        return out

    async def linked(self, source_type: str, rel_type: str, target_type: str,
                     names: Sequence[str]) -> list[tuple[str, NodeRow]]:
        found = await self._linked(source_type, rel_type, target_type, names, support=False)
        return sorted(((source, row) for source, row, _ in found), key=lambda pair: (pair[0], pair[1].name))

    async def linked_support(self, source_type: str, rel_type: str, target_type: str,
                             names: Sequence[str]) -> list[tuple[str, NodeRow, tuple[str, ...]]]:
        return await self._linked(source_type, rel_type, target_type, names, support=True)

    async def _linked(self, source_type: str, rel_type: str, target_type: str, names: Sequence[str],
                      support: bool) -> list[tuple[str, NodeRow, tuple[str, ...]]]:
        group = (NodeType(source_type).value, RelType(rel_type).value, NodeType(target_type).value)
        if group not in cypher.edge_groups() or not names:
            return []
        rows = await self._session.read(*cypher.linked(group, sorted(set(names)), support))
        return [(source, _node_row(group[2], r), tuple(r.get("support") or ()))
                for r in rows for source in r["sources"]]

    async def project_incidents(self, projects: Sequence[str]) -> dict[str, tuple[str, ...]]:
        rows = await self._session.read(*cypher.project_incidents(sorted(set(projects)))) if projects else []
        return {str(r["gid"]): tuple(r["causes"] or ()) for r in rows}

    async def causes(self, names: Sequence[str]) -> list[NodeRow]:
        wanted = sorted(set(names))
        rows = await self._session.read(*cypher.causes_named(wanted, SAMPLE)) if wanted else []
        return [_node_row(NodeType.CAUSE.value, r) for r in rows]

    async def feature_lines(self, feature: str, limit: int) -> list[str]:
        return [str(r["line"]) for r in await self._session.read(*cypher.feature_lines(feature, limit))]

    async def causes_of_incidents(self, incident_ids: Sequence[str]) -> dict[str, list[NodeRow]]:
        rows = await self._session.read(*cypher.incident_causes(sorted(set(incident_ids))))
        names = {r["gid"]: list(r["causes"] or ()) for r in rows}
        wanted = sorted({n for ns in names.values() for n in ns})
        causes = {r["name"]: _node_row(NodeType.CAUSE.value, r)
                  for r in (await self._session.read(*cypher.causes_named(wanted, SAMPLE)) if wanted else [])}
        return {gid: [causes[n] for n in ns if n in causes] for gid, ns in names.items()}

    async def edges(self, rel_type: str) -> list[EdgeRow]:
        out: list[EdgeRow] = []
        for group in cypher.edge_groups(RelType(rel_type)):
            for r in await self._session.read(*cypher.list_edges(group)):
                out.append(EdgeRow(group[0], r["source"], group[1], group[2], r["target"],
                                   tuple(r["incidents"] or ()), int(r["frequency"] or 0), _mean(r),
                                   json.loads(r["props"] or "{}")))
        return out

    async def top_causes(self, limit: int) -> list[CauseRow]:
        rows = await self._session.read(*cypher.top_causes(limit))
        return [CauseRow(r["name"], r["description"] or "", int(r["frequency"] or 0), _mean(r),
                         tuple(sorted(x for x in r["resolutions"] or () if x))) for r in rows]
