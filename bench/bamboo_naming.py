"""The scripted model of bench/bamboo_retrieval.py, served by the fake Gemini server: it names each learned
incident's cause by a paraphrase of what the discussion says the cause is, as a real model would, and reuses an
existing name only when one the extraction prompt shows reads like its own wording.

Variants of one label differ by casing, punctuation, a generic prefix, word order and synonyms. Which variant an
incident gets is fixed by a hash of its discussion, so runs are deterministic. The model first writes its own
variant, then compares it with each name under the prompt's existing causes by their words (case, punctuation,
order and the filler words of `FILLER` aside; numbers are words; no synonyms): it copies the closest shown name
when they share at least `REUSE_AT` of their words, and keeps its own wording otherwise. It never looks at which
label a shown name belongs to, so it splits a cause whose shown name it does not recognise (a synonym variant)
and would merge two causes whose names share enough words. Review approves; the summary echoes the discussion.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

EXTRACT = "You turn one resolved incident"
REVIEW = "You review a knowledge graph"
_CAUSE = re.compile(r"^Cause: (.+)$", re.M)
# Words a model reads past when it compares two cause names.
FILLER = frozenset({"root", "cause", "the", "of"})
# Share of words (Jaccard) at which the model takes a shown name for its own: "the same words, told apart only
# by filler, case, punctuation or order" is 1.0; two categories of one project differ in a number (0.67-0.71).
REUSE_AT = 0.8


def variants(repo: str, category: int) -> tuple[str, ...]:
    """Names a model might give one cause; the first is the label itself."""
    return (f"{repo} failure category {category}".lower(),
            f"{repo.upper()} Failure Category {category}.",
            f"Root cause: {repo} failure category {category}",
            f"failure category {category} of {repo}",
            f"{repo} build error, class {category}",
            f"The {repo} failure category #{category}")


def label(repo: str, category: int) -> str:
    return variants(repo, category)[0]


def _section(text: str, title: str) -> str:
    parts = text.split(f"## {title}", 1)
    return parts[1].split("\n## ", 1)[0] if len(parts) == 2 else ""


def _facts(user: str, kind: str) -> list[str]:
    return re.findall(rf"^- {kind}: (.+)$", _section(user, "Facts extracted by code"), re.M)


def _shown(user: str) -> list[str]:
    """Names listed under the prompt's existing causes (`- name: description` or `- name`)."""
    block = _section(user, "Existing causes")
    return [m.group(1).strip() for m in re.finditer(r"^- (.+?)(?: — .*)?$", block, re.M)]


def words(name: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9]+", name.lower()) if w not in FILLER)


def likeness(a: str, b: str) -> float:
    """Jaccard of the two names' words."""
    x, y = words(a), words(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def reuse(own: str, shown: list[str]) -> str | None:
    """The shown name the model takes for its own wording (the likest, first shown on a tie), if any."""
    best = max(shown, key=lambda name: likeness(own, name), default=None)
    return best if best is not None and likeness(own, best) >= REUSE_AT else None


class NamingModel:
    """Answers generateContent bodies; `calls["reused"]` counts the shown names it copied."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def name(self, user: str) -> str | None:
        found = _CAUSE.search(_section(user, "Discussion and fix"))
        if not found:
            return None
        family = variants(*json.loads(found.group(1)))
        pick = int.from_bytes(hashlib.sha256(user.split("## Discussion and fix", 1)[1].encode()).digest()[:4], "big")
        own = family[pick % len(family)]
        reused = reuse(own, _shown(user))
        if reused is not None:
            self.calls["reused"] = self.calls.get("reused", 0) + 1
        return reused or own

    def answer(self, system: str, user: str) -> str:
        if system.startswith(EXTRACT):
            cause = self.name(user)
            if cause is None:
                return "{}"
            features = [f for f in _facts(user, "Task_Feature") if f.startswith("project=")]
            return json.dumps({"causes": [{"name": cause, "description": "", "confidence": 0.9,
                                           "symptoms": _facts(user, "Symptom"), "features": features}],
                               "procedures": [{"name": "read the build log", "tools": ["get_job_log"],
                                               "cause": cause}]})
        if system.startswith(REVIEW):
            return json.dumps({"approved": True, "confidence": 1.0})
        return user.split("## Discussion", 1)[-1].strip()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        """One Gemini GenerateContentResponse for one request body."""
        system = " ".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts", []))
        user = " ".join(p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", []))
        text = self.answer(system, user)
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP",
                                "index": 0}], "modelVersion": "bench-naming"}
