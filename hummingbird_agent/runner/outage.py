"""The outage guard: when MRs of one project fail the same way within a short window, later ones are pointed to
the first diagnosis instead of paying for the same model run again.

Per process (each replica keeps its own memory): at worst every replica runs the model once per outage.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from hummingbird_agent import budgets
from hummingbird_agent.triage.model import Triage

Key = tuple[str, frozenset[tuple[str, ...]]]


@dataclass(slots=True)
class _Outage:
    first_mr: int
    link: str
    started: float
    mrs: set[int] = field(default_factory=set)


class OutageGuard:
    def __init__(self) -> None:
        self._seen: OrderedDict[Key, _Outage] = OrderedDict()

    @staticmethod
    def key(project: str, triage: Triage) -> Key | None:
        """What makes two MRs' failures the same: every failed check's fingerprint; None when any check has
        none (a generic or unread failure says nothing about another MR's)."""
        prints = triage.fingerprints()
        if not prints or any(p.generic for p in prints) or triage.omitted:
            return None
        return project, frozenset(p.lines for p in prints)

    def claim(self, key: Key, mr_iid: int, link: str, now: float, min_mrs: int, window_s: float) -> str | None:
        """The first diagnosis's link when this MR is the `min_mrs`-th or later of the window to fail this way;
        None when this MR should get its own run (it then becomes the first one, if none is)."""
        outage = self._seen.get(key)
        if outage is not None and now - outage.started > window_s:
            del self._seen[key]
            outage = None
        if outage is None:
            self._seen[key] = _Outage(mr_iid, link, now, {mr_iid})
            while len(self._seen) > budgets.TRIAGE_OUTAGE_MAX_ENTRIES:
                self._seen.popitem(last=False)
            return None
        if mr_iid == outage.first_mr:
            return None
        outage.mrs.add(mr_iid)
        return outage.link if len(outage.mrs) >= min_mrs else None
