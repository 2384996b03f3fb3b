"""The audited result note (pure): the answer, a collapsed "What I looked at" (tool calls in order and
every data gap) and a compact footer (workflow, model, budget, tokens, time, session, how to continue).

Near the size limit the footer stays whole, the details are trimmed first, the answer last.
"""

from __future__ import annotations

from dataclasses import dataclass

from hummingbird_agent.agent.audit import CallRecord
from hummingbird_agent.agent.links import removed_line
from hummingbird_agent.gitlab.note_text import FOOTER_CONTINUE
from hummingbird_agent.gitlab.quiet import no_references
from hummingbird_agent.models.base import Usage

HELP_COMMAND = "/hummingbird help"
# The first line of a note whose run had to read data and read none (agent/loop.py LoopResult.no_data).
NO_DATA_LINE = "⚠️ **No pipeline or merge-request data was read: this is not an analysis of the failure.**"
NO_CALLS = "No tool calls in this run: it read no data."
NO_DATA_DETAIL = "No data-source call succeeded: the answer rests on the task's ids alone."
TRUNCATION_NOTICE = "\n\n**[truncated: the result was longer than a GitLab note allows]**"
_DETAILS_HEAD = "<details><summary>What I looked at</summary>\n\n"
_DETAILS_TAIL = "\n\n</details>"


@dataclass(frozen=True, slots=True)
class RunAudit:
    """Facts of one finished run that the note states. `stop` says why a run without an answer ended:
    "budget", "model_error" or "tool_failure" ("" when the model answered)."""

    workflow: str
    provider: str
    model: str
    session_id: str
    iterations: int
    max_iterations: int
    usage: Usage
    wall_s: float
    calls: tuple[CallRecord, ...] = ()
    source_gaps: tuple[str, ...] = ()
    stop: str = ""
    error_class: str = ""
    correlation_id: str = ""
    no_data: bool = False
    """The workflow had to read data and no data-source call succeeded."""
    unlinked: int = 0
    """Links to runs the answer named but the run never saw, removed from it (agent/links.py)."""
    stop_detail: str = ""
    """A model call that timed out: what happened (the adapter's own sentence: silent how long, retried or not)."""

    def gaps(self) -> list[str]:
        """Every data gap once, in the order met."""
        return list(dict.fromkeys([*self.source_gaps, *(g for c in self.calls for g in c.gaps)]))


def footer(audit: RunAudit) -> str:
    """One compact line under a rule."""
    tin, tout, cached = audit.usage.counts()
    parts = [
        f"`{audit.workflow}`",
        f"{audit.provider}/{audit.model}",
        f"{audit.iterations}/{audit.max_iterations} iterations",
        f"tokens {_k(tin)} in / {_k(tout)} out / {_k(cached)} cached",
        f"{audit.wall_s:.0f} s",
        f"session `{audit.session_id}`",
        f"{FOOTER_CONTINUE} · `{HELP_COMMAND}`",
    ]
    return "---\n<sub>" + " · ".join(parts) + "</sub>"


def stop_line(audit: RunAudit) -> str:
    """Why a run without an answer ended, with the id to find its log lines; "" when it answered."""
    if not audit.stop:
        return ""
    why = {
        "budget": f"the iteration budget ran out ({audit.iterations} of {audit.max_iterations} iterations used)",
        "model_error": (f"the model call timed out: {audit.stop_detail}" if audit.stop_detail else
                        f"the model call failed ({audit.error_class or 'model error'})"),
        "tool_failure": "tool calls failed and the model gave no answer",
    }.get(audit.stop, "the run ended without an answer")
    return f"**Hummingbird stopped: {why}.** Correlation id: `{audit.correlation_id}`."


def failure_text(error_class: str, correlation_id: str) -> str:
    """A run that could not start: the error's class and the id of its log lines, never its text."""
    return f"**Hummingbird stopped: the run could not start ({error_class}).** Correlation id: `{correlation_id}`."


def call_line(index: int, call: CallRecord) -> str:
    args = " ".join(f"{name}=`{_code(value)}`" for name, value in call.arguments)
    outcome = f"error `{call.error_kind}`: {_plain(call.error)}" if call.error_kind else _size(call.result_bytes)
    spilled = ", spilled to the sandbox" if call.spilled else ""
    return f"{index}. `{call.tool}`{' ' + args if args else ''} → {outcome}{spilled}"


def details_lines(audit: RunAudit) -> tuple[list[str], list[str]]:
    """(call lines, gap lines) of the collapsed section."""
    calls = [call_line(i, c) for i, c in enumerate(audit.calls, 1)] or [NO_CALLS]
    if audit.no_data and audit.calls:
        calls.insert(0, NO_DATA_DETAIL)
    calls[:0] = removed_line(audit.unlinked)
    gaps = [f"- {_plain(g)}" for g in audit.gaps()]
    return calls, gaps


def details(calls: list[str], gaps: list[str], hidden_calls: int = 0, hidden_gaps: int = 0) -> str:
    lines = list(calls)
    if hidden_calls:
        lines.append(f"… {hidden_calls} more tool calls not shown (note size limit)")
    if gaps or hidden_gaps:
        lines += ["", "**Data gaps**", *gaps]
        if hidden_gaps:
            lines.append(f"- … {hidden_gaps} more not shown (note size limit)")
    return _DETAILS_HEAD + "\n".join(lines) + _DETAILS_TAIL


def audited_note(answer: str, audit: RunAudit, limit: int) -> str:
    """answer, stop line, details and footer within `limit` characters: the footer is never cut, the
    details are trimmed (calls first, then gaps) before the answer is."""
    warning = NO_DATA_LINE if audit.no_data else ""
    head = "\n\n".join(p for p in (warning, answer.strip(), stop_line(audit)) if p)
    tail = "\n\n" + footer(audit)
    calls, gaps = details_lines(audit)
    room = limit - len(head) - len(tail) - 2
    block = _fit_details(calls, gaps, room)
    if block is None:
        block = details([], [], len(calls), len(gaps))
        head = _cut(head, limit - len(tail) - len(block) - 2)
    return f"{head}\n\n{block}{tail}" if head else f"{block}{tail}"


def _fit_details(calls: list[str], gaps: list[str], room: int) -> str | None:
    """The longest details block within `room`: drop call lines from the end, then gap lines."""
    full = details(calls, gaps)
    if len(full) <= room:
        return full
    skeleton = len(details([], [], 1, 1))
    kept_gaps, used = _prefix(gaps, room - skeleton)
    kept_calls, _ = _prefix(calls, room - skeleton - used)
    if not kept_gaps and not kept_calls and skeleton > room:
        return None
    return details(kept_calls, kept_gaps, len(calls) - len(kept_calls), len(gaps) - len(kept_gaps))


def _prefix(lines: list[str], room: int) -> tuple[list[str], int]:
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > room:
            break
        kept.append(line)
        used += len(line) + 1
    return kept, used


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(TRUNCATION_NOTICE))] + TRUNCATION_NOTICE


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MB"
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} B"


def _code(text: str) -> str:
    """Text safe inside an inline code span."""
    return text.replace("`", "'").replace("\n", " ")


def _plain(text: str) -> str:
    """Untrusted text shown as plain markdown: no HTML (it could close the details block), no line breaks, no
    mention or reference."""
    return no_references(" ".join(text.replace("<", "&lt;").replace(">", "&gt;").split()))
