"""What the service images install, read from runtime-packages.txt (both image builds call this; stdlib only,
so it runs in a bare Fedora builder too). Refuses, exit 1, when a pyproject.toml dependency has no line.

    python3 scripts/runtime_packages.py rpm      python3dist(NAME) for each rpm line (dnf install arguments)
    python3 scripts/runtime_packages.py wheel    NAME for each wheel line (pip install arguments)
    python3 scripts/runtime_packages.py all      NAME for every line
    python3 scripts/runtime_packages.py modules  the modules the image start check imports
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("rpm", "wheel")


@dataclass(frozen=True, slots=True)
class Package:
    name: str
    source: str
    modules: tuple[str, ...]


def canonical(name: str) -> str:
    """The PEP 503 form of a distribution name (what python3dist() and pip compare)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_packages(path: Path) -> dict[str, Package]:
    """The list's lines by canonical name; ValueError on a malformed or repeated line."""
    packages: dict[str, Package] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) < 2 or fields[1] not in SOURCES:
            raise ValueError(f"{path.name}:{number}: expected 'NAME rpm|wheel [MODULE...]', got {line.strip()!r}")
        name = canonical(fields[0])
        if name in packages:
            raise ValueError(f"{path.name}:{number}: {name} is listed twice")
        packages[name] = Package(name, fields[1], tuple(fields[2:]))
    return packages


def dependencies(pyproject: Path) -> list[str]:
    """[project].dependencies, canonical names without versions, markers or extras."""
    project = tomllib.loads(pyproject.read_text())["project"]
    return [canonical(re.match(r"[A-Za-z0-9._-]+", spec).group()) for spec in project["dependencies"]]


def unlisted(packages: dict[str, Package], pyproject: Path) -> list[str]:
    return [name for name in dependencies(pyproject) if name not in packages]


def selected(packages: dict[str, Package], what: str) -> list[str]:
    """The lines `what` (rpm, wheel, all, modules) prints."""
    if what == "modules":
        return [module for package in packages.values() for module in package.modules]
    chosen = [p.name for p in packages.values() if what == "all" or p.source == what]
    return [f"python3dist({name})" for name in chosen] if what == "rpm" else chosen


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("rpm", "wheel", "all", "modules"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    packages = read_packages(ROOT / "runtime-packages.txt")
    missing = unlisted(packages, ROOT / "pyproject.toml")
    if missing:
        print(f"runtime-packages.txt lacks pyproject.toml dependencies: {', '.join(missing)}", file=sys.stderr)
        return 1
    print("\n".join(selected(packages, argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
