"""The documentation site builds with `mkdocs build --strict` (as make lint runs it), and a broken link fails it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from markdown.extensions.toc import slugify

from tests.docs.blocks import REPO

README_LIMIT = 250


def build(root: Path, site: Path, repo_url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "REPO_URL"} | {"NO_MKDOCS_2_WARNING": "1"}
    env |= {"REPO_URL": repo_url} if repo_url else {}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=root, env=env, capture_output=True, text=True, timeout=180, check=False)


def copy_site(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for directory in ("docs", "docs-theme"):
        shutil.copytree(REPO / directory, root / directory)
    for name in ("mkdocs.yml", "CHANGELOG.md"):
        shutil.copy(REPO / name, root / name)
    return root


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = build(copy_site(tmp_path), tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "configuration" / "index.html").exists()
    newest = re.search(r"^## (.+)$", (REPO / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert newest and newest.group(1) in (tmp_path / "site" / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "md-source" not in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")  # no guessed repository


def test_the_repository_link_is_the_one_given_at_build_time(tmp_path: Path) -> None:
    url = "https://gitlab.example.com/platform/hummingbird-agent"
    done = build(copy_site(tmp_path), tmp_path / "site", repo_url=url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f'href="{url}" title="Go to repository"' in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    page = root / "docs" / "triage.md"
    for broken in ("[gone](no-such-page.md)", "[gone](sandboxes.md#no-such-section)"):
        page.write_text(page.read_text(encoding="utf-8") + f"\nSee {broken}.\n", encoding="utf-8")
        done = build(root, tmp_path / "site")
        assert done.returncode != 0 and "triage.md" in done.stdout + done.stderr, broken
        page.write_text((REPO / "docs" / "triage.md").read_text(encoding="utf-8"), encoding="utf-8")


def test_every_page_is_in_the_nav_and_the_readme_is_short() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert all(f" {p.name}\n" in nav for p in (REPO / "docs").glob("*.md"))
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= README_LIMIT


def test_the_readme_links_to_pages_and_sections_that_exist() -> None:
    """The README is not part of the site, so the strict build does not check its links: this does."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((?!https?://|#)([^)\s]+)\)", text)
    assert links, "the README links into the documentation"
    for link in links:
        path, _, anchor = link.partition("#")
        assert (REPO / path).is_file(), link
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (REPO / path).read_text(encoding="utf-8"), re.M)
            assert anchor in {slugify(h, "-") for h in headings}, link  # MkDocs' default anchors
