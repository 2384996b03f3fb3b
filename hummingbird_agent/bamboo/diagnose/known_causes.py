"""The knowledge base as the triage asks it: the learned cause that fits a failure's lines above the
known-fit bar, with its resolution (no model call: the same ranking the knowledge tools use)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.diagnose.knowledge_tools import candidate_causes
from hummingbird_agent.bamboo.stores.base import Stores
from hummingbird_agent.bamboo.stores.scoped import Scope, scoped
from hummingbird_agent.triage.model import KnownCause


class StoredCauses:
    """`KnownCauses` over open stores: a project's failure matched against what its projects learned (itself and
    its `share_groups`), never against another project's causes."""

    def __init__(self, stores: Stores, share_groups: Sequence[Sequence[str]] = ()) -> None:
        self._stores, self._groups = stores, share_groups

    async def match(self, project: str, lines: Sequence[str], features: Mapping[str, str],
                    log_tail: str = "") -> KnownCause | None:
        clues = tuple(f"{name}={value}" for name, value in sorted(features.items()) if value)
        view = scoped(self._stores, Scope.of(project, self._groups))
        found = await candidate_causes(view, list(lines), project, clues, log_tail)
        best = next(iter(found["candidates"]), None)
        if best is None or float(best["score"]) < budgets.BAMBOO_KNOWN_MIN_FIT:
            return None
        fixes = best.get("resolutions") or []
        resolution = (fixes[0].get("description") or fixes[0].get("name") or "") if fixes else ""
        return KnownCause(str(best["name"]), float(best["score"]), str(resolution), tuple(best["incidents"]))
