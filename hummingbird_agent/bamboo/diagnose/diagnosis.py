"""The navigator's LLM calls: the root-cause diagnosis (JSON) and the draft for the submitter (text),
with the evidence rendered into their prompts, and the fallback used when the diagnosis call fails.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.analysis import NOTHING_SIMILAR, AnalysisResult, CandidateCause, Evidence
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.prompts import load_prompt, render
from hummingbird_agent.bamboo.strategies.causal import clip

UNKNOWN_CAUSE = "Unable to determine root cause"


@dataclass(frozen=True, slots=True)
class Diagnosis:
    root_cause: str
    confidence: float
    resolution: str
    explanation: str
    supporting_evidence: tuple[dict[str, Any], ...] = ()


def render_evidence(evidence: Evidence) -> dict[str, str]:
    clues = "\n".join(f"- {kind}: {name}" for kind, names in evidence.clues.items() for name in names)
    similar = [f"- incident_id {p.incident_id} (score {p.score:.2f}): "
               f"{clip(p.summary, budgets.BAMBOO_PROMPT_SUMMARY_CHARS) or '(no summary)'}" for p in evidence.similar]
    candidates = "\n".join(_candidate_lines(evidence))
    return {"clues": clues or "(none)", "candidates": candidates or "(no known cause matches)",
            "novel": "\n".join(f"- {s}" for s in evidence.novel_leads) or "(none)",
            "similar": "\n".join(similar) or "(no similar past incident)"}


def _candidate_lines(evidence: Evidence) -> list[str]:
    """One line per ranked candidate, headed by a warning when none fits well enough to be a known cause."""
    candidates = [_candidate_line(rank, c) for rank, c in enumerate(evidence.candidates, 1)]
    if candidates and not evidence.known:
        candidates.insert(0, f"(no learned cause fits: the best fit is {evidence.candidates[0].score:.2f}, below "
                             f"{budgets.BAMBOO_KNOWN_MIN_FIT}; the ones below are the closest, not matches)")
    return candidates


def _candidate_line(rank: int, c: CandidateCause) -> str:
    fixes = "; ".join(r.name + (f" (steps: {' / '.join(r.steps)})" if r.steps else "") for r in c.resolutions)
    return (f"{rank}. {c.name} — clue types {c.match_score} ({', '.join(c.clue_types)}), "
            f"fit {c.score:.2f}, matched {', '.join(c.matched) or '-'}, "
            f"incidents {c.frequency} {list(c.incidents)}, "
            f"confidence {c.confidence:.2f}; resolutions: {fixes or 'none recorded'}")


def _confidence(value: Any) -> float:
    try:
        return min(max(float(value), 0.0), 1.0)
    except (TypeError, ValueError):
        return 0.0


def _support(raw: Any) -> tuple[dict[str, Any], ...]:
    items = raw if isinstance(raw, list) else []
    return tuple({k: str(v) for k, v in item.items() if k in ("source", "evidence", "incident_id", "relevance")}
                 for item in items if isinstance(item, dict))


async def diagnose(llm: JsonLLM, guidance: str, task: Mapping[str, Any], evidence: Evidence,
                   investigation: Mapping[str, Any]) -> Diagnosis:
    """One diagnosis call; raises the model's typed errors (the navigator falls back)."""
    user = render("diagnose_user", guidance=guidance or "(none)", task=json.dumps(task, default=str, sort_keys=True),
                  investigation=clip(json.dumps(investigation, default=str, sort_keys=True),
                                     budgets.BAMBOO_PROMPT_LOG_CHARS) if investigation else "(none)",
                  **render_evidence(evidence))
    answer = await llm.complete_json(load_prompt("diagnose_system"), user)
    root = str(answer.get("root_cause") or "").strip() or UNKNOWN_CAUSE
    explanation = str(answer.get("explanation") or answer.get("reasoning") or "").strip()
    return Diagnosis(root, _confidence(answer.get("confidence")), str(answer.get("resolution") or "").strip(),
                     _plain(explanation, evidence), _support(answer.get("supporting_evidence")))


def _plain(explanation: str, evidence: Evidence) -> str:
    """A failure like nothing stored says so first, whatever the model wrote."""
    if evidence.known or explanation.startswith(NOTHING_SIMILAR):
        return explanation
    return f"{NOTHING_SIMILAR}. {explanation}".strip()


def fallback_diagnosis(evidence: Evidence) -> Diagnosis:
    """Without the LLM: the top specific candidate, with a confidence scaled by the clue types that reach it."""
    top = next((c for c in evidence.candidates if c.specific), None)
    if top is None:
        return Diagnosis(UNKNOWN_CAUSE, 0.0, "", _plain("The diagnosis could not be completed.", evidence))
    share = top.match_score / 5  # clue types: symptom, task feature, component, environment, similar incident
    fix = top.resolutions[0].name if top.resolutions else ""
    return Diagnosis(top.name, round(min(top.confidence, share), 3), fix,
                     f"Ranked first by the knowledge base: reached by {', '.join(top.clue_types)}.",
                     ({"source": "graph", "evidence": ", ".join(top.matched)},))


async def draft_email(llm: JsonLLM, guidance: str, task: Mapping[str, Any], result: AnalysisResult) -> str:
    diagnosis = json.dumps({k: v for k, v in result.to_json().items()
                            if k in ("root_cause", "confidence", "resolution", "explanation", "novel_leads",
                                     "cited_incidents")}, sort_keys=True)
    user = render("draft_user", guidance=guidance or "(none)", task=json.dumps(task, default=str, sort_keys=True),
                  diagnosis=diagnosis)
    return await llm.complete_text(load_prompt("draft_system"), user)
