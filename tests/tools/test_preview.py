"""Spill previews: head and tail of text cut at lines, JSON shapes bounded in depth, width and size."""

from __future__ import annotations

import json

from hummingbird_agent import budgets
from hummingbird_agent.tools.preview import json_shape, shape_preview, spill_summary, text_preview


def test_text_preview_keeps_whole_lines_of_head_and_tail_and_counts_the_gap() -> None:
    text = "".join(f"line {i:05d}\n" for i in range(10_000)).encode()
    head, tail = text[:100], text[-100:]
    preview = text_preview(head, tail, len(text))
    first, _, last = preview.partition("\n[... ")
    assert first.splitlines()[0] == "line 00000" and all(ln.startswith("line ") for ln in first.splitlines())
    assert len(first.splitlines()) == 9  # 100 bytes hold 9 whole 11-byte lines
    assert last.rstrip().endswith("line 09999")
    omitted = int(last.split(" bytes omitted")[0])
    assert omitted == len(text) - len(first.encode()) - len(last.split("...]\n", 1)[1].encode())


def test_text_preview_of_a_short_text_is_the_text() -> None:
    assert text_preview(b"abc\n", b"abc\n", 4) == "abc\n"


def test_json_shape_shows_keys_lengths_and_types() -> None:
    value = {"items": [{"name": "a", "ok": True, "n": 1}] * 500, "total": 500, "next": None}
    assert json_shape(value) == {
        "items": ["array(500) of", {"name": "string(1)", "ok": "boolean", "n": "number"}],
        "total": "number",
        "next": "null",
    }


def test_json_shape_limits_width_and_depth() -> None:
    wide = {f"k{i}": i for i in range(budgets.SPILL_SHAPE_MAX_KEYS + 7)}
    shape = json_shape(wide)
    assert shape["..."] == "7 more keys" and len(shape) == budgets.SPILL_SHAPE_MAX_KEYS + 1
    deep: dict = {"a": {"b": {"c": {"d": {"e": 1}}}}}
    assert json_shape(deep) == {"a": {"b": {"c": "object(1 keys)"}}}


def test_shape_preview_fits_the_preview_budget() -> None:
    huge = {f"key{i}": {f"inner{j}": list(range(3)) for j in range(40)} for i in range(40)}
    text = shape_preview(huge)
    assert len(text) <= budgets.SPILL_PREVIEW_HEAD_BYTES + budgets.SPILL_PREVIEW_TAIL_BYTES
    assert json.loads(text)  # still valid JSON


def test_spill_summary_omits_preview_for_binary() -> None:
    summary = spill_summary("/tmp/data/_out/x-1.tar.gz", 10, 0, None, "binary")
    assert "preview" not in summary and summary["spilled_to"].endswith(".tar.gz") and "hint" in summary
