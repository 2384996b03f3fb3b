"""Texts of the notes the bot posts: placeholder, result, failure, help, errors; size-capped.

Pure functions: no API calls here, so every body the bot can post is unit-tested.
"""

from __future__ import annotations

from collections.abc import Mapping

from hummingbird_agent import budgets
from hummingbird_agent.gitlab.markers import SessionMarker, format_marker, inert
from hummingbird_agent.gitlab.quiet import quiet_markdown

PLACEHOLDER_TEXT = "Running the workflow..."
FAILURE_TEXT = "Hummingbird analysis failed."
# The audit footer's way to continue (agent/report.py), and what replaces it when the session was not saved
# or the note was only printed (`run` without --post: there is no thread to reply in).
FOOTER_CONTINUE = "reply to continue"
FOOTER_UNSAVED = "session not saved, a reply cannot continue it"
FOOTER_UNPOSTED = "printed only, not posted: there is no thread to reply in"
FOOTER_UNKEPT = "session not kept (`run --post` without --save-session), a reply cannot continue it"
REPLY_PROMPT = "_Reply to this thread to ask a follow-up question; the agent continues with the same context._"
UNSAVED_NOTICE = ("_This conversation could not be saved, so a reply cannot continue it; start a new run with "
                  "`/hummingbird <workflow>`._")
TRUNCATION_NOTICE = "\n\n**[truncated: the result was longer than a GitLab note allows]**"
COMMAND = "/hummingbird"


def mr_url(gitlab_url: str, project: str, iid: int | str) -> str:
    """The web page of a merge request."""
    return f"{gitlab_url.rstrip('/')}/{project}/-/merge_requests/{iid}"


def pipeline_url(gitlab_url: str, project: str, pipeline_id: int | str) -> str:
    """The web page of a pipeline."""
    return f"{gitlab_url.rstrip('/')}/{project}/-/pipelines/{pipeline_id}"


def placeholder_body(marker: SessionMarker, workflow: str) -> str:
    return f"{PLACEHOLDER_TEXT} (`{workflow}`)\n\n{format_marker(marker)}"


def result_body(result: str, marker: SessionMarker, *, reply_prompt: bool) -> str:
    """The final note: result, reply prompt (left out for replies) and marker, within the size cap. The result
    carries the model's answer, so it is made inert: the marker after it is the note's only one."""
    tail = (f"\n\n{REPLY_PROMPT}" if reply_prompt else "") + f"\n\n{format_marker(marker)}"
    return cap_body(inert(result.strip()), reserve=len(tail)) + tail


def failure_body(marker: SessionMarker, reason: str | None = None) -> str:
    detail = f"\n\n{quiet_markdown(inert(reason))}" if reason else ""
    return f"{FAILURE_TEXT}{detail}\n\n{format_marker(marker)}"


def unsaved_body(body: str) -> str:
    """A posted result whose session failed to save: the reply prompt becomes UNSAVED_NOTICE, and the audit
    footer's way to continue says so too."""
    return body.replace(REPLY_PROMPT, UNSAVED_NOTICE).replace(FOOTER_CONTINUE, FOOTER_UNSAVED)


def unposted_body(body: str) -> str:
    """A result printed without being posted: the audit footer (the last line) does not invite a reply."""
    return _footer_says(body, FOOTER_UNPOSTED)


def unkept_body(body: str) -> str:
    """A result posted by `run` whose session is not kept: the audit footer does not invite a reply."""
    return _footer_says(body, FOOTER_UNKEPT)


def _footer_says(body: str, instead: str) -> str:
    head, found, tail = body.rpartition(FOOTER_CONTINUE)
    return f"{head}{instead}{tail}" if found else body


def cap_body(text: str, reserve: int = 0) -> str:
    """Truncate `text` so that it plus `reserve` characters fit a note, with a visible notice."""
    limit = budgets.NOTE_MAX_CHARS - reserve
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATION_NOTICE)] + TRUNCATION_NOTICE


def help_body(workflows: Mapping[str, str]) -> str:
    lines = [f"**Hummingbird** — run a workflow with `{COMMAND} <workflow>` (a unique prefix is enough):", ""]
    lines += [f"- `{name}` — {description}" for name, description in sorted(workflows.items())]
    lines += ["", "Reply to an agent note to continue its conversation."]
    return "\n".join(lines)


def unknown_workflow_body(name: str, workflows: Mapping[str, str]) -> str:
    known = ", ".join(f"`{n}`" for n in sorted(workflows)) or "none"
    return f"Unknown workflow `{_inline(name)}`. Available: {known}. See `{COMMAND} help`."


def ambiguous_workflow_body(name: str, matches: list[str]) -> str:
    options = ", ".join(f"`{m}`" for m in sorted(matches))
    return f"`{_inline(name)}` matches several workflows: {options}. Type more of the name."


def not_enabled_body(workflow: str, knowledge_base_off: bool = False) -> str:
    if knowledge_base_off:  # the project is allowed; the service runs without the knowledge base
        return (f"The workflow `{workflow}` runs on the knowledge base, which is turned off on this service "
                "(`bamboo.enabled` in its config.yaml).")
    return f"The workflow `{workflow}` is not enabled for this project."


def access_denied_body(user_id: int) -> str:
    """The refusal, with a hidden tag naming whom it refused (see threads.refused_recently)."""
    return ("Sorry, only project members with Developer access or higher can run Hummingbird."
            f"\n\n{refusal_tag(user_id)}")


def refusal_tag(user_id: int) -> str:
    return f"<!-- hummingbird-refused user={user_id} -->"


def session_expired_body() -> str:
    return (
        "This conversation's session has expired, so I cannot continue it. "
        f"Start a new run with `{COMMAND} <workflow>` (see `{COMMAND} help`)."
    )


def session_unsaved_body() -> str:
    return (
        "This conversation was never saved (the session store failed when the run ended), so I cannot "
        f"continue it. Start a new run with `{COMMAND} <workflow>` (see `{COMMAND} help`)."
    )


def _inline(text: str) -> str:
    """User text echoed back in inline code: no backticks, newlines or excessive length."""
    return inert(text.replace("`", "'").replace("\n", " ")[:80])
