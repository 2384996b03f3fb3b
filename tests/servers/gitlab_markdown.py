"""What the fake GitLab reads in a written note or description, as GitLab does: the quick actions it runs as the
writer, and the users and other projects' issues or MRs it mentions.

The quick actions follow GitLab's own extractor (Gitlab::QuickActions::Extractor): the alternatives of its one
regular expression, tried at each line start in its order, with the same odd idea of code: a ``` block that ends
at the first line of exactly three backticks, "inline code" from a line with a backtick to the last line ending in
one, an HTML block, a >>> quote (test_gitlab_markdown.py holds the expression and compares). Mentions and
references are found as GitLab's reference filters find them: in the rendered HTML, outside code, pre and links
(parsed here by markdown-it-py, a CommonMark parser, not by anything of the service's).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

# Commands of GitLab's quick-action DSL (MRs and issues); more exist, and any one runs as the note's author.
COMMANDS = (
    "approve", "unapprove", "merge", "close", "reopen", "draft", "ready", "wip", "rebase", "lock", "unlock",
    "label", "labels", "unlabel", "remove_label", "relabel", "assign", "unassign", "reassign", "assign_reviewer",
    "reviewer", "request_review", "unassign_reviewer", "remove_reviewer", "title", "milestone", "remove_milestone",
    "due", "remove_due_date", "estimate", "remove_estimate", "spend", "spent", "remove_time_spent", "todo", "done",
    "subscribe", "unsubscribe", "award", "react", "shrug", "tableflip", "target_branch", "copy_metadata",
    "confidential", "duplicate", "move", "clone", "relate", "unlink", "submit_review", "create_merge_request",
    "weight", "clear_weight", "epic", "remove_epic", "iteration", "health_status", "blocks", "blocked_by", "cc",
)


# The command alternative of the extractor's one expression; its other alternatives (the "code" it skips) are
# computed below with the same result, since the expression itself backtracks for minutes on a long note.
_COMMAND = re.compile(r"/(?P<cmd>" + "|".join(re.escape(n) for n in sorted(COMMANDS, key=len, reverse=True))
                      + r")(?:[ ](?P<arg>[^\n]*))?(?:\s*\n|$)", re.IGNORECASE)


class _Reader:
    """The places the extractor's alternatives end at, found once per text (a long note has thousands of lines;
    searching from each line start again would take minutes)."""

    def __init__(self, text: str) -> None:
        self.text = text
        ends = [m.end() for m in re.finditer(r"`(?=\n|\Z)", text)]
        self.last_tick = ends[-1] - 1 if ends else -1
        self.fences = self._closings("\n```")
        self.quotes = self._closings("\n>>>")
        # `\n</[^>]+?>$`: from each `\n</`, the first `>` after at least one character must end its line.
        self.tags = [m.start() for m in re.finditer("\n</", text)
                     if (c := text.find(">", m.start() + 3)) >= m.start() + 4 and self._ends_line(c + 1)]
        self.tag_ends = {at: text.find(">", at + 3) + 1 for at in self.tags}
        self.ticks = [m.start() for m in re.finditer("`", text)]

    def _ends_line(self, at: int) -> bool:
        return at == len(self.text) or self.text[at] == "\n"

    def _closings(self, mark: str) -> list[int]:
        return [m.start() for m in re.finditer(re.escape(mark), self.text) if self._ends_line(m.start() + len(mark))]

    @staticmethod
    def _first(found: list[int], start: int) -> int:
        i = bisect_left(found, start)
        return found[i] if i < len(found) else -1

    def skipped(self, p: int) -> int:
        """Where the code, inline-code, HTML or >>> alternative matched at line start `p` ends (-1: none). The
        "inline code" runs from any line with a backtick to the last line ending in one (`.*` spans lines)."""
        text = self.text
        if text.startswith("```", p) and (at := self._first(self.fences, p + 4)) >= 0:
            return at + 4
        if self.last_tick >= 0 and 0 <= self._first(self.ticks, p) < self.last_tick - 1:
            return self.last_tick + 1
        opened = text.find(">", p + 1) if text.startswith("<", p) else -1
        if opened >= p + 2 and text.startswith("\n", opened + 1) and (at := self._first(self.tags, opened + 3)) >= 0:
            return self.tag_ends[at]
        if text.startswith(">>>", p) and (at := self._first(self.quotes, p + 4)) >= 0:
            return at + 4
        return -1


def quick_actions(body: str) -> tuple[str, list[tuple[str, str]]]:
    """(the body GitLab keeps, the commands it runs), as the extractor splits a written text: from each line
    start, the first alternative that matches is skipped whole or, for a command, run and taken out."""
    reader = _Reader(body.replace("\r", ""))
    text, found, kept, p = reader.text, list[tuple[str, str]](), list[str](), 0
    while p < len(text):
        if (end := reader.skipped(p)) >= 0:
            kept.append(text[p:end])
        elif command := _COMMAND.match(text, p):
            found.append((command.group("cmd").lower(), (command.group("arg") or "").strip()))
            end = command.end()
        else:
            newline = text.find("\n", p)
            end = len(text) if newline < 0 else newline + 1
            kept.append(text[p:end])
        p = max(end, p + 1)
    return "".join(kept).rstrip(), found


_MENTION = re.compile(r"(?<![\w])@(?P<name>[A-Za-z0-9_][\w.-]*)")
_URL = re.compile(r"https?://\S+")
# A reference to another project's issue, MR or epic: a path right before the sign (found from the sign back, so a
# long word is read once).
_SIGN = re.compile(r"(?<=[\w./-])[#!&]\d+")


@dataclass(frozen=True)
class References:
    users: tuple[str, ...]
    """Usernames (and `all`) mentioned: each would be notified."""
    foreign: tuple[str, ...]
    """`project#12`-style references to another project's issue, MR or epic: each gets a "mentioned in" note."""


def _text(tokens: list[Token], inside: int = 0) -> list[str]:
    """The text GitLab's reference filters read: not inside code, pre or a link."""
    parts: list[str] = []
    for token in tokens:
        if token.type == "link_open":
            inside += 1
        elif token.type == "link_close":
            inside -= 1
        elif token.type == "text" and not inside:
            parts.append(token.content)
        elif token.type == "inline" and token.children:
            parts += _text(token.children)
    return parts


def references(body: str) -> References:
    # GitLab renders CommonMark with tables; a code block, a code span or an HTML block is not text.
    tokens = MarkdownIt("commonmark").enable("table").parse(body)
    # GitLab links bare URLs (AutolinkFilter) before it looks for references: nothing in a URL mentions.
    text = _URL.sub(" ", "\n".join(_text(tokens)))
    return References(tuple(m.group("name") for m in _MENTION.finditer(text)),
                      tuple(_foreign(text, m) for m in _SIGN.finditer(text)))


def _foreign(text: str, sign: re.Match[str]) -> str:
    start = sign.start()
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_./-"):
        start -= 1
    return text[start:sign.end()]
