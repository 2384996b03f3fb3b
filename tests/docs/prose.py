"""The pages' prose: where a page first uses each glossary term, and its sentences. Code blocks, code spans
(except for the terms that are code), headings and generated blocks are not prose."""

from __future__ import annotations

import re

# (glossary anchor, pattern of a use; a pattern starting with ` is looked for in code spans too)
TERMS: tuple[tuple[str, str], ...] = (
    ("bamboo", r"\bBamboo\b"),
    ("box", r"\bbox(?:es)?\b"),
    ("contextenricher", r"\bContextEnricher\b"),
    ("false-green", r"\bfalse greens?\b"),
    ("fingerprint", r"\bfingerprints?\b"),
    ("konflux", r"\bKonflux\b"),
    ("ladybug", r"\bladybug\b"),
    ("model_when-news", r"`(?:triage\.)?model_when`"),
    ("outage-guard", r"\b[Oo]utage guard\b"),
    ("panda", r"\bPanDA\b"),
    ("phase-1-and-phase-2", r"\b[Pp]hase [12]\b"),
    ("proc__-tools", r"`proc__[^`]*`"),
    ("sweep", r"\bsweeps?\b"),
    ("work-order", r"\bwork orders?\b"),
)
_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.M | re.S)
_GENERATED = re.compile(r"<!-- ([a-z-]+):start -->.*?<!-- \1:end -->", re.S)
_HEADING = re.compile(r"^#+ .*$", re.M)
_CODE = re.compile(r"`[^`\n]+`")
_LINK = re.compile(r"\[([^\[\]]*)\]\(glossary\.md#([^)]+)\)")


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def prose(text: str, with_code: bool = False) -> str:
    """`text` with what is not prose blanked out, so offsets still match the page."""
    for pattern in (_FENCE, _GENERATED, _HEADING) if with_code else (_FENCE, _GENERATED, _HEADING, _CODE):
        text = _blank(text, pattern)
    return text


def first_uses(text: str) -> dict[str, tuple[int, int]]:
    """The span of each term's first use on a page that uses it."""
    found = {}
    for anchor, pattern in TERMS:
        use = re.search(pattern, prose(text, with_code=pattern.startswith("`")))
        if use:
            found[anchor] = use.span()
    return found


def linked(text: str, anchor: str, span: tuple[int, int]) -> bool:
    """Whether the use at `span` is the label of a link to the glossary's entry `anchor`."""
    return any(m.group(2) == anchor and m.start(1) <= span[0] and span[1] <= m.end(1) for m in _LINK.finditer(text))


_LIST_OR_ROW = re.compile(r"^\s*(?:[-*] |\d+\. |\|)", re.M)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\[(\"])")
_HTML = re.compile(r"<[^>]+>")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")


def sentences(text: str) -> list[str]:
    """The page's prose sentences: code blocks, headings, generated blocks, HTML and images left out; each list
    item and table cell ends a sentence; a code span counts as one word."""
    text = _IMAGE.sub(" ", _HTML.sub(" ", prose(text, with_code=True)))
    text = _CODE.sub("CODE", _LIST_OR_ROW.sub("\n\n", text)).replace("|", "\n\n")
    out = []
    for paragraph in re.split(r"\n\s*\n", text):
        out += [s for s in _SENTENCE_END.split(" ".join(paragraph.split())) if len(s.split()) > 2]
    return out
