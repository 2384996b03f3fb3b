"""The raw list-page scanner: item text passed through exactly, strings with brackets, quotes and escapes,
any chunking, the continue token before or after the items, and cut pages."""

from __future__ import annotations

import json

import pytest

from hummingbird_agent.data_sources.kube_page import PageScanner, TruncatedPage, key_before

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
    scanner.finish()
    return items, scanner.continue_token


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


def test_key_before_reads_only_plain_keys() -> None:
    assert key_before(b'"a":1, "items" : ') == b"items"
    assert key_before(b' "metadata":') == b"metadata"
    assert key_before(b'"x\\"items":') is None
    assert key_before(b'"items"') is None
