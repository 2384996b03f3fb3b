"""Field types and checks of the config schema: strict numbers with ranges and units, environment-variable
names that are never echoed, regular expressions compiled at load, URL paths."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, PlainValidator, ValidationInfo, field_validator

# What an `*_env` value must look like: the name of an environment variable, never its value.
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
# A model provider a model connection or the knowledge base may name.
Provider = Literal["gemini", "anthropic", "openai"]


def _shown(value: Any) -> str:
    """A rejected value as the error shows it: numbers and booleans as YAML writes them, other types by kind
    only (a string could be a pasted secret)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if value is None:
        return "null"
    return "text" if isinstance(value, str) else type(value).__name__


def _bound(limit: float) -> str:
    """A range limit as written in the schema: 16777216, not 1.67772e+07; 0.01 stays 0.01."""
    return str(int(limit)) if float(limit).is_integer() else f"{limit:g}"


@dataclass(frozen=True, slots=True)
class _Number:
    """Accepts int (and for non-whole fields float) within [lo, hi]; never bool, never float-for-int."""

    lo: float
    hi: float
    unit: str
    whole: bool
    optional: bool

    def __call__(self, value: Any) -> Any:
        if value is None and self.optional:
            return None
        kinds: tuple[type, ...] = (int,) if self.whole else (int, float)
        ok = isinstance(value, kinds) and not isinstance(value, bool)
        if ok and not (math.isfinite(value) and self.lo <= value <= self.hi):
            ok = False
        if not ok:
            kind = "a whole number" if self.whole else "a number"
            raise ValueError(f"must be {kind} from {_bound(self.lo)} to {_bound(self.hi)} {self.unit}, "
                             f"got {_shown(value)}")
        return value if self.whole else float(value)


def whole(lo: int, hi: int, unit: str, *, optional: bool = False) -> Any:
    """Validator of an int field: a whole number within [lo, hi]; `unit` appears in the error."""
    return PlainValidator(_Number(lo, hi, unit, True, optional))


def number(lo: float, hi: float, unit: str) -> Any:
    """Validator of a float field: an int or float within [lo, hi]; `unit` appears in the error."""
    return PlainValidator(_Number(lo, hi, unit, False, False))


def _numeric_kinds(annotation: Any) -> set[type]:
    return {t for t in (annotation, *get_args(annotation)) if t in (int, float, bool)}


class StrictModel(BaseModel):
    """Base of every config section: unknown keys are errors, values are frozen, every `*_env` value is an
    environment variable name, and number fields take neither booleans nor (for whole numbers) fractions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _strict_fields(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.field_name or ""
        if name.endswith("_env") and isinstance(value, str) and not ENV_NAME.fullmatch(value):
            # The value is not repeated: a secret pasted here must not reach a terminal or a log.
            raise ValueError("must be the name of an environment variable (A-Z, 0-9, _; not starting with a digit)")
        field = cls.model_fields.get(name)
        if field is None or any(isinstance(getattr(m, "func", None), _Number) for m in field.metadata):
            return value  # whole()/number() fields check type and range themselves, with the unit
        kinds = _numeric_kinds(field.annotation)
        if kinds and bool not in kinds and isinstance(value, bool):
            raise ValueError(f"must be a number, got {_shown(value)}")
        if kinds == {int} and isinstance(value, float):
            raise ValueError(f"must be a whole number, got {_shown(value)}")
        return value


def compiled_regexes(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """`patterns` unchanged when each compiles as a Python regular expression; else ValueError naming it."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {pattern[:80]!r} ({exc})") from None
    return patterns


def require_for_backend(section: BaseModel, backend: str, key: str) -> None:
    """ValueError when `section` selects `backend` but leaves `key`, which that backend needs, unset."""
    if getattr(section, "backend", None) == backend and not getattr(section, key):
        raise ValueError(f"{key} is required with backend {backend}")


def url_path(value: str) -> str:
    """A URL path such as `/webhook`: starts with `/`, no spaces, query or fragment."""
    if not value.startswith("/") or any(c in value for c in " ?#\t\r\n"):
        raise ValueError("must be a URL path starting with '/' (for example /webhook)")
    return value
