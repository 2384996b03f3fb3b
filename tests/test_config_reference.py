"""The config reference page (docs/configuration.md) is the schema's: regenerated, it is unchanged; every key has a
description."""

from __future__ import annotations

from pathlib import Path

from hummingbird_agent.config.reference import END, START, render, rows

PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def test_the_page_table_matches_the_schema() -> None:
    text = PAGE.read_text(encoding="utf-8")
    table = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert table == render(), "run: python -m hummingbird_agent.config.reference docs/configuration.md"


def test_every_key_is_documented_and_the_s3_and_model_settings_are_there() -> None:
    table = {path: (kind, default, doc) for path, kind, default, doc in rows()}
    assert all(doc for _, _, doc in table.values()), [p for p, (_, _, d) in table.items() if not d]
    assert {"model.base_url", "sessions.s3_bucket", "sessions.s3_prefix", "queues.region",
            "queues.endpoint_url", "workflows.<workflow>.projects.<project>.internal_notes"} <= set(table)
    assert table["workflows.<workflow>.description"][1] == "required"
    assert table["webhook.port"][1] == "`8080`"
