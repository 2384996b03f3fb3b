"""Generated blocks of the documentation pages: a block between `<!-- NAME:start -->` and `<!-- NAME:end -->`
markers, and the `<!-- tested -->` shell blocks of a page with the output block that follows each."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REGENERATE = "python -m tests.docs.regenerate"

# The output block's fence is longer than any fence its text holds (a printed note has its own ``` blocks).
_TESTED = re.compile(r"<!-- tested -->\n```sh\n(?P<commands>.*?)```\n\n"
                     r"(?P<fence>`{3,})text\n(?P<output>.*?)^(?P=fence)$", re.DOTALL | re.MULTILINE)


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def block(text: str, name: str) -> str:
    """What stands between the markers, without the blank lines around it."""
    start, end = markers(name)
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def with_block(text: str, name: str, body: str) -> str:
    """`text` with `body` between the markers (a blank line either side, so the page's Markdown sees a block)."""
    start, end = markers(name)
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n\n{body}\n\n{end}{tail}"


@dataclass(frozen=True)
class Tested:
    """A `<!-- tested -->` shell block as written on the page and the output block shown after it."""

    commands: str
    output: str
    start: int  # offsets of the output block's text in the page
    end: int


def tested_blocks(text: str) -> list[Tested]:
    return [Tested(m["commands"], m["output"], m.start("output"), m.end("output")) for m in _TESTED.finditer(text)]


def with_outputs(text: str, outputs: list[str]) -> str:
    """`text` with each tested block's output block replaced by the matching entry of `outputs`."""
    blocks = tested_blocks(text)
    assert len(blocks) == len(outputs)
    for tested, output in reversed(list(zip(blocks, outputs, strict=True))):
        text = text[:tested.start] + output + text[tested.end:]
    return text
