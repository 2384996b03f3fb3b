"""Offline TF-IDF index of PanDA documentation sections or source chunks, built once by the operator
(`bamboo index-docs DIR`, `bamboo index-source DIR`) and searched by the panda tools and prefetch
hints. Nothing is fetched at run time: a missing index is "unavailable", not a download."""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.errors import ConfigError

KINDS = {"docs": (".md", ".rst", ".txt", ".html"), "source": (".py",)}
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]+")
_CAMEL = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_HEADING_MD = re.compile(r"^#{1,6}\s+(.+)$")
_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")
_SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules", "build", "dist", ".tox"}


def terms(text: str) -> list[str]:
    """Lower-case words, and for identifiers (snake_case, CamelCase) their parts too."""
    out: list[str] = []
    for word in _WORD.findall(text):
        out.append(word.lower())
        parts = [p.lower() for piece in word.split("_") for p in _CAMEL.findall(piece)]
        if len(parts) > 1:
            out += [p for p in parts if len(p) > 1]
    return out


@dataclass(frozen=True, slots=True)
class Chunk:
    path: str
    title: str
    line: int
    text: str


def _sections(path: str, text: str) -> Iterator[Chunk]:
    """Documentation split at Markdown headings and reST underlined titles."""
    lines = text.splitlines()
    body: list[str] = []
    title, start = Path(path).stem, 1
    for i, line in enumerate(lines):
        heading = _HEADING_MD.match(line)
        underlined = i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1]) and line.strip()
        if heading or underlined:
            if "".join(body).strip():
                yield Chunk(path, title, start, "\n".join(body))
            title, start, body = (heading.group(1) if heading else line).strip(), i + 1, []
            continue
        if not _UNDERLINE.match(line):
            body.append(line)
    if "".join(body).strip():
        yield Chunk(path, title, start, "\n".join(body))


def _source_chunks(path: str, text: str) -> Iterator[Chunk]:
    lines, size = text.splitlines(), budgets.PANDA_SOURCE_CHUNK_LINES
    for start in range(0, len(lines), size):
        body = "\n".join(lines[start:start + size])
        if body.strip():
            yield Chunk(path, path, start + 1, body)


def _files(root: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            if name.endswith(suffixes):
                yield Path(folder) / name


def build(root: str | Path, kind: str, out: str | Path) -> dict[str, int]:
    """Index every docs/source file under `root` into the JSON file `out`; returns file and chunk counts."""
    root = Path(root)
    if kind not in KINDS:
        raise ConfigError(f"unknown index kind {kind!r}")
    if not root.is_dir():
        raise ConfigError(f"{root}: not a directory")
    chunks: list[Chunk] = []
    files = 0
    for path in _files(root, KINDS[kind]):
        if path.stat().st_size > budgets.PANDA_INDEX_MAX_FILE_BYTES:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(root).as_posix()
        chunks += list(_sections(rel, text) if kind == "docs" else _source_chunks(rel, text))
        files += 1
    postings: dict[str, list[list[int]]] = defaultdict(list)
    lengths = []
    for n, chunk in enumerate(chunks):
        counts = Counter(terms(chunk.title + "\n" + chunk.text))
        lengths.append(sum(counts.values()))
        for term, tf in counts.items():
            postings[term].append([n, tf])
    payload = {"kind": kind, "built_at": datetime.now(UTC).isoformat(timespec="seconds"), "files": files,
               "chunks": [[c.path, c.title, c.line, c.text] for c in chunks], "lengths": lengths,
               "postings": postings}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload), encoding="utf-8")
    tmp.replace(out)
    return {"files": files, "chunks": len(chunks)}


class PandaIndex:
    """A built index file, read on the first search (never in the constructor)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._data: dict[str, Any] | None = None

    def available(self) -> bool:
        return self.path.is_file()

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            try:
                self._data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"PanDA {self.path.stem} index unavailable ({type(exc).__name__}); build it "
                                  f"with `bamboo index-{self.path.stem} DIR`") from None
        return self._data

    def search(self, query: str, max_results: int, keywords: str = "") -> list[dict[str, Any]]:
        """Best chunks by TF-IDF (keywords count twice), each {path, title, line, score, snippet}."""
        data = self._load()
        chunks, lengths, postings = data["chunks"], data["lengths"], data["postings"]
        weights = Counter(terms(query)) + Counter({t: 2 for t in terms(keywords)})
        scores: dict[int, float] = defaultdict(float)
        for term, weight in weights.items():
            posting = postings.get(term) or []
            if not posting:
                continue
            idf = math.log(1 + len(chunks) / len(posting))
            for n, tf in posting:
                scores[n] += weight * idf * tf / math.sqrt(lengths[n] or 1)
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        limit = max(1, min(int(max_results), budgets.PANDA_SEARCH_MAX_RESULTS))
        return [{"path": chunks[n][0], "title": chunks[n][1], "line": chunks[n][2], "score": round(score, 3),
                 "snippet": chunks[n][3].strip()[: budgets.PANDA_SNIPPET_CHARS]} for n, score in best[:limit]]
