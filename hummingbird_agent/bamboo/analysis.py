"""What a diagnosis produces: ranked candidate causes, past incidents, and the AnalysisResult.

Plain frozen values with `to_json`; the navigator fills them and the CLI, the tools and notes print them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hummingbird_agent import budgets

NOTHING_SIMILAR = "Nothing similar is known in the knowledge base"
NO_EXPLORER = "no explorer configured"


@dataclass(frozen=True, slots=True)
class Resolution:
    name: str
    description: str = ""
    steps: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CandidateCause:
    """A known cause reached by the clues: which clue types and names reach it, its support and fixes."""

    name: str
    description: str
    clue_types: tuple[str, ...]
    matched: tuple[str, ...]
    frequency: int
    confidence: float
    similarity: float
    incidents: tuple[str, ...]
    resolutions: tuple[Resolution, ...] = ()
    score: float = 0.0
    """How well the cause fits the new failure, 0-1 (the ranking key; low for every candidate = nothing fits)."""

    @property
    def match_score(self) -> int:
        return len(self.clue_types)

    @property
    def specific(self) -> bool:
        """Reached by more than the task's generic facts: a symptom, a component or a similar incident."""
        return any(t != "task_feature" for t in self.clue_types)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "score": round(self.score, 3),
                "match_score": self.match_score,
                "clue_types": list(self.clue_types), "matched": list(self.matched), "frequency": self.frequency,
                "confidence": round(self.confidence, 3), "similarity": round(self.similarity, 3),
                "incidents": list(self.incidents),
                "resolutions": [{"name": r.name, "description": r.description, "steps": list(r.steps)}
                                for r in self.resolutions]}


@dataclass(frozen=True, slots=True)
class PastIncident:
    """A stored incident found similar by the vector search, with its narrative summary."""

    incident_id: str
    score: float
    summary: str
    matched: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"incident_id": self.incident_id, "score": round(self.score, 3), "summary": self.summary,
                "matched": self.matched}


@dataclass(frozen=True, slots=True)
class Evidence:
    """Everything the knowledge base says about one failure, before any LLM call."""

    clues: dict[str, tuple[str, ...]]
    candidates: tuple[CandidateCause, ...]
    novel_leads: tuple[str, ...]
    similar: tuple[PastIncident, ...]

    @property
    def known(self) -> bool:
        """Whether a learned cause fits: the best candidate's fit score reaches the bar. Below it the
        diagnosis says no learned cause fits (project-wide facts alone do not make a failure known)."""
        return bool(self.candidates) and self.candidates[0].score >= budgets.BAMBOO_KNOWN_MIN_FIT


@dataclass(frozen=True, slots=True)
class AnalysisResult:
    """The navigator's answer (seed: root_cause, confidence, resolution, explanation, supporting_evidence,
    capability_gaps, email_content), plus the ranked candidates, novel leads and cited incidents."""

    incident_id: str
    root_cause: str
    confidence: float
    resolution: str
    explanation: str
    supporting_evidence: tuple[dict[str, Any], ...]
    capability_gaps: tuple[dict[str, str], ...] = ()
    email_content: str = ""
    candidates: tuple[CandidateCause, ...] = ()
    novel_leads: tuple[str, ...] = ()
    cited_incidents: tuple[str, ...] = ()
    known: bool = False
    investigation: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"incident_id": self.incident_id, "root_cause": self.root_cause,
                "confidence": round(self.confidence, 3), "resolution": self.resolution,
                "explanation": self.explanation, "supporting_evidence": list(self.supporting_evidence),
                "capability_gaps": list(self.capability_gaps), "email_content": self.email_content,
                "candidates": [c.to_json() for c in self.candidates], "novel_leads": list(self.novel_leads),
                "cited_incidents": list(self.cited_incidents), "known": self.known,
                "investigation": list(self.investigation)}

    def gap_lines(self) -> list[str]:
        """One line per investigation direction no available tool could follow (for the terminal and notes)."""
        return [f"capability gap: {g.get('investigation', '')} (needs: {g.get('suggested_tool_capability') or '?'})"
                for g in self.capability_gaps]

    def render(self) -> str:
        """Plain text for the terminal and for the workflow's context."""
        lines = [f"root cause: {self.root_cause} (confidence {self.confidence:.2f})",
                 f"resolution: {self.resolution or 'none known'}", f"explanation: {self.explanation}"]
        if self.candidates:
            lines.append("candidate causes:")
            lines += [f"  {n}. {c.name} (clue types {c.match_score}: {', '.join(c.clue_types)}; "
                      f"incidents {c.frequency})" for n, c in enumerate(self.candidates, 1)]
        if self.novel_leads:
            lines.append("novel leads (symptoms with no known cause):")
            lines += [f"  - {s}" for s in self.novel_leads]
        if self.cited_incidents:
            lines.append("past incidents: " + ", ".join(self.cited_incidents))
        lines += self.gap_lines()
        lines += [f"note: {n}" for n in self.investigation]
        if self.email_content:
            lines += ["", "draft for the submitter:", self.email_content]
        return "\n".join(lines)
