"""Claims of the pages that name parts of the repository: the architecture page names every layer the layer test
declares, the flow diagram names only packages that exist (and every package of the flow), the deployment page
names every image placeholder of the manifests, every glossary entry is linked from the pages, each page
links its first use of each glossary term, and every page is written in short sentences."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from hummingbird_agent.architecture import LAYERS
from tests.docs import prose
from tests.docs.blocks import REPO

DOCS = REPO / "docs"
PACKAGE = REPO / "hummingbird_agent"
FLOW = {"events", "runner", "triage", "logs", "agent", "models", "tools", "data_sources", "sandbox", "gitlab",
        "sessions", "bamboo"}


def _named(prefix: str) -> tuple[str, str]:
    """How a page names a layer's module prefix: as a package directory or as a module file."""
    path = prefix.replace(".", "/") if prefix else "__init__"
    return f"`{path}/`", f"`{path}.py`"


def test_the_architecture_page_names_every_declared_layer() -> None:
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    missing = [p for _, prefixes, _ in LAYERS for p in prefixes if not any(n in page for n in _named(p))]
    assert missing == []


def test_the_flow_diagram_names_existing_packages_and_every_package_of_the_flow() -> None:
    svg = ET.parse(DOCS / "assets" / "flow.svg").getroot()
    texts = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "pkg"]
    named = {word.rstrip("/") for text in texts for word in text.split()}
    assert all((PACKAGE / name).is_dir() for name in named), named
    assert named == FLOW


def test_the_deployment_page_names_every_image_placeholder_of_the_manifests() -> None:
    manifests = "".join(p.read_text(encoding="utf-8") for p in (REPO / "kubernetes").rglob("*.yaml"))
    images = set(re.findall(r"image: (\S+)", manifests))
    page = (DOCS / "deployment.md").read_text(encoding="utf-8")
    assert images and all(f"`{image}`" in page for image in images), images


def test_every_glossary_entry_is_linked_from_another_page() -> None:
    glossary = (DOCS / "glossary.md").read_text(encoding="utf-8")
    anchors = {_anchor(h) for h in re.findall(r"^## (.+)$", glossary, re.M)}
    pages = "".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md") if p.name != "glossary.md")
    unlinked = sorted(a for a in anchors if f"glossary.md#{a})" not in pages)
    assert unlinked == []


def _anchor(heading: str) -> str:
    return str(slugify(heading, "-"))


def test_each_page_links_its_first_use_of_a_glossary_term() -> None:
    unlinked = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        if page.name != "glossary.md":
            unlinked += [f"{page.name}: {a}" for a, span in prose.first_uses(text).items()
                         if not prose.linked(text, a, span)]
    assert unlinked == []


# Every page, the README and the changelog: one fact a sentence (the changelog page only includes CHANGELOG.md).
PLAIN = [REPO / "README.md", REPO / "CHANGELOG.md", *(p for p in sorted(DOCS.glob("*.md")) if p.name != "changelog.md")]
MEAN_WORDS, MAX_WORDS = 20, 50


@pytest.mark.parametrize("page", PLAIN, ids=[p.name for p in PLAIN])
def test_every_page_has_short_sentences(page: Path) -> None:
    lengths = [len(s.split()) for s in prose.sentences(page.read_text(encoding="utf-8"))]
    long = [s for s in prose.sentences(page.read_text(encoding="utf-8")) if len(s.split()) > MAX_WORDS]
    assert sum(lengths) / len(lengths) <= MEAN_WORDS and long == [], (sum(lengths) / len(lengths), long)
