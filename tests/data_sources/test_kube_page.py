"""The list-page scanner: item text passed through exactly, strings with brackets, quotes and escapes,
any chunking, the continue token before or after the items, cut pages, and malformed JSON or trailing
data as an error naming its byte offset after the valid items before it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hummingbird_agent.data_sources.kube_page import MalformedPage, PageScanner, TruncatedPage

TRICKY = [
    {"metadata": {"uid": "u1", "annotations": {"continue": "not-the-token"}},
     "status": {"conditions": [{"status": "False", "reason": "Failed", "message": 'a "quoted" ] } [{ \\ end\\'}]},
     "spec": {"script": "echo '}' \"]\" \\\\\"", "params": [[], {}, [{"x": [1, 2.5, None, True]}]]}},
    {"metadata": {"uid": "u2"}, "status": {"childReferences": [{"conditions": "nested, not ours"}]}},
    {"kind": "NoMetadata", "status": {"conditions": []}},
]


def page(metadata_first: bool, sep: str = ",", indent: int | None = None) -> bytes:
    items = json.dumps(TRICKY, separators=(sep, ":"), indent=indent, ensure_ascii=False)
    meta = '"metadata": {"continue": "tok\\"en", "resourceVersion": "7"}'
    body = f'{{"kind": "List", {meta}, "items": {items}}}' if metadata_first else f'{{"items": {items}, {meta}}}'
    return body.encode()


def scan(data: bytes, step: int) -> tuple[list, str]:
    scanner = PageScanner()
    items = [item for i in range(0, len(data), step) for item in scanner.feed(data[i:i + step])]
    items += scanner.flush()
    scanner.finish()
    return items, scanner.continue_token


def scan_until_error(data: bytes, step: int) -> tuple[list, MalformedPage]:
    scanner, items = PageScanner(), []
    with pytest.raises(MalformedPage) as raised:
        for i in range(0, len(data), step):
            items += scanner.feed(data[i:i + step])
        items += scanner.flush()
        scanner.finish()
    return items, raised.value


@pytest.mark.parametrize("metadata_first", [True, False])
@pytest.mark.parametrize("step", [1, 3, 7, 64, 10**6])
def test_items_are_sliced_exactly_in_any_chunking(metadata_first: bool, step: int) -> None:
    items, token = scan(page(metadata_first), step)
    assert [json.loads(item.raw) for item in items] == TRICKY
    assert [item.uid for item in items] == ["u1", "u2", None]
    assert items[0].condition == TRICKY[0]["status"]["conditions"][0]
    assert items[1].condition is None and items[2].condition is None
    assert token == 'tok"en'


def test_pretty_printed_items_become_single_lines() -> None:
    items, _ = scan(page(True, indent=2), 5)
    assert all(b"\n" not in item.raw for item in items)
    assert [json.loads(item.raw) for item in items] == TRICKY


@pytest.mark.parametrize("cut", [1, 40, 200, -2, -1])
def test_a_cut_page_raises_after_its_complete_items(cut: int) -> None:
    data = page(False)
    scanner = PageScanner()
    got = scanner.feed(data[:cut])
    with pytest.raises(TruncatedPage):
        scanner.finish()
    assert len(got) <= len(TRICKY) - (1 if cut > 0 else 0)


def test_an_item_over_the_size_cap_stops_the_page() -> None:
    scanner = PageScanner(max_item_bytes=100)
    scanner.feed(b'{"items":[{"a":"' + b"x" * 80)
    with pytest.raises(TruncatedPage):
        scanner.feed(b"x" * 80)


ITEMS = [b'{"metadata":{"uid":"a"}}', b'{"metadata":{"uid":"b"}}']
MALFORMED = {
    "missing comma": b'{"x": 1 "y": 2}',
    "double comma": b'{"x": 1,, "y": 2}',
    "bad literal": b'{"x": tru}',
    "NaN": b'{"x": NaN}',
    "bare word": b'{"x": hello}',
    "unquoted key": b'{x: 1}',
    "bad escape": b'{"x": "\\q"}',
    "raw control character": b'{"x": "a\tb"}',
    "brackets swapped": b'{"x": [1}]',
    "not UTF-8": b'{"x": "\xff"}',
}


@pytest.mark.parametrize("step", [1, 5, 10**6])
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_item_is_an_error_at_its_offset_after_the_items_before_it(case: str, step: int) -> None:
    head = b'{"kind": "List", "items": [' + b", ".join(ITEMS) + b", "
    items, error = scan_until_error(head + MALFORMED[case] + b', {"metadata":{"uid":"c"}}]}', step)
    assert [item.raw for item in items] == ITEMS
    offset = int(str(error).split("at byte ")[1].split(":")[0])
    assert len(head) <= offset < len(head) + len(MALFORMED[case]), str(error)


@pytest.mark.parametrize("step", [1, 7, 10**6])
@pytest.mark.parametrize("tail", [b" garbage", b'{"items": [{"metadata": {"uid": "z"}}]}', b"]", b"\x00"])
def test_data_after_the_page_is_an_error_at_its_offset(tail: bytes, step: int) -> None:
    data = page(True) + b"\n"
    items, error = scan_until_error(data + tail, step)
    assert [json.loads(item.raw) for item in items] == TRICKY  # nothing from the trailing data
    assert f"at byte {len(data) + (tail[:1] == b' ')}:" in str(error)


def test_an_offset_counts_bytes_not_characters() -> None:
    head = '{"items": [{"name": "caf\u00e9 \u2603"}, '.encode()
    _, error = scan_until_error(head + b'{"x": nope}]}', 10**6)
    assert f"at byte {len(head) + 6}:" in str(error)


@pytest.mark.parametrize("bad", [b'[{"items": []}]', b'{"items": [], }', b'{"items": [1,]}', b'{"items" [1]}'])
def test_a_malformed_page_structure_is_an_error(bad: bytes) -> None:
    scan_until_error(bad, 1)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(items=st.lists(_JSON, max_size=6), step=st.integers(1, 64), ascii_only=st.booleans())
def test_any_valid_page_in_any_chunking_gives_back_its_items_exactly(items: list, step: int,
                                                                     ascii_only: bool) -> None:
    texts = [json.dumps(item, ensure_ascii=ascii_only) for item in items]
    data = ('{"metadata": {"continue": "t"}, "items": [' + ", ".join(texts) + "]}").encode()
    got, token = scan(data, step)
    assert [item.raw.decode() for item in got] == texts and token == "t"
