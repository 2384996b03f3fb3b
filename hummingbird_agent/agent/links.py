"""Links to CI runs in a note only where the run saw them (pure): a job, pipeline, merge-request or PipelineRun
URL in the model's answer that no tool result or prompt of the run contained is unlinked (a small model
invents them from the task's ids), and the note says how many."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from hummingbird_agent.models.base import Content

# A URL up to whitespace or markdown/HTML punctuation; trailing sentence punctuation is trimmed after.
_URL = re.compile(r"https?://[^\s<>()\[\]`\"']+")
_MARKDOWN_LINK = re.compile(r"\[(?P<text>[^\]\n]*)\]\((?P<url>https?://[^\s)]+)\)")
# The path segments that name one run of something: the id or name after them must have been seen.
_RUN_ID = re.compile(r"/(?:jobs|pipelines|merge_requests|pipelineruns?|taskruns?|requests)/(?P<id>[\w.-]+)",
                     re.IGNORECASE)
UNSEEN = "(link removed: not seen in this run)"


def seen_text(contents: Sequence[Content], prompt: str) -> str:
    """Everything the run was told: the prompt, the user messages and the tool results (never the model's own
    text, which would vouch for itself)."""
    told = [json.dumps(c.get("parts") or [], ensure_ascii=False) for c in contents if c.get("role") != "model"]
    return "\n".join([prompt, *told]).replace("\\/", "/")


def unlink_unseen(answer: str, seen: str) -> tuple[str, int]:
    """`answer` with every unseen run link unlinked: a markdown link keeps its text, a bare URL is replaced by
    UNSEEN. Returns the new text and how many links were removed."""
    removed = 0

    def markdown(match: re.Match[str]) -> str:
        nonlocal removed
        if _seen(match.group("url"), seen):
            return match.group(0)
        removed += 1
        return match.group("text") or UNSEEN

    def bare(match: re.Match[str]) -> str:
        nonlocal removed
        url = match.group(0).rstrip(".,;:!?")
        if _seen(url, seen):
            return match.group(0)
        removed += 1
        return UNSEEN + match.group(0)[len(url):]

    text = _MARKDOWN_LINK.sub(markdown, answer)
    return _URL.sub(bare, text), removed


def _seen(url: str, seen: str) -> bool:
    """A URL that names no run, one the run was given verbatim, or one built from a host and ids it was given
    (a job URL from the project's web URL and a job id the tools returned)."""
    ids = [m.group("id") for m in _RUN_ID.finditer(urlsplit(url).path)]
    if not ids or url.rstrip("/") in seen:
        return True
    host = urlsplit(url).hostname or ""
    return bool(host) and host in seen and all(_token_in(i, seen) for i in ids)


def _token_in(token: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text) is not None


def removed_line(count: int) -> Iterable[str]:
    """The audit line for unlinked links (none when there were none)."""
    if count:
        yield f"{count} link(s) to jobs, pipelines or merge requests this run did not see were removed."
