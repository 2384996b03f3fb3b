"""Real tools run on small broken inputs, for the triage's tests: each tool's base input, the same input
moved down by lines added above, and the MR's input with one more problem.

    python -m tests.triage.real_tools   # rewrites tests/triage/real_tools_output.txt (what each tool printed)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
SETUP_HOST = Path(__file__).resolve().parents[2] / "scripts" / "setup-host.sh"
RECORD = Path(__file__).with_name("real_tools_output.txt")


@dataclass(frozen=True)
class Tool:
    """`command` runs in the input's directory on `file`; `added` has one more problem than `base`; `moved`
    puts `lines_above` before `base` (after its first line when `keep_first`, a shebang)."""

    name: str
    command: tuple[str, ...]
    file: str
    base: str
    added: str
    keep_first: bool = False

    @property
    def shown(self) -> str:
        return " ".join(Path(part).name if part.startswith(str(VENV_BIN)) else part for part in self.command)

    def source(self, variant: str) -> str:
        if variant == "added":
            return self.added
        if variant != "moved":
            return self.base
        first, rest = self.base.split("\n", 1) if self.keep_first else ("", self.base)
        comment = "//" if self.file.endswith((".c", ".cpp")) else "#"
        above = "".join(f"{comment} a line the MR added above\n" for _ in range(3))
        return f"{first}\n{above}{rest}" if self.keep_first else above + rest

    def run(self, root: Path, variant: str) -> str:
        """What the tool prints (stdout and stderr, as a CI log shows them) on the variant's input."""
        where = root / variant
        where.mkdir(parents=True, exist_ok=True)
        (where / self.file).write_text(self.source(variant))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PY_COLORS", "FORCE_COLOR"))}
        done = subprocess.run(self.command, cwd=where, env=env, capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode != 0, f"{self.name} passed on the broken input:\n{done.stdout}"
        return done.stdout + done.stderr

    def missing(self) -> str | None:
        """Why its case is skipped: only a tool absent here that scripts/setup-host.sh installs (CI has it)."""
        if shutil.which(self.command[0]) is not None:
            return None
        if self.command[0] in SETUP_HOST.read_text():
            return f"{self.command[0]} is not installed here (scripts/setup-host.sh installs it)"
        raise AssertionError(f"{self.command[0]} is missing and scripts/setup-host.sh does not install it")


PY_BASE = "import os\n\n\ndef f(x):\n    y = 1\n    return x\n"
C_BASE = 'int main(void) {\n    int x = "s";\n    return y;\n}\n'
TEST_BASE = ("def test_parse():\n    assert int('12') == 13\n\n\ndef test_load():\n    assert {}.get('a') == 1\n\n\n"
             "def test_dump():\n    assert str(1) == '1'\n")
SH_BASE = '#!/bin/sh\necho $1\ncd $HOME/dir\n'
TYPED_BASE = "def a(x):\n    return x\n\n\ndef b(x):\n    return x\n"

TOOLS = (
    Tool("ruff", (str(VENV_BIN / "ruff"), "check", "--no-cache", "--isolated", "app.py"), "app.py", PY_BASE,
         PY_BASE.replace("import os\n", "import os\nimport sys\n")),
    Tool("ruff-concise", (str(VENV_BIN / "ruff"), "check", "--no-cache", "--isolated", "--output-format", "concise",
                          "app.py"), "app.py", PY_BASE, PY_BASE.replace("import os\n", "import os\nimport sys\n")),
    Tool("mypy", (sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                  "app.py"), "app.py", TYPED_BASE, TYPED_BASE + "\n\ndef c(x):\n    return x\n"),
    Tool("pytest", (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:asyncio",
                    "test_app.py"), "test_app.py",
         TEST_BASE, TEST_BASE.replace("== '1'", "== '2'")),
    Tool("gcc", ("gcc", "-Wall", "-c", "app.c", "-o", os.devnull), "app.c", C_BASE,
         C_BASE.replace("return y;", "x = z;\n    return y;")),
    Tool("g++", ("g++", "-Wall", "-c", "app.cpp", "-o", os.devnull), "app.cpp", C_BASE,
         C_BASE.replace("return y;", "x = z;\n    return y;")),
    Tool("shellcheck", ("shellcheck", "-f", "gcc", "app.sh"), "app.sh", SH_BASE, SH_BASE + "echo $2\n",
         keep_first=True),
)


def record(root: Path) -> str:
    """Each tool's command and its output on the base and the added input, for a reader to see the shapes."""
    parts = []
    for tool in TOOLS:
        for variant in ("base", "added"):
            parts.append(f"### {tool.name} ({variant})\n$ {tool.shown}\n{tool.run(root / tool.name, variant)}")
    return "\n".join(parts)


def recorded(text: str | None = None) -> dict[tuple[str, str], str]:
    """What `record` wrote: each (tool, variant)'s output, as the tool printed it."""
    found: dict[tuple[str, str], str] = {}
    for part in (text if text is not None else RECORD.read_text()).split("### ")[1:]:
        title, _, rest = part.partition("\n")
        name, _, variant = title.rpartition(" (")
        found[name, variant.rstrip(")")] = rest.partition("\n")[2].removesuffix("\n")
    return found


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        RECORD.write_text(record(Path(scratch)))
