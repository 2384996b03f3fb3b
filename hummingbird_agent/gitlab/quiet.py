"""What keeps text the service writes from acting in GitLab: a quick action, a mention, a cross-reference.

GitLab reads more than Markdown in a note or an issue. A line `/approve` (`/close`, `/merge`, `/label ...`) is a
quick action, run as the bot when the note is created or edited. `@name` notifies a user and `@all` a whole
project. `group/project#12` (or `!12`, `&12`) writes a "mentioned in" note on another project's issue, MR or epic.
None of that may come from a log, a model answer or knowledge: those are data. A short reference (`#12`, `!7`)
stays a link: it names this project's own issues and MRs. The breaks are zero-width spaces, so a reader sees the
same text.
"""

from __future__ import annotations

import re

_BREAK = "\u200b"
# GitLab's extractor (Gitlab::QuickActions::Extractor) runs a command on a line that starts with `/` (no space
# before it), a command name and then a space or the line's end. Which names exist changes with versions, and
# its idea of a code block is not Markdown's (a longer fence, or a fence a log line closes, is not one to it);
# so every line of that shape is broken, code or not. GitLab drops `\r` before it looks.
_COMMAND = re.compile(r"^(?=/[^\s/]+(?:\s|$))", re.MULTILINE)
# A user or group mention (`@name`, not an address `a@b`), and a reference to an issue, MR or epic of another
# project (`group/project#12`, `project!3`: a path right before the sign).
_REFERENCE = re.compile(r"(?<!\w)@(?=[\w.-])|(?<=[\w./-])[#!&](?=\d)")
# What Markdown shows as code or a link target, where GitLab makes no reference: a fenced block, an inline code
# span, a URL. Everything else in a model's answer is prose.
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,}).*?(?:(?P<close>^ {0,3}(?P=fence)[`~]*[ \t]*$)|\Z)",
                    re.MULTILINE | re.DOTALL)
# What could end a Markdown link's target, a table cell or a code span, or open HTML: percent-encoded in a URL.
_URL_UNSAFE = re.compile(r"[\s()<>\[\]`\"'\\|]")
_SPAN = re.compile(r"(?P<ticks>`+).+?(?<!`)(?P=ticks)(?!`)|https?://\S+", re.DOTALL)


def no_commands(body: str) -> str:
    """`body` as the bot may write it: no line GitLab would run as a quick action. Idempotent."""
    return _COMMAND.sub(_BREAK, body.replace("\r", ""))


def no_references(text: str) -> str:
    """Untrusted text shown as prose: it mentions nobody and references nothing of another project. Idempotent."""
    return _REFERENCE.sub(lambda m: m.group(0) + _BREAK, text)


def quiet_markdown(text: str) -> str:
    """A model's answer with `no_references` applied to its prose; code blocks, code spans and URLs stay as
    written (GitLab makes no reference inside them, and a copied command must still run). A code block left open
    is closed: it would run on over whatever the service writes after the answer."""
    parts, start = [], 0
    for block in _FENCE.finditer(text):
        closed = block.group("close") is not None
        parts += [_quiet_prose(text[start:block.start()]), block.group(0) if closed else
                  f"{block.group(0).rstrip()}\n{block.group('fence')}"]
        start = block.end()
    return "".join([*parts, _quiet_prose(text[start:])])


def _quiet_prose(text: str) -> str:
    parts, start = [], 0
    for span in _SPAN.finditer(text):
        parts += [no_references(text[start:span.start()]), span.group(0)]
        start = span.end()
    return "".join([*parts, no_references(text[start:])])


def link(text: str, url: str) -> str:
    """`[text](url)`, or the text alone when the URL is not one a note links (see `link_target`)."""
    target = link_target(url)
    return f"[{text}]({target})" if target else text


def link_target(url: str) -> str:
    """A URL another system gave, fit to be a link's target in a note: http(s) only ("" otherwise), with every
    character that could end the link or a table cell percent-encoded, so what follows it stays text."""
    if not re.match(r"https?://", url, re.IGNORECASE):
        return ""
    return _URL_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode()), url)
