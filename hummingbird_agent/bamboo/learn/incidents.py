"""Incident input at the edge: one JSONL line validated into an IncidentInput."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.errors import ConfigError


class IncidentLine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str | None = None
    email_text: str = ""
    task_data: dict[str, Any] = {}
    external_data: dict[str, Any] = {}
    task_logs: dict[str, str] = {}
    fix: dict[str, Any] = {}

    @model_validator(mode="after")
    def _has_content(self) -> IncidentLine:
        if not self.email_text and not self.task_data:
            raise ValueError("needs email_text or task_data")
        return self


def parse_incident(text: str) -> IncidentInput:
    """One line -> IncidentInput; ValueError with a one-line reason otherwise."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg})") from None
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    try:
        line = IncidentLine.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        reason = first["msg"].removeprefix("Value error, ")
        raise ValueError(f"{where}: {reason}" if where else reason) from None
    return IncidentInput(line.email_text, line.task_data, line.external_data, line.task_logs, line.id, line.fix)


def read_lines(path: str) -> list[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def iter_incidents(lines: list[tuple[int, str]]) -> Iterator[tuple[int, IncidentInput | str]]:
    """(line number, incident) or (line number, error reason) for every line."""
    for number, line in lines:
        try:
            yield number, parse_incident(line)
        except ValueError as exc:
            yield number, str(exc)
