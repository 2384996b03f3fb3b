"""`python -m tests.docs.regenerate`: rewrite the generated examples of the pages from what the code prints now:
the example note in README.md and docs/index.md, and the output under each tested command of
docs/getting-started.md. Prints each page it changed."""

from __future__ import annotations

from pathlib import Path

from tests.docs import commands, example_note
from tests.docs.blocks import tested_blocks, with_block, with_outputs


def _write(page: Path, new: str) -> None:
    if new != page.read_text(encoding="utf-8"):
        page.write_text(new, encoding="utf-8")
        print(f"updated {page}")


def main() -> None:
    note = example_note.fenced(example_note.render_note())
    for page in example_note.PAGES:
        _write(page, with_block(page.read_text(encoding="utf-8"), example_note.NAME, note))
    text = commands.PAGE.read_text(encoding="utf-8")
    _write(commands.PAGE, with_outputs(text, [commands.run(b.commands) for b in tested_blocks(text)]))


if __name__ == "__main__":
    main()
