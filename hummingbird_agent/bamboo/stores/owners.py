"""Whose a stored node is. The graph keys every node by the project of the incident that learned it
(`<project>` + SEP + `<name>`), so identical names in two projects are two nodes, each with its own
description and properties; a project's view (scoped.py) reads its own keys and shows the plain names. The
nodes of incidents without a project keep their plain names: they are nobody's, and no view reads them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

# A project path never holds a control character, so the first SEP ends the owner whatever the name holds.
SEP = "\x1f"
# The key a contribution keyed by project carries; it sorts first in the stored JSON (sort_keys), which is how
# the store finds the records written before keys (`cypher.unkeyed_incidents`).
OWNER = "_owner"
KEYED_PREFIX = '{"' + OWNER + '": '


def key(project: str, name: str) -> str:
    """The stored name of `name` learned from `project` (no project: the name itself, nobody's)."""
    return f"{project}{SEP}{name}" if project else name


def owner(stored: str) -> str:
    """The project a stored name belongs to; "" (nobody) for a plain name."""
    head, sep, _ = stored.partition(SEP)
    return head if sep else ""


def plain(stored: str) -> str:
    """The name as learned, without its owner."""
    head, sep, rest = stored.partition(SEP)
    return rest if sep else head


def keys(projects: Collection[str], names: Iterable[str]) -> list[str]:
    """The stored names of `names` in each of `projects`, sorted."""
    return sorted({key(p, n) for n in names for p in projects})


def keyed(contribution: dict[str, Any], project: str) -> dict[str, Any]:
    """An incident's contribution with every node and edge end keyed by `project` (names already keyed, from a
    contribution keyed before, are taken plain first)."""
    nodes = [{**n, "name": key(project, plain(n["name"]))} for n in contribution["nodes"]]
    edges = [{**e, "src": key(project, plain(e["src"])), "tgt": key(project, plain(e["tgt"]))}
             for e in contribution["edges"]]
    return {OWNER: project, "nodes": nodes, "edges": edges}


def unkeyed(contribution: dict[str, Any]) -> dict[str, Any]:
    """A contribution as it was learned: plain names, no owner."""
    return {"nodes": [{**n, "name": plain(n["name"])} for n in contribution["nodes"]],
            "edges": [{**e, "src": plain(e["src"]), "tgt": plain(e["tgt"])} for e in contribution["edges"]]}


def shown(stored: str) -> str:
    """A stored name for an operator who sees every project: `name (project)`."""
    found = owner(stored)
    return f"{plain(stored)} ({found})" if found else stored
