"""`python -m tests.docs.regenerate`: rewrite the generated examples of the pages from what the code prints now:
the example note in README.md and docs/index.md, and the output under each tested command of
the pages tests/docs/commands.py names. Prints each page it changed."""

from __future__ import annotations

from pathlib import Path

from tests.docs import commands, example_note
from tests.docs.blocks import tested_blocks, with_block, with_outputs


def _write(page: Path, new: str) -> None:
    if new != page.read_text(encoding="utf-8"):
        page.write_text(new, encoding="utf-8")
        print(f"updated {page}")


def main() -> None:
    note = example_note.render_note()
    for page in example_note.PAGES:
        _write(page, with_block(page.read_text(encoding="utf-8"), example_note.NAME, example_note.shown(page, note)))
    for page in commands.PAGES:
        text = page.read_text(encoding="utf-8")
        _write(page, with_outputs(text, [commands.run(b.commands) for b in tested_blocks(text)]))


if __name__ == "__main__":
    main()
