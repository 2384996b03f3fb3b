"""Collects, by an AST scan of the package, every environment variable name the code reads: `*_env` string
defaults in config models, `.secret("X")`, `env.get("X")`, `environ.get("X")`, `os.environ["X"]`,
`os.getenv("X")`, and the keys and values of module-level `*ENV*` dicts (ENV_OVERRIDES, DEFAULT_KEY_ENV).
Arguments may be string literals or module-level string constants."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
# Attribute or variable names that hold an environment mapping (os.environ, LoadedConfig.env, a local `env`).
_ENV_MAPPINGS = ("env", "environ", "environment")


@dataclass(frozen=True, slots=True)
class EnvRead:
    name: str
    where: str  # "path:line"
    how: str  # default | secret | get | subscript | getenv | overrides


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level NAME = "string" assignments."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value.value
    return out


def _string(node: ast.expr | None, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _tail_name(node: ast.expr) -> str:
    """`os.environ` -> environ, `self.env` -> env, `env` -> env."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _default_of(node: ast.AnnAssign | ast.Assign, constants: dict[str, str]) -> str | None:
    value = node.value
    if isinstance(value, ast.Call) and value.args:  # Field("X", ...)
        value = value.args[0]
    return _string(value, constants)


def _reads_in(node: ast.AST, constants: dict[str, str]) -> tuple[str, str | None] | None:
    """(how, name) when `node` reads one environment variable."""
    if isinstance(node, ast.AnnAssign | ast.Assign):
        targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
        if any(isinstance(t, ast.Name) and t.id.endswith("_env") for t in targets):
            return "default", _default_of(node, constants)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        func, first = node.func, node.args[0]
        if func.attr == "secret":
            return "secret", _string(first, constants)
        if func.attr == "get" and _tail_name(func.value) in _ENV_MAPPINGS:
            return "get", _string(first, constants)
        if func.attr == "getenv":
            return "getenv", _string(first, constants)
    if isinstance(node, ast.Subscript) and _tail_name(node.value) in _ENV_MAPPINGS:
        return "subscript", _string(node.slice, constants)
    return None


def _override_keys(tree: ast.Module) -> list[tuple[str, int]]:
    """Keys and values of module-level dict literals bound to a name containing ENV that look like variable names
    (ENV_OVERRIDES keys, DEFAULT_KEY_ENV values)."""
    out = []
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and "ENV" in target.id and isinstance(value, ast.Dict):
            for item in [*value.keys, *value.values]:
                if isinstance(item, ast.Constant) and isinstance(item.value, str) and ENV_NAME.match(item.value):
                    out.append((item.value, item.lineno))
    return out


def scan_source(source: str, label: str) -> list[EnvRead]:
    """Every environment-variable read in one module's source."""
    tree = ast.parse(source, filename=label)
    constants = _constants(tree)
    found = [EnvRead(name, f"{label}:{line}", "overrides") for name, line in _override_keys(tree)]
    for node in ast.walk(tree):
        hit = _reads_in(node, constants)
        if hit and hit[1] and ENV_NAME.match(hit[1]):
            found.append(EnvRead(hit[1], f"{label}:{getattr(node, 'lineno', 0)}", hit[0]))
    return found


def scan_package(package_dir: Path) -> list[EnvRead]:
    """Every environment-variable read in the package's modules."""
    root = package_dir.parent
    found: list[EnvRead] = []
    for path in sorted(package_dir.rglob("*.py")):
        found += scan_source(path.read_text(encoding="utf-8"), str(path.relative_to(root)))
    return found
