"""Every import of the package, function-level and type-checking ones included, goes to the importer's own layer
or a lower one (hummingbird_agent/architecture.py), and no set of modules imports itself in a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import hummingbird_agent
from hummingbird_agent.architecture import LAYERS

PACKAGE = Path(hummingbird_agent.__file__).parent
NAME = "hummingbird_agent"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """Modules of the package that `name` imports anywhere in its file."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names)
    return {m for m in found if m in modules and m != name}


def _layer(module: str) -> int:
    rel = module.removeprefix(NAME).removeprefix(".")
    best, where = -1, -1
    for index, (_, prefixes, _) in enumerate(LAYERS):
        for prefix in prefixes:
            if (rel == prefix or rel.startswith(prefix + ".") or prefix == "") and len(prefix) > best:
                best, where = len(prefix), index
    return where


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, name, modules) for name, path in modules.items()}


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in _modules() if _layer(m) < 0]
    assert unplaced == []


def test_no_import_goes_up_a_layer() -> None:
    upward = sorted(
        f"{src} ({LAYERS[_layer(src)][0]}) imports {dst} ({LAYERS[_layer(dst)][0]})"
        for src, targets in _graph().items() for dst in targets if _layer(dst) > _layer(src)
    )
    assert upward == []


def test_no_import_cycle() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert cycles == []
