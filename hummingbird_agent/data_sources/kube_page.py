"""A Kubernetes list page parsed item by item as it streams in: each item's JSON text is passed on as it
was sent (never re-serialised), and metadata.continue is captured in the same pass. Memory is O(one item)
whatever the page size.

The page object is walked by a small state machine; every value in it (each item, the page metadata) is
read by the C JSON decoder's `raw_decode`, which also says where the value ends. So the whole page is
validated: malformed JSON or anything after the page is a MalformedPage naming its byte offset, raised
after the complete items before it were handed out.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from hummingbird_agent import budgets

_WS = re.compile(r"[ \t\n\r]*")
_COMMA = re.compile(r"[ \t\n\r]*,")
# What a number cut by the buffer's end may still be followed by (`1` of `12`, `0` of `0.5e3`).
_NUMBER_TAIL = re.compile(r"[0-9.eE+-]*\Z")
# A value cut by the end of the buffer makes raw_decode fail this close to it (the longest is a cut
# literal such as `fals`, or a number cut before its exponent digits), or with "Unterminated string".
_CUT_SLACK_CHARS = 8
# Where the walk is: before the page, expecting a page key (first or after a comma), after a page value,
# at the items array's first element, at a later element, after an element, after the page.
_START, _KEY_FIRST, _KEY, _AFTER_MEMBER, _ITEM_FIRST, _ITEM, _AFTER_ITEM, _END = range(8)


class TruncatedPage(ValueError):
    """The page ended before its JSON did (a cut stream), or an item outgrew KUBE_MAX_ITEM_BYTES."""


class MalformedPage(TruncatedPage):
    """The page is not valid JSON, or data follows it; the message names the byte offset."""


class _NeedMore(Exception):
    """The buffer ends inside the next token: wait for the next chunk."""


class Readable(Protocol):
    """What scan_page reads a page from: a binary file-like (urllib3's response, a file opened "rb")."""

    def read(self, amt: int, /) -> bytes: ...


def _blanks_end(text: str, pos: int) -> int:
    """Where the blanks starting at `pos` end (`pos` itself when there are none)."""
    blanks = _WS.match(text, pos)
    assert blanks is not None  # `*` matches the empty string too: there is always a match
    return blanks.end()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


@dataclass(frozen=True, slots=True)
class RawItem:
    """One list item: its JSON text on one line, its metadata.uid and its status.conditions[0]."""

    raw: bytes
    uid: str | None
    condition: dict[str, Any] | None


def _field(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else None


def raw_item(text: str, obj: Any) -> RawItem:
    """An item from its exact text and its decoded value."""
    if "\n" in text:  # whitespace between tokens (strings cannot hold a raw newline)
        text = text.replace("\n", " ")
    uid = conditions = None
    if isinstance(obj, dict):  # one check, not four: this runs once per item of a 1 GB page
        metadata, status = obj.get("metadata"), obj.get("status")
        uid = metadata.get("uid") if isinstance(metadata, dict) else None
        conditions = status.get("conditions") if isinstance(status, dict) else None
    first = conditions[0] if isinstance(conditions, list) and conditions else None
    return RawItem(text.encode(), str(uid) if uid is not None else None, first if isinstance(first, dict) else None)


class PageScanner:
    """Feed a list page's bytes in order; complete items come out of each feed, `continue_token` after."""

    def __init__(self, max_item_bytes: int = budgets.KUBE_MAX_ITEM_BYTES) -> None:
        self.continue_token = ""
        self._max_item_bytes = max_item_bytes
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._fed = 0  # bytes fed so far
        self._text = ""
        self._pos = 0  # index in _text where the walk resumes
        self._offset = 0  # byte offset of _text[0] in the stream
        self._state = _START
        self._retry_len = 0  # characters after _pos needed before a cut value is tried again
        self._final = False
        self._error: TruncatedPage | None = None

    def feed(self, chunk: bytes) -> list[RawItem]:
        if self._error is not None:
            raise self._error
        bad = self._append(chunk, final=False)
        pending = len(self._text) - self._pos
        if pending > self._max_item_bytes:
            raise TruncatedPage(f"a list item exceeds {self._max_item_bytes} bytes")
        return self._after(bad, [] if pending < self._retry_len and bad is None else self._walk())

    def flush(self) -> list[RawItem]:
        """At the end of the stream: the items still buffered (then call finish)."""
        if self._final or self._error is not None:
            return []
        bad = self._append(b"", final=True)
        self._final = True
        return self._after(bad, self._walk())

    def finish(self) -> None:
        """Raise TruncatedPage unless the whole page, and nothing after it, was seen (MalformedPage if invalid)."""
        self.flush()
        if self._error is not None:
            raise self._error
        if self._state != _END:
            raise TruncatedPage(f"the list page ended before its JSON did (at byte {self._byte(len(self._text))})")

    # --- buffer -------------------------------------------------------------------------------------------
    def _append(self, chunk: bytes, final: bool) -> MalformedPage | None:
        """Add the chunk's text to the buffer; invalid UTF-8 adds the text before it and is returned."""
        pending = self._utf8.getstate()[0]
        bad = None
        try:
            text = self._utf8.decode(chunk, final)
        except UnicodeDecodeError as exc:
            text = (pending + chunk)[: exc.start].decode()
            bad = MalformedPage(f"the list page is not UTF-8 at byte {self._fed - len(pending) + exc.start}")
        self._fed += len(chunk)
        self._offset = self._byte(self._pos)
        self._text = self._text[self._pos :] + text
        self._pos = 0
        return bad

    def _after(self, bad: MalformedPage | None, items: list[RawItem]) -> list[RawItem]:
        """The items read before invalid UTF-8; the error itself now, or at the next call after items."""
        if bad is not None and self._error is None:
            if not items:
                raise bad
            self._error = bad
        return items

    def _byte(self, index: int) -> int:
        """Stream byte offset of _text[index]."""
        if self._text.isascii():  # O(1) in CPython
            return self._offset + index
        return self._offset + len(self._text[:index].encode())

    # --- walk -----------------------------------------------------------------------------------------------
    def _walk(self) -> list[RawItem]:
        """Complete items from _pos on; an error found after some of them is raised at the next call."""
        if self._error is not None:
            raise self._error
        out: list[RawItem] = []
        try:
            while True:
                if self._pos > len(self._text) // 2:
                    # Keep the buffer behind the cursor short: a value cut by the buffer's end makes the
                    # decoder's error count newlines from the buffer's start (O(buffer) per chunk otherwise).
                    self._append(b"", final=False)
                item = self._step()
                if item is not None:
                    out.append(item)
        except _NeedMore:
            return out
        except TruncatedPage as exc:
            if not out:
                raise
            self._error = exc
            return out

    def _step(self) -> RawItem | None:
        state, char = self._state, self._next_char()
        if state == _START:
            self._expect(char, "{", _KEY_FIRST)
        elif state in (_KEY_FIRST, _KEY):
            if state == _KEY_FIRST and char == "}":
                self._advance(_END)
            else:
                self._member_key(char)
        elif state == _AFTER_MEMBER:
            self._expect(char, ",}", _KEY if char == "," else _END)
        elif state == _ITEM_FIRST and char == "]":
            self._advance(_AFTER_MEMBER)
        elif state in (_ITEM_FIRST, _ITEM):
            return self._item()
        elif state == _AFTER_ITEM:
            self._expect(char, ",]", _ITEM if char == "," else _AFTER_MEMBER)
        else:
            raise self._malformed(self._pos, "data after the end of the list page")
        return None

    def _item(self) -> RawItem:
        start = self._pos
        obj = self._value()
        text, end = self._text, self._pos
        # The usual `,` after an item is taken here, saving a walk step per item.
        comma = _COMMA.match(text, end)
        if comma is not None:
            self._pos, self._state = comma.end(), _ITEM
        else:
            self._state = _AFTER_ITEM
        return raw_item(text[start:end], obj)

    def _next_char(self) -> str:
        """The next non-blank character (_pos moves to it); _NeedMore when the buffer has none yet."""
        self._pos = _blanks_end(self._text, self._pos)
        if self._pos < len(self._text):
            return self._text[self._pos]
        raise _NeedMore

    def _expect(self, char: str, allowed: str, state: int) -> None:
        if char not in allowed:
            raise self._malformed(self._pos, f"expected one of {allowed!r}")
        self._advance(state)

    def _advance(self, state: int) -> None:
        self._pos += 1
        self._state = state

    def _member_key(self, char: str) -> None:
        """`"key": ` then, for items, the array's `[`; any other key's value is read (the metadata kept)."""
        if char != '"':
            raise self._malformed(self._pos, "expected a key")
        start = self._pos
        key = self._value()
        colon = _blanks_end(self._text, self._pos)
        value = _blanks_end(self._text, colon + 1)
        if value >= len(self._text):
            self._pos = start
            raise _NeedMore
        if self._text[colon] != ":":
            raise self._malformed(colon, "expected ':'")
        if key == "items" and self._text[value] == "[":
            self._pos, self._state = value + 1, _ITEM_FIRST
            return
        self._pos = value
        try:
            member = self._value()
        except _NeedMore:
            self._pos = start  # the key is read again with its value
            raise
        if key == "metadata":
            token = _field(member, "continue")
            self.continue_token = token if isinstance(token, str) else ""
        self._state = _AFTER_MEMBER

    def _value(self) -> Any:
        """Decode the JSON value at _pos and move past it; _NeedMore if the buffer cuts it."""
        text, start = self._text, self._pos
        try:
            obj, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            unterminated = exc.msg.startswith("Unterminated string")
            if self._final and (unterminated or exc.pos >= len(text)):
                raise TruncatedPage(f"the list page ended inside a value (at byte {self._byte(start)})") from None
            if self._final or not (unterminated or exc.pos >= len(text) - _CUT_SLACK_CHARS):
                raise self._malformed(exc.pos, exc.msg) from None
            self._retry_len = 2 * (len(text) - start)  # retry after doubling: linear cost for long values
            raise _NeedMore from None
        except (ValueError, RecursionError) as exc:  # NaN/Infinity, or nesting deeper than the decoder's stack
            raise self._malformed(start, f"invalid value ({type(exc).__name__})") from None
        if not self._final and type(obj) in (int, float) and _NUMBER_TAIL.match(text, end):
            self._retry_len = end - start + 1  # a number at the buffer's end may go on in the next chunk
            raise _NeedMore
        self._pos, self._retry_len = end, 0
        return obj

    def _malformed(self, index: int, what: str) -> MalformedPage:
        return MalformedPage(f"malformed list page at byte {self._byte(index)}: {what}")


def scan_page(stream: Readable, holder: dict[str, str]) -> Iterator[RawItem]:
    """Items of one list page read from a file-like; `holder["continue"]` is set once the page ends."""
    scanner = PageScanner()
    while chunk := stream.read(budgets.STREAM_CHUNK_BYTES):
        yield from scanner.feed(chunk)
    yield from scanner.flush()
    scanner.finish()
    holder["continue"] = scanner.continue_token
