"""Cypher text of the graph store, shared verbatim by the embedded (ladybug) and Neo4j backends.

Only the dialect subset both engines run is used (MERGE/ON CREATE/ON MATCH, UNWIND, CASE, `IN`,
list `+`, collect/size); labels come from the closed NodeType/RelType enums, never from input.
Each incident's support is kept as `incidents` lists on nodes and edges, so removing an incident
touches exactly the elements it contributed to.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from hummingbird_agent.bamboo.incident_graph import SCHEMA, VECTOR_ONLY, NodeType, RelType

Statement = tuple[str, dict[str, object]]
GRAPH_LABELS: tuple[str, ...] = tuple(t.value for t in NodeType if t not in VECTOR_ONLY)
INCIDENT_LABEL = "Incident"

# One row per element carries every incident of the batch that supports it (`gids`, `conf_sum`): the
# engine never sees a key twice in one statement (ladybug leaves such a node's properties null). The
# store withdraws an incident before contributing it again, so no gid of a row is already present.
_ADD_SUPPORT = (
    "{v}.conf_sum = {v}.conf_sum + row.conf_sum, {v}.frequency = {v}.frequency + size(row.gids), "
    "{v}.description = CASE WHEN {v}.description = '' THEN row.description ELSE {v}.description END, "
    "{v}.props = CASE WHEN {v}.props = '{{}}' THEN row.props ELSE {v}.props END, "
    "{v}.incidents = {v}.incidents + row.gids"
)
_CREATE = ("{v}.description = row.description, {v}.props = row.props, {v}.frequency = size(row.gids), "
           "{v}.conf_sum = row.conf_sum, {v}.incidents = row.gids")
# Shrinks lists that hold this incident among others; a list holding only it yields no row here
# (the filter removes its only element) and is deleted by the companion statement instead.
_SHRINK = ("WHERE $gid IN {v}.incidents UNWIND {v}.incidents AS x "
           "WITH {v}, row.confidence AS c, x WHERE x <> $gid WITH {v}, c, collect(x) AS keep "
           "SET {v}.incidents = keep, {v}.frequency = size(keep), {v}.conf_sum = {v}.conf_sum - c")

EdgeGroup = tuple[str, str, str]
# Node types whose relationship to a Cause is a diagnosis clue; each keeps `causes`, the number of
# distinct causes it reaches (the document frequency of its IDF), recounted whenever it is written.
CLUE_LABELS: tuple[str, ...] = (NodeType.SYMPTOM.value, NodeType.TASK_FEATURE.value, NodeType.COMPONENT.value,
                                NodeType.ENVIRONMENT.value)


def merge_nodes(label: str, rows: list[dict[str, object]]) -> Statement:
    query = (f"UNWIND $rows AS row MERGE (n:{label} {{name: row.name}}) "
             f"ON CREATE SET {_CREATE.format(v='n')} ON MATCH SET {_ADD_SUPPORT.format(v='n')}")
    return query, {"rows": rows}


def merge_edges(group: EdgeGroup, rows: list[dict[str, object]]) -> Statement:
    src, rel, tgt = group
    query = (f"UNWIND $rows AS row MATCH (s:{src} {{name: row.src}}), (t:{tgt} {{name: row.tgt}}) "
             f"MERGE (s)-[r:{rel}]->(t) ON CREATE SET {_CREATE.format(v='r')} "
             f"ON MATCH SET {_ADD_SUPPORT.format(v='r')}")
    return query, {"rows": [{"description": "", **row} for row in rows]}


def remove_edges(group: EdgeGroup, rows: list[dict[str, object]], gid: str) -> list[Statement]:
    src, rel, tgt = group
    match = f"UNWIND $rows AS row MATCH (s:{src} {{name: row.src}})-[r:{rel}]->(t:{tgt} {{name: row.tgt}}) "
    params: dict[str, object] = {"rows": rows, "gid": gid}
    return [(match + _SHRINK.format(v="r"), params), (match + "WHERE r.incidents = [$gid] DELETE r", params)]


def remove_nodes(label: str, rows: list[dict[str, object]], gid: str) -> list[Statement]:
    match = f"UNWIND $rows AS row MATCH (n:{label} {{name: row.name}}) "
    params: dict[str, object] = {"rows": rows, "gid": gid}
    # DETACH is safe: an edge of another incident would make that incident support this node too.
    return [(match + _SHRINK.format(v="n"), params), (match + "WHERE n.incidents = [$gid] DETACH DELETE n", params)]


def put_incidents(rows: list[dict[str, object]]) -> Statement:
    """Incident records (gid, digest, contribution, the names of its causes); each gid once (ladybug mis-merges
    a key repeated in one statement)."""
    return (f"UNWIND $rows AS row MERGE (i:{INCIDENT_LABEL} {{name: row.gid}}) "
            "SET i.digest = row.digest, i.contribution = row.contribution, i.causes = row.causes, "
            "i.project = row.project", {"rows": rows})


def unowned_incidents() -> Statement:
    """Incident records written before they kept their project (read at open; none afterwards)."""
    return (f"MATCH (i:{INCIDENT_LABEL}) WHERE i.project IS NULL RETURN i.name AS gid, i.contribution AS contribution",
            {})


def set_incident_projects(rows: list[dict[str, object]]) -> Statement:
    return (f"UNWIND $rows AS row MATCH (i:{INCIDENT_LABEL} {{name: row.gid}}) SET i.project = row.project",
            {"rows": rows})


def project_incidents(projects: list[str]) -> Statement:
    """The incidents of these projects with their causes' names (the records of other projects stay in the
    engine)."""
    return (f"MATCH (i:{INCIDENT_LABEL}) WHERE i.project IN $projects RETURN i.name AS gid, i.causes AS causes "
            "ORDER BY gid", {"projects": projects})


def unkeyed_incidents(keyed_prefix: str, limit: int) -> Statement:
    """Incident records whose contribution was stored before nodes were keyed by project (owners.py); none
    once the store has keyed them at open."""
    return (f"MATCH (i:{INCIDENT_LABEL}) WHERE NOT i.contribution STARTS WITH $prefix "
            "RETURN i.name AS gid, i.contribution AS contribution ORDER BY gid LIMIT $limit",
            {"prefix": keyed_prefix, "limit": limit})


def count_unowned() -> Statement:
    return f"MATCH (i:{INCIDENT_LABEL}) WHERE i.project = '' RETURN count(i) AS c", {}


def uncounted_incidents() -> Statement:
    """Incident records written before they kept their causes' names (read at open; none afterwards)."""
    return (f"MATCH (i:{INCIDENT_LABEL}) WHERE i.causes IS NULL RETURN i.name AS gid, i.contribution AS contribution",
            {})


def set_incident_causes(rows: list[dict[str, object]]) -> Statement:
    return (f"UNWIND $rows AS row MATCH (i:{INCIDENT_LABEL} {{name: row.gid}}) SET i.causes = row.causes",
            {"rows": rows})


def get_incident(gid: str) -> Statement:
    return (f"MATCH (i:{INCIDENT_LABEL} {{name: $gid}}) RETURN i.digest AS digest, i.contribution AS contribution",
            {"gid": gid})


def list_incidents() -> Statement:
    return f"MATCH (i:{INCIDENT_LABEL}) RETURN i.name AS gid ORDER BY gid", {}


def delete_incident(gid: str) -> Statement:
    return f"MATCH (i:{INCIDENT_LABEL} {{name: $gid}}) DELETE i", {"gid": gid}


def count_nodes(label: str) -> Statement:
    return f"MATCH (n:{label}) RETURN count(n) AS c", {}


def count_edges(rel: str) -> Statement:
    return f"MATCH ()-[r:{rel}]->() RETURN count(r) AS c", {}


def list_nodes(label: str) -> Statement:
    return (f"MATCH (n:{label}) RETURN n.name AS name, n.description AS description, n.incidents AS incidents, "
            "n.frequency AS frequency, n.conf_sum AS conf_sum, n.props AS props ORDER BY name", {})


def list_names(label: str) -> Statement:
    return f"MATCH (n:{label}) RETURN n.name AS name ORDER BY name", {}


def list_edges(group: EdgeGroup) -> Statement:
    src, rel, tgt = group
    return (f"MATCH (s:{src})-[r:{rel}]->(t:{tgt}) RETURN s.name AS source, t.name AS target, "
            "r.incidents AS incidents, r.frequency AS frequency, r.conf_sum AS conf_sum, r.props AS props "
            "ORDER BY source, target", {})


def top_causes(limit: int) -> Statement:
    return ("MATCH (c:Cause) OPTIONAL MATCH (c)-[:solved_by]->(r:Resolution) "
            "RETURN c.name AS name, c.description AS description, c.frequency AS frequency, "
            "c.conf_sum AS conf_sum, collect(r.name) AS resolutions "
            "ORDER BY frequency DESC, name LIMIT $limit", {"limit": limit})


def edge_groups(rel: RelType | None = None) -> list[EdgeGroup]:
    """(source label, relationship, target label) triples of the schema, in a stable order."""
    return sorted((s.value, r.value, t.value) for s, r, t in SCHEMA if rel is None or r is rel)


def group_rows(items: Iterable[tuple[EdgeGroup, dict[str, object]]]) -> dict[EdgeGroup, list[dict[str, object]]]:
    grouped: dict[EdgeGroup, list[dict[str, object]]] = defaultdict(list)
    for key, row in items:
        grouped[key].append(row)
    return dict(sorted(grouped.items()))


def clue_groups() -> list[EdgeGroup]:
    """The (clue label, relationship, Cause) groups of the schema: one per clue label."""
    return [g for g in edge_groups() if g[0] in CLUE_LABELS and g[2] == NodeType.CAUSE.value]


def recount_causes(group: EdgeGroup, names: list[str]) -> Statement:
    src, rel, tgt = group
    return (f"UNWIND $names AS nm MATCH (s:{src} {{name: nm}}) OPTIONAL MATCH (s)-[:{rel}]->(c:{tgt}) "
            "WITH s, count(c) AS k SET s.causes = k", {"names": names})


def backfill_causes(group: EdgeGroup) -> Statement:
    """Counts for clue nodes written before the count existed (run at open; a no-op afterwards)."""
    src, rel, tgt = group
    return (f"MATCH (s:{src}) WHERE s.causes IS NULL OPTIONAL MATCH (s)-[:{rel}]->(c:{tgt}) "
            "WITH s, count(c) AS k SET s.causes = k", {})


def clue_causes(group: EdgeGroup, names: list[str], sample: int) -> Statement:
    """Causes reached from the given clue names: primary-key lookups, then their own edges; each cause with the
    first `sample` incidents of its support (its whole list grows with the store)."""
    src, rel, tgt = group
    return (f"UNWIND $names AS nm MATCH (s:{src} {{name: nm}})-[:{rel}]->(c:{tgt}) "
            "RETURN s.name AS clue, s.causes AS shared_by, c.name AS name, c.description AS description, "
            "c.incidents[..$sample] AS incidents, c.frequency AS frequency, c.conf_sum AS conf_sum, c.props AS props "
            "ORDER BY clue, name", {"names": names, "sample": sample})


def causes_named(names: list[str], sample: int) -> Statement:
    """Causes by name, each with the first `sample` incidents of its support."""
    return ("UNWIND $names AS nm MATCH (c:Cause {name: nm}) RETURN c.name AS name, c.description AS description, "
            "c.incidents[..$sample] AS incidents, c.frequency AS frequency, c.conf_sum AS conf_sum, "
            "c.props AS props ORDER BY name", {"names": names, "sample": sample})


def feature_lines(feature: str, limit: int) -> Statement:
    """The first `limit` distinct non-empty descriptions of the symptoms a task feature is associated with, in
    the order of their first symptom's name: only they cross to the caller, however many the project has."""
    return (f"MATCH (f:{NodeType.TASK_FEATURE.value} {{name: $feature}})-[:{RelType.ASSOCIATED_WITH.value}]->"
            f"(t:{NodeType.SYMPTOM.value}) WHERE t.description <> '' "
            "WITH t.description AS line, min(t.name) AS first RETURN line ORDER BY first LIMIT $limit",
            {"feature": feature, "limit": limit})


def incident_causes(gids: list[str]) -> Statement:
    """The names of each incident's causes, by primary-key lookups (not its contribution, a few KB each)."""
    return (f"UNWIND $gids AS g MATCH (i:{INCIDENT_LABEL} {{name: g}}) RETURN i.name AS gid, i.causes AS causes "
            "ORDER BY gid", {"gids": gids})


def incident_contributions(gids: list[str]) -> Statement:
    return (f"UNWIND $gids AS g MATCH (i:{INCIDENT_LABEL} {{name: g}}) "
            "RETURN i.name AS gid, i.digest AS digest, i.contribution AS contribution ORDER BY gid", {"gids": gids})


def linked(group: EdgeGroup, names: list[str], support: bool = False) -> Statement:
    """Targets of one edge group from the given source names (key lookups, then their own edges); with `support`,
    one row per edge with the edge's support (the incidents that learned it)."""
    src, rel, tgt = group
    target = ("t.name AS name, t.description AS description, t.frequency AS frequency, t.conf_sum AS conf_sum, "
              "t.props AS props")
    match = f"UNWIND $names AS nm MATCH (s:{src} {{name: nm}})-[r:{rel}]->(t:{tgt}) "
    if support:  # an edge's support is bounded by its cause's, not shared by every source
        return match + f"RETURN [s.name] AS sources, r.incidents AS support, {target} ORDER BY name", {"names": names}
    # One row per target with its sources, and not its support list: ladybug reads a list property of a
    # target shared by many sources (one procedure of every cause) at about 0.25 ms an element.
    return match + f"WITH t, collect(s.name) AS sources RETURN sources, {target} ORDER BY name", {"names": names}
