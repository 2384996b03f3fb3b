"""The state of one investigation session: what was asked, the proposal awaiting review, the runs that ran,
the tool gaps, and where the session stands. Frozen inside; `to_json`/`from_json` at the session store."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from hummingbird_agent import budgets
from hummingbird_agent.errors import PermanentError

Status = Literal["open", "stored", "abandoned"]
KIND = "investigation"


@dataclass(frozen=True, slots=True)
class Proposal:
    """Code shown for review: the tools it names (sorted) and which of them change state."""

    code: str
    tools: tuple[str, ...]
    modifies: tuple[str, ...]
    prompt: str
    """The utterance it answers (the `prompt` of its (prompt -> tools) example)."""
    started: bool = False
    """Saved before approved state-changing code runs: a redelivered turn finds it and never runs it twice."""
    turn: int = 0
    """The turn that proposed it (0 in sessions saved before proposals had ids)."""
    author: int | None = None
    """GitLab user id of who brought this code: the reply whose question the planner answered with it, or whose
    corrected block it is; None at the terminal (one operator, no user id)."""

    @property
    def id(self) -> str:
        """What `approve <id>` and `reject <id>` name: the same code proposed again has a new id, so an answer
        binds to what was shown, and a late copy of an earlier one matches nothing."""
        digest = hashlib.sha256(f"{self.turn}\n{self.code}".encode()).hexdigest()
        return digest[:budgets.INVESTIGATE_PROPOSAL_ID_HEX]


@dataclass(frozen=True, slots=True)
class Run:
    """A block that ran: its code, the tools it called, who let it run, and a preview of what it returned."""

    prompt: str
    code: str
    tools: tuple[str, ...]
    approved: bool
    """A Developer+ `approve` (or the operator at the terminal), not the read-only auto-run."""
    ok: bool
    preview: str


@dataclass(frozen=True, slots=True)
class Finalize:
    """`finalize cause: ... [resolution: ...]`, shown and waiting for `confirm`."""

    cause: str
    resolution: str = ""


@dataclass(frozen=True, slots=True)
class InvestigationState:
    session_id: str
    question: str
    task: Mapping[str, Any]
    turns: int = 0
    status: Status = "open"
    pending: Proposal | None = None
    runs: tuple[Run, ...] = ()
    gaps: tuple[Mapping[str, str], ...] = ()
    history: tuple[tuple[str, str], ...] = ()
    """(who, text) of each turn: `human` utterances and `bot` replies, for the planner's recent context."""
    finalizing: Finalize | None = None
    stored_nodes: tuple[str, ...] = field(default=())

    @property
    def incident_id(self) -> str:
        return f"investigate:{self.session_id}"

    def said(self, who: str, text: str) -> InvestigationState:
        return replace(self, history=(*self.history, (who, text)))

    def to_json(self) -> dict[str, Any]:
        return {"kind": KIND, **asdict(self)}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> InvestigationState:
        """The saved state; PermanentError (one line) when the session is not an investigation's."""
        if data.get("kind") != KIND:
            raise PermanentError("this session is not an investigation")
        try:
            pending = data.get("pending")
            final = data.get("finalizing")
            return InvestigationState(
                str(data["session_id"]), str(data["question"]), dict(data.get("task") or {}),
                int(data.get("turns") or 0), data.get("status") or "open",
                Proposal(**{**pending, "tools": tuple(pending["tools"]), "modifies": tuple(pending["modifies"])})
                if pending else None,
                tuple(Run(**{**r, "tools": tuple(r["tools"])}) for r in data.get("runs") or ()),
                tuple(dict(g) for g in data.get("gaps") or ()),
                tuple((str(w), str(t)) for w, t in data.get("history") or ()),
                Finalize(**final) if final else None,
                tuple(data.get("stored_nodes") or ()))
        except (KeyError, TypeError, ValueError) as exc:
            raise PermanentError(f"unreadable investigation session: {exc}") from None
