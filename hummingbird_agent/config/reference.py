"""The config reference table (docs/configuration.md, "Configuration reference"), generated from the schema: every
key's path, type, default and field docstring. `python -m hummingbird_agent.config.reference docs/configuration.md`
rewrites it."""

from __future__ import annotations

import ast
import inspect
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from hummingbird_agent.config import knowledge, providers, schema, triage
from hummingbird_agent.config.schema import Config

START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"


def field_docs() -> dict[tuple[str, str], str]:
    """(class name, field name) -> the docstring written under the field in the schema's modules."""
    trees = [ast.parse(inspect.getsource(module)) for module in (schema, providers, knowledge, triage)]
    docs: dict[tuple[str, str], str] = {}
    for cls in (n for tree in trees for n in tree.body if isinstance(n, ast.ClassDef)):
        for field, doc in zip(cls.body, cls.body[1:], strict=False):
            if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                    and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                    and isinstance(doc.value.value, str)):
                docs[(cls.name, field.target.id)] = " ".join(doc.value.value.split())
    return docs


def rows(model: type[BaseModel] = Config, prefix: str = "") -> Iterator[tuple[str, str, str, str]]:
    """(key path, type, default, description) of every leaf key, sections expanded in place."""
    docs = field_docs()
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        nested, key = _nested(info.annotation)
        if nested is not None:
            yield from rows(nested, f"{path}.{key}." if key else f"{path}.")
            continue
        # A field declared on a base class (a shared connection section) has its docstring there.
        doc = next((docs[(c.__name__, name)] for c in model.__mro__ if (c.__name__, name) in docs), "")
        yield path, _type(info.annotation), _default(info), doc


def render() -> str:
    lines = ["| Key | Type | Default | Meaning |", "|---|---|---|---|"]
    lines += [f"| {_key(path)} | {_cell(kind)} | {_cell(default)} | {_cell(doc)} |"
              for path, kind, default, doc in rows()]
    return "\n".join(lines)


def _key(path: str) -> str:
    """The key as HTML code that a narrow column breaks after a dot, never inside a name."""
    escaped = path.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"<code>{escaped.replace('.', '.<wbr>')}</code>"


def rewrite(page: Path) -> bool:
    """Replace the table between the markers in `page`; True when it changed."""
    text = page.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n\n{render()}\n\n{END}{tail}"
    if new != text:
        page.write_text(new, encoding="utf-8")
    return new != text


def _nested(annotation: Any) -> tuple[type[BaseModel] | None, str]:
    """The section model a field holds (directly, optionally, or as the values of a dict) and its key part."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is dict and len(args) == 2:
        inner, _ = _nested(args[1])
        return inner, f"<{args[1].__name__.removesuffix('Config').lower() or 'name'}>" if inner else ""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        return (models[0], "") if len(models) == 1 else (None, "")
    return None, ""


def _type(annotation: Any) -> str:
    if typing.get_origin(annotation) is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in typing.get_args(annotation))
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    return text.replace("typing.", "").replace("NoneType", "None").replace("|", "\\|")


def _default(info: Any) -> str:
    if info.default is PydanticUndefined and info.default_factory is None:
        return "required"
    value = info.default_factory() if info.default is PydanticUndefined else info.default
    if value is None:
        return "unset"
    if isinstance(value, tuple | list | dict) and not value:
        return "empty"
    return f"`{value!r}`" if not isinstance(value, str) else f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|") if "\\|" not in text else text


if __name__ == "__main__":
    page = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/configuration.md")
    print(f"{page}: config reference " + ("updated" if rewrite(page) else "unchanged"))
