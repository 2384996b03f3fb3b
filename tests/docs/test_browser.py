"""The built site in headless Chromium at 1,280 px, served from 127.0.0.1: the example note is rendered as GitLab
shows it (a table, not a code block, within the page's width), the flow diagram is drawn, configuration keys
break only after a dot, the code blocks have copy buttons, and no page asks for anything beyond the site's own
server. Chromium comes from Debian (scripts/setup-browser.sh, run by `make test`); without it these tests are
skipped, except in CI (`CI` set)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docs import example_note
from tests.docs.blocks import with_block
from tests.docs.browser import BINARY, Chromium, serve
from tests.docs.test_site import build, copy_site

if BINARY is None and not os.environ.get("CI"):
    pytest.skip("chromium is not installed (bash scripts/setup-browser.sh installs it)", allow_module_level=True)

PAGES = ("", "getting-started/", "first-analysed-mr/", "triage/", "architecture/", "configuration/")

NOTE = """(() => {
  const cell = [...document.querySelectorAll('article td')].find(td => td.textContent.includes('🟠 pre-existing'));
  if (!cell) return {table: false};
  const table = cell.closest('table').getBoundingClientRect();
  const note = cell.closest('.gitlab-note').getBoundingClientRect();
  return {table: true, in_code: !!cell.closest('pre, code'), height: table.height,
          fits: table.right <= note.right + 1 && note.right <= window.innerWidth};
})()"""

DIAGRAM = """(() => {
  const img = document.querySelector('article img[src$="flow.svg"]');
  if (!img) return {found: false};
  const box = img.getBoundingClientRect();
  return {found: true, loaded: img.complete && img.naturalWidth > 0, width: box.width, height: box.height,
          shown: getComputedStyle(img).visibility === 'visible' && img.offsetParent !== null};
})()"""


# The configuration keys split mid-name: each piece between the breaks the reference marks (after a dot) must lie
# on one line.
KEYS_SPLIT = """(() => {
  const keys = [...document.querySelectorAll('.config-reference td:first-child code')];
  const split = keys.filter(code => [...code.childNodes].some(node => {
    if (node.nodeType !== Node.TEXT_NODE) return false;
    const range = document.createRange();
    range.selectNodeContents(node);
    return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 1;
  }));
  return {keys: keys.length, split: split.map(code => code.textContent)};
})()"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("site")
    done = build(copy_site(root), root / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    with serve(root / "site") as url:
        yield url


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    with Chromium(tmp_path_factory.mktemp("profile")) as chromium:
        yield chromium


def _evaluate(browser: Chromium, url: str, expression: str) -> Any:
    _, session = browser.open(url)
    return browser.evaluate(session, expression)


@pytest.mark.parametrize("path", PAGES)
def test_a_page_needs_nothing_beyond_the_site(browser: Chromium, site: str, path: str) -> None:
    page, session = browser.open(site + path)
    assert browser.evaluate(session, "document.querySelector('article h1') !== null")
    remote = [url for url in page.requested if not url.startswith((site, "data:", "blob:"))]
    assert remote == [] and page.failed == []
    assert len(page.requested) > 1  # the page, then its styles and scripts: the record is not empty


def test_the_example_note_is_a_table_within_the_page(browser: Chromium, site: str) -> None:
    shown = _evaluate(browser, site, NOTE)
    assert shown["table"] and not shown["in_code"] and shown["height"] > 0, shown
    assert shown["fits"], shown


def test_the_note_put_back_in_a_code_block_fails_the_check(browser: Chromium, tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    home = root / "docs" / "index.md"
    note = example_note.render_note()
    home.write_text(with_block(home.read_text(encoding="utf-8"), example_note.NAME, example_note.fenced(note)),
                    encoding="utf-8")
    done = build(root, tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    with serve(tmp_path / "site") as url:
        assert _evaluate(browser, url, NOTE) == {"table": False}


@pytest.mark.parametrize("path", ["", "architecture/"])
def test_the_flow_diagram_is_drawn(browser: Chromium, site: str, path: str) -> None:
    shown = _evaluate(browser, site + path, DIAGRAM)
    assert shown["found"] and shown["loaded"] and shown["shown"], shown
    assert shown["width"] > 400 and shown["height"] > 150, shown


def test_configuration_keys_break_only_after_a_dot(browser: Chromium, site: str) -> None:
    shown = _evaluate(browser, site + "configuration/", KEYS_SPLIT)
    assert shown["keys"] > 100 and shown["split"] == [], shown


def test_code_blocks_have_copy_buttons(browser: Chromium, site: str) -> None:
    counts = _evaluate(browser, site + "getting-started/",
                       "[document.querySelectorAll('article pre > code').length,"
                       " document.querySelectorAll('article button.md-code__button[data-md-type=\"copy\"]').length]")
    assert counts[0] > 0 and counts[1] == counts[0], counts


def test_chromium_is_the_debian_package() -> None:
    """The setup installs Debian's package (no download from elsewhere), and it is the browser these tests drive."""
    status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "chromium"], capture_output=True, text=True,
                            check=False)
    assert status.stdout == "install ok installed" and BINARY == "/usr/bin/chromium"
