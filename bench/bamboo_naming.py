"""The scripted model of bench/bamboo_retrieval.py, served by the fake Gemini server: it names each learned
incident's cause by a paraphrase of its label, as a real model would, and reuses an existing name only when the
extraction prompt shows it.

Variants of one label differ by casing, punctuation, a generic prefix, word order and synonyms. Which variant an
incident gets is fixed by a hash of its discussion, so runs are deterministic. When the prompt's list of existing
causes holds a name of the same label family, the model copies that name (a model recognising its cause among the
ones it is shown); otherwise it writes its own variant. Review approves; the summary echoes the discussion.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

EXTRACT = "You turn one resolved incident"
REVIEW = "You review a knowledge graph"
_CAUSE = re.compile(r"^Cause: (.+)$", re.M)


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


class NamingModel:
    """Answers generateContent bodies; `family` maps a label to its variants, filled as labels are seen."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def name(self, user: str) -> str | None:
        found = _CAUSE.search(_section(user, "Discussion and fix"))
        if not found:
            return None
        repo, category = json.loads(found.group(1))
        family = variants(repo, category)
        reused = next((s for s in _shown(user) if s in family), None)
        if reused is not None:
            self.calls["reused"] = self.calls.get("reused", 0) + 1
            return reused
        pick = int.from_bytes(hashlib.sha256(user.split("## Discussion and fix", 1)[1].encode()).digest()[:4], "big")
        return family[pick % len(family)]

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
