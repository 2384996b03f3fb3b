"""A Kubernetes list page scanned as raw bytes: each item's JSON text is sliced out as it is (never built
as Python objects and re-serialised), only its small metadata and status.conditions are decoded, and
metadata.continue is captured in the same pass. Memory is O(one item) whatever the page size."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from hummingbird_agent import budgets

# Everything up to the next bracket outside a string, then that bracket; `"` when a string is cut by the
# end of the buffer, empty at the end. Possessive, so a cut string never makes the engine backtrack.
# A string whose closing quote follows no backslash takes the fast single-class scan (most of the bytes).
_TOKEN = re.compile(rb'(?:[^"\[\]{}]++|"[^"]*+(?<!\\)"|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+([\[\]{}"]|\Z)')
_OPEN, _CLOSE, _QUOTE = frozenset(b"[{"), frozenset(b"]}"), ord('"')
# Depths: 1 the page object, 2 a top-level value (the items array), 3 an item, 4 its values, 5 status'.
_PAGE, _ITEMS, _ITEM, _FIELD, _SUBFIELD = 1, 2, 3, 4, 5


class TruncatedPage(ValueError):
    """The page ended before its JSON did (a cut stream), or an item outgrew KUBE_MAX_ITEM_BYTES."""


@dataclass(frozen=True, slots=True)
class RawItem:
    """One list item: its JSON text on one line, its metadata.uid and its status.conditions[0]."""

    raw: bytes
    uid: str | None
    condition: dict[str, Any] | None


def key_before(segment: bytes) -> bytes | None:
    """The object key a value starting right after `segment` belongs to (`..., "key":`), else None."""
    seg = segment.rstrip()
    if not seg.endswith(b":"):
        return None
    seg = seg[:-1].rstrip()
    start = seg.rfind(b'"', 0, len(seg) - 1)
    if not seg.endswith(b'"') or start < 0 or seg[:start].rstrip()[-1:] not in (b"", b","):
        return None  # not a plain key (one with an escaped quote is none we look for)
    return seg[start + 1 : -1]


class PageScanner:
    """Feed a list page's bytes in order; complete items come out of each feed, `continue_token` after."""

    def __init__(self, max_item_bytes: int = budgets.KUBE_MAX_ITEM_BYTES) -> None:
        self.continue_token = ""
        self._max_item_bytes = max_item_bytes
        self._buf = b""
        self._base = 0  # stream offset of _buf[0]
        self._pos = 0  # stream offset where scanning resumes (always outside a string)
        self._depth = 0
        self._seen_end = False
        self._segment = 0  # stream offset after the previous bracket (start of the text before a value)
        self._in_items = self._in_status = False
        self._starts: dict[str, int] = {}  # item, metadata, conditions, page_metadata -> stream offset
        self._uid: str | None = None
        self._condition: dict[str, Any] | None = None

    def feed(self, chunk: bytes) -> list[RawItem]:
        keep = min([self._pos, self._segment, *self._starts.values()])
        self._buf = self._buf[keep - self._base :] + chunk
        self._base = keep
        if "item" in self._starts and self._base + len(self._buf) - self._starts["item"] > self._max_item_bytes:
            raise TruncatedPage(f"a list item exceeds {self._max_item_bytes} bytes")
        out: list[RawItem] = []
        buf, base = self._buf, self._base
        for match in _TOKEN.finditer(buf, self._pos - base):
            at = match.start(1)
            if at == len(buf) or buf[at] == _QUOTE:
                self._pos = base + at  # need more bytes: end of buffer, or a string cut by it
                return out
            item = self._bracket(buf, at)
            if item is not None:
                out.append(item)
        self._pos = base + len(buf)
        return out

    def finish(self) -> None:
        """Raise TruncatedPage unless a whole JSON value was seen."""
        if self._depth != 0 or not self._seen_end or self._buf[self._pos - self._base :].strip():
            raise TruncatedPage("the list page ended before its JSON did")

    def _bracket(self, buf: bytes, at: int) -> RawItem | None:
        offset = self._base + at
        if buf[at] in _OPEN:
            self._open(buf, at, offset)
            self._depth += 1
            self._segment = offset + 1
            return None
        self._depth -= 1
        self._segment = offset + 1
        if self._depth < 0:
            raise TruncatedPage("unbalanced brackets in the list page")
        if self._depth == 0:
            self._seen_end = True
        return self._close(buf, offset + 1)

    def _open(self, buf: bytes, at: int, offset: int) -> None:
        depth = self._depth
        if depth == _ITEMS and self._in_items:
            self._starts["item"], self._uid, self._condition, self._in_status = offset, None, None, False
            return
        if depth not in (_PAGE, _ITEM) and not (depth == _FIELD and self._in_status):
            return
        key = key_before(buf[self._segment - self._base : at])
        if depth == _PAGE:
            self._in_items = key == b"items" and buf[at] == ord("[")
            if key == b"metadata":
                self._starts["page_metadata"] = offset
        elif depth == _ITEM:
            self._in_status = key == b"status"
            if key == b"metadata":
                self._starts["metadata"] = offset
        elif key == b"conditions":
            self._starts["conditions"] = offset

    def _close(self, buf: bytes, end: int) -> RawItem | None:
        depth, starts = self._depth, self._starts
        if depth == _FIELD and "conditions" in starts:
            conditions = json.loads(self._slice(starts.pop("conditions"), end))
            first = conditions[0] if isinstance(conditions, list) and conditions else None
            self._condition = first if isinstance(first, dict) else None
        elif depth == _ITEM:
            self._in_status = False
            if "metadata" in starts:
                uid = json.loads(self._slice(starts.pop("metadata"), end)).get("uid")
                self._uid = str(uid) if uid is not None else None
        elif depth == _ITEMS and "item" in starts:
            raw = self._slice(starts.pop("item"), end)
            if b"\n" in raw:  # whitespace between tokens (strings cannot hold a raw newline)
                raw = raw.replace(b"\n", b" ")
            return RawItem(raw, self._uid, self._condition)
        elif depth == _PAGE:
            self._in_items = False
            if "page_metadata" in starts:
                token = json.loads(self._slice(starts.pop("page_metadata"), end)).get("continue")
                self.continue_token = token if isinstance(token, str) else ""
        return None

    def _slice(self, start: int, end: int) -> bytes:
        return self._buf[start - self._base : end - self._base]


def scan_page(stream: BinaryIO, holder: dict[str, str]) -> Iterator[RawItem]:
    """Items of one list page read from a file-like; `holder["continue"]` is set once the page ends."""
    scanner = PageScanner()
    while chunk := stream.read(budgets.STREAM_CHUNK_BYTES):
        yield from scanner.feed(chunk)
    scanner.finish()
    holder["continue"] = scanner.continue_token
