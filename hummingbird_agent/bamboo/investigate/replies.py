"""What a human says in an investigation (parsed) and what the bot answers (formatted): pure functions,
shared by the MR thread and the terminal."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.explore.orchestration import RunOutcome
from hummingbird_agent.bamboo.investigate.state import Finalize, Proposal

_FINALIZE = re.compile(r"^\s*finali[sz]e\b\s*(?:cause:\s*(?P<cause>.*?))?\s*(?:\bresolution:\s*(?P<res>.*))?\s*$",
                       re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\n(?P<code>.*?)```", re.S)
WORDS = ("approve", "reject", "confirm", "abandon")
_NAMED_ID = re.compile(r"^(?P<word>approve|reject)[.!]?\s+`?(?P<id>[0-9a-f]{4,64})`?[.!]?$", re.I)
HOW_TO_ANSWER = ("Reply `approve {id}` to run it, `reject {id}` to drop it, or reply with corrected code in a "
                 "```python block.")
COMMANDS_HELP = ("Ask a question, or reply `finalize cause: <cause> [resolution: <resolution>]` to store what was "
                 "found, or `abandon`.")


@dataclass(frozen=True, slots=True)
class Said:
    """One parsed utterance: `word` is approve/reject/confirm/abandon/finalize/code/question; an approve's or
    reject's `text` is the proposal id it names (empty: none)."""

    word: str
    text: str = ""
    finalize: Finalize | None = None
    by: int | None = None
    """GitLab user id of who said it in a thread; None at the terminal."""


def parse(text: str) -> Said:
    body = text.strip()
    first = body.split(maxsplit=1)[0].lower().strip(".!") if body else ""
    if first in WORDS and len(body.split()) == 1:
        return Said(first)
    named = _NAMED_ID.match(body)
    if named:
        return Said(named.group("word").lower(), named.group("id").lower())
    found = _FINALIZE.match(body)
    if first.startswith("finali") and found:
        cause, res = (found.group("cause") or "").strip(), (found.group("res") or "").strip()
        return Said("finalize", body, Finalize(cause, res) if cause else None)
    fenced = _FENCE.search(body)
    if fenced:
        return Said("code", fenced.group("code").strip())
    return Said("question", body)


def tool_lines(proposal: Proposal) -> list[str]:
    return [f"- `{t}` {'**changes state**' if t in proposal.modifies else 'reads only'}" for t in proposal.tools]


def proposal_text(proposal: Proposal, ran: str) -> str:
    """The proposal as shown for review; `ran` is the run's report when it ran at once (read-only)."""
    lines = [f"**Proposed code** `{proposal.id}`", "", "```python", proposal.code, "```", "",
             "Tools it calls:" if proposal.tools else "It calls no tool by name.", *tool_lines(proposal), ""]
    if ran:
        lines += ["It only reads, so it ran at once.", "", ran]
    else:
        why = "It changes state" if proposal.modifies else "Read-only code waits for review here"
        lines += [f"{why}: it runs only after a Developer+ replies `approve {proposal.id}`. "
                  + HOW_TO_ANSWER.format(id=proposal.id)]
    return "\n".join(lines)


def binding_refusal(pending: Proposal, said: Said) -> str:
    """Why this `approve` / `reject` does nothing ("" when it names the proposal waiting): it names no id, or
    another proposal's. One line, naming the id waiting."""
    word, effect = said.word, "nothing ran" if said.word == "approve" else "nothing was dropped"
    if not said.text:
        return (f"Name the proposal you {word}: reply `{word} {pending.id}`; {effect}. A bare `{word}` cannot say "
                "which code was read.")
    if said.text != pending.id:
        return (f"The proposal changed: `{said.text}` is not the one waiting, which is `{pending.id}`; {effect}. "
                f"Read it above, then reply `{word} {pending.id}`.")
    return ""


def approval_refusal(pending: Proposal, said: Said, other_approver: bool) -> str:
    """Why this approval runs nothing ("" when it may run): it is not bound to the proposal waiting, or (when the
    project needs another approver) its sayer wrote or asked for the code."""
    if refusal := binding_refusal(pending, said):
        return refusal
    if other_approver and pending.author is not None and pending.author == said.by:
        return ("You wrote or asked for this code, and this project needs another Developer+ to approve it; "
                f"nothing ran. Someone else may reply `approve {pending.id}`.")
    return ""


def run_report(outcome: RunOutcome) -> str:
    calls = [f"- `{c.tool}` {'ok' if c.ok else 'refused or failed: ' + c.detail}" for c in outcome.calls]
    lines = ["**Calls**", *(calls or ["- none"])]
    if outcome.error:
        lines += ["", f"The code failed: {outcome.error}"]
    else:
        lines += ["", "**Result**", "```json", preview(outcome.value), "```"]
    return "\n".join(lines)


def preview(value: Any) -> str:
    text = json.dumps(value, default=str, indent=1, sort_keys=True)
    cap = budgets.INVESTIGATE_RESULT_PREVIEW_CHARS
    return text if len(text) <= cap else text[:cap] + f"\n... ({len(text) - cap} more characters)"


def gap_lines(gaps: Sequence[Mapping[str, str]]) -> list[str]:
    return [f"- {g.get('investigation', '')}" + (f" (a tool that would help: {g['suggested_tool_capability']})"
                                                  if g.get("suggested_tool_capability") else "") for g in gaps]


def finalize_text(incident_id: str, plan: Sequence[tuple[str, str, bool]], gaps: Sequence[Mapping[str, str]]) -> str:
    """The preview: each (type, name, already stored) and the tool gaps; `confirm` stores it."""
    lines = [f"**To be stored** as incident `{incident_id}`:", ""]
    lines += [f"- {kind} `{name}` ({'merges with the stored one' if known else 'new'})" for kind, name, known in plan]
    if gaps:
        lines += ["", "**Tool gaps** (directions no tool addresses):", *gap_lines(gaps)]
    lines += ["", "Reply `confirm` to store it, `finalize cause: ...` again to change it, or `abandon`."]
    return "\n".join(lines)


def stored_text(incident_id: str, names: Collection[str], examples: int) -> str:
    return (f"**Stored** incident `{incident_id}`: {', '.join(f'`{n}`' for n in sorted(names))}. "
            f"{examples} approved run(s) now guide tool selection. The investigation is closed.")
