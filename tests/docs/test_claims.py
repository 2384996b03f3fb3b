"""What the README and the pages name is what the code has: every config key exists in the schema, a default or
value written beside a key is the schema's, a limit written beside its budgets constant is the constant's value,
every `python -m hummingbird_agent ...` names real commands, and every `make` target named exists."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import hummingbird_agent.budgets as budgets
from hummingbird_agent.cli import build_parser
from hummingbird_agent.config.reference import rows
from tests.docs.blocks import REPO

PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]
SECTIONS = "gitlab|model|queues|webhook|sessions|sandbox|bamboo|triage|workflows"
KEY = re.compile(rf"`((?:{SECTIONS})\.[A-Za-z_.<>*]+)`")
# `key` (default 30), `key` (60 s), `CONSTANT` (8 MiB), `CONSTANT` = 100: a number, maybe a unit
VALUE = r"(\d[\d,]*(?:\.\d+)?)(?: ?(s|h|minutes|MiB|KiB))?\b"
KEY_VALUE = re.compile(rf"`([a-z_][a-z_.]*)` \((?:default )?{VALUE}")
CONSTANT_VALUE = re.compile(rf"`([A-Z][A-Z0-9_]{{3,}})`(?: = | \(){VALUE}")
UNITS = {"": 1, "s": 1, "h": 3600, "minutes": 60, "MiB": 2**20, "KiB": 2**10}
COMMAND = re.compile(r"python3? -m hummingbird_agent((?: [a-z][a-z-]*)+)")
MAKE = re.compile(r"`make ([a-z-]+)")
SCHEMA = {path: default.strip("`") for path, _, default, _ in rows()}


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _paths(key: str) -> list[str]:
    """The schema paths a page's key names: itself or its section, also a workflow's setting named without its
    workflow (`triage.model_when`)."""
    key = key.replace("*", "<workflow>").rstrip(".")
    return [p for p in SCHEMA if p == key or p.endswith("." + key) or p.startswith(key + ".") or f".{key}." in p]


def _number(value: str, unit: str) -> float:
    return float(value.replace(",", "")) * UNITS[unit]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_config_key_named_exists(page: Path) -> None:
    named = {k for k in KEY.findall(_text(page)) if not re.search(r"\.(py|gz|md|json)$", k)}
    assert [k for k in sorted(named) if not _paths(k)] == []


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_a_value_written_beside_a_key_is_its_default(page: Path) -> None:
    wrong = []
    for key, value, unit in KEY_VALUE.findall(_text(page)):
        for path in (p for p in _paths(key) if p.endswith(key)):
            if float(SCHEMA[path]) != _number(value, unit):
                wrong.append(f"{key} ({value} {unit}) but the schema says {SCHEMA[path]}")
    assert wrong == []


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_a_value_written_beside_a_limit_is_the_limit(page: Path) -> None:
    wrong = []
    for name, value, unit in CONSTANT_VALUE.findall(_text(page)):
        actual = getattr(budgets, name, None)
        if isinstance(actual, int | float) and float(actual) != _number(value, unit):
            wrong.append(f"{name} ({value} {unit}) but budgets says {actual}")
    assert wrong == []


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(subs[0].choices) if subs else {}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_command_named_exists(page: Path) -> None:
    unknown = []
    for words in COMMAND.findall(_text(page)):
        parser = build_parser()
        for word in words.split():
            choices = _choices(parser)
            if not choices:
                break  # a positional argument or an option's value follows
            if word not in choices:
                unknown.append(words.strip())
                break
            parser = choices[word]
    assert unknown == []


def test_every_make_target_named_exists() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z-]+):", makefile, re.M))
    named = {t for page in PAGES for t in MAKE.findall(_text(page))}
    assert named and named <= targets, named - targets


def test_every_make_variable_named_is_one_the_makefile_reads() -> None:
    """`make test TEST_WORKERS=0`, `make serve KEEP_PODMAN_CONF=1`: each variable has a default and is used."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    named = {v for page in PAGES for v in re.findall(r"`make [a-z-]+ ([A-Z_]+)=", _text(page))}
    assert {"TEST_WORKERS", "KEEP_PODMAN_CONF"} <= named
    assert all(re.search(rf"^{v} \?= ", makefile, re.M) and f"$({v})" in makefile for v in named), named
