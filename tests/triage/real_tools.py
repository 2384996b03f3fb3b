"""Real compilers, linters, type checkers and test runners run on small broken inputs, for the triage's tests:
each tool's base input, the same input moved down by lines added above, and the MR's input with one more problem
or failing test. What they printed is recorded in real_tools_output.txt; the tests read the record, and one test
runs the tools installed here again and checks that they still report what the record says.

    python -m tests.triage.real_tools   # rewrites tests/triage/real_tools_output.txt (needs every tool)

Installed by scripts/setup-host.sh (Debian packages; npm packages pinned in tests/triage/tools/package.json).
Not run here: Maven Surefire and Gradle (both fetch plugins from a repository this machine cannot reach); their
report formats are read from their printers' source (hummingbird_agent/logs/findings.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.triage import real_tool_sources as src

VENV_BIN = Path(sys.executable).parent
HERE = Path(__file__).resolve().parent
SETUP_HOST = HERE.parents[1] / "scripts" / "setup-host.sh"
NPM_TOOLS = HERE / "tools"
NPM_BIN = NPM_TOOLS / "node_modules" / ".bin"
RECORD = HERE / "real_tools_output.txt"
VARIANTS = ("base", "moved", "added")
JUNIT5 = "/usr/share/java/junit-platform-console-standalone.jar"
JUNIT4 = "/usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar"
# A line comment per input file's language, for the lines `moved` adds above the input.
_HASH_COMMENT = (".py", ".sh", ".rb", ".t", ".txt")
# Environment each run starts from: no colours, no backtraces, no cached results (output must not depend on the
# terminal or an earlier run).
_QUIET_ENV = {"NO_COLOR": "1", "RUST_BACKTRACE": "0", "GOFLAGS": "-count=1", "CARGO_TERM_COLOR": "never"}


@dataclass(frozen=True)
class Tool:
    """`command` runs in the input's directory, where `file` holds the variant's input and `extra` the files it
    needs; `more`: the replacement (old, new) that makes the MR's input (one more problem than `base`); `moved`
    puts three comment lines before `base` (after its first line when `keep_first`: a shebang, `<?php`)."""

    name: str
    command: tuple[str, ...]
    file: str
    base: str
    more: tuple[str, str]
    keep_first: bool = False
    extra: tuple[tuple[str, str], ...] = ()
    needs: str = ""
    """The program that must be installed (default: the command's first word)."""

    @property
    def shown(self) -> str:
        return " ".join(Path(part).name if part.startswith((str(VENV_BIN), str(NPM_BIN))) else part
                        for part in self.command)

    def source(self, variant: str) -> str:
        if variant == "added":
            assert self.more[0] in self.base, self.name
            return self.base.replace(self.more[0], self.more[1])
        if variant != "moved":
            return self.base
        first, rest = self.base.split("\n", 1) if self.keep_first else ("", self.base)
        comment = "#" if self.file.endswith(_HASH_COMMENT) else "//"
        above = "".join(f"{comment} a line the MR added above\n" for _ in range(3))
        return f"{first}\n{above}{rest}" if self.keep_first else above + rest

    def run(self, root: Path, variant: str) -> str:
        """What the tool prints (stdout, then stderr) on the variant's input."""
        where = root / variant
        where.mkdir(parents=True, exist_ok=True)
        for name, text in ((self.file, self.source(variant)), *self.extra):
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            (where / name).write_text(text)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PY_COLORS", "FORCE_COLOR"))}
        done = subprocess.run(self.command, cwd=where, env=env | _QUIET_ENV, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode != 0, f"{self.name} passed on the broken input:\n{done.stdout}"
        return done.stdout + done.stderr

    def missing(self) -> str | None:
        """Why the tool cannot run here: only a tool absent here that the project's set-up installs (CI has it)."""
        program = self.needs or self.command[0]
        if shutil.which(program) is not None or program.endswith(".jar") and Path(program).is_file():
            return None
        installers = SETUP_HOST.read_text() + (NPM_TOOLS / "package.json").read_text()
        if Path(program).name.removesuffix(".jar").split("-")[0] in installers:
            return f"{program} is not installed here (scripts/setup-host.sh installs it)"
        raise AssertionError(f"{program} is missing and scripts/setup-host.sh does not install it")


def _sh(script: str) -> tuple[str, ...]:
    return ("sh", "-c", script)


_PY = sys.executable
TOOLS = (
    Tool("ruff", (str(VENV_BIN / "ruff"), "check", "--no-cache", "--isolated", "app.py"), "app.py", src.PY,
         ("import os\n", "import os\nimport sys\n")),
    Tool("ruff-concise", (str(VENV_BIN / "ruff"), "check", "--no-cache", "--isolated", "--output-format", "concise",
                          "app.py"), "app.py", src.PY, ("import os\n", "import os\nimport sys\n")),
    Tool("mypy", (_PY, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, "app.py"), "app.py",
         src.TYPED, ("return x\n\n\ndef b", "return x\n\n\ndef c(x):\n    return x\n\n\ndef b")),
    Tool("pytest", (_PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:asyncio", "test_app.py"),
         "test_app.py", src.PYTEST, ("== '1'", "== '2'")),
    Tool("unittest", (_PY, "-m", "unittest", "test_app"), "test_app.py", src.UNITTEST, ('str(1), "1"', 'str(1), "2"')),
    Tool("gcc", ("gcc", "-Wall", "-c", "app.c", "-o", os.devnull), "app.c", src.C, src.C_MORE),
    Tool("g++", ("g++", "-Wall", "-c", "app.cpp", "-o", os.devnull), "app.cpp", src.C, src.C_MORE),
    Tool("shellcheck", ("shellcheck", "-f", "gcc", "app.sh"), "app.sh", src.SH, ("cd $HOME/dir\n", "cd $HOME/dir\n"
                                                                                 "echo $2\n"), keep_first=True),
    Tool("go-test", ("go", "test", "app_test.go"), "app_test.go", src.GO_TEST, src.GO_MORE),
    Tool("go-build", ("go", "build", "-o", os.devnull, "app.go"), "app.go", src.GO_BUILD, src.GO_BUILD_MORE),
    Tool("cargo-test", ("cargo", "test", "--offline", "--", "--test-threads=1"), "src/lib.rs", src.CARGO_LIB,
         src.CARGO_MORE, extra=(("Cargo.toml", src.CARGO_TOML),)),
    Tool("rustc", ("rustc", "--edition", "2021", "--crate-type", "lib", "--emit", "metadata", "-o", os.devnull,
                   "app.rs"), "app.rs", src.RUST, src.RUST_MORE),
    Tool("ctest", _sh("cmake -S . -B build >/dev/null && ctest --test-dir build --output-on-failure"),
         "CMakeLists.txt", src.CMAKE, src.CMAKE_MORE, needs="ctest"),
    Tool("jest", (str(NPM_BIN / "jest"), "--ci", "app.test.js"), "app.test.js", src.JEST, src.JS_MORE,
         extra=(("jest.config.json", "{}\n"),)),
    Tool("mocha", (str(NPM_BIN / "mocha"), "app.test.js"), "app.test.js", src.MOCHA, src.JS_ASSERT_MORE),
    Tool("node-test", ("node", "--test", "--test-reporter=tap", "app.test.mjs"), "app.test.mjs", src.NODE_TEST,
         src.JS_ASSERT_MORE),
    Tool("eslint", (str(NPM_BIN / "eslint"), "app.mjs"), "app.mjs", src.ESLINT, src.ESLINT_MORE,
         extra=(("eslint.config.mjs", src.ESLINT_CONFIG),)),
    Tool("tsc", (str(NPM_BIN / "tsc"), "--noEmit", "--strict", "app.ts"), "app.ts", src.TS, src.TS_MORE),
    Tool("prove", ("prove", "app.t"), "app.t", src.PERL, src.PERL_MORE),
    Tool("phpunit", ("phpunit", "--do-not-cache-result", "AppTest.php"), "AppTest.php", src.PHP, src.PHP_MORE,
         keep_first=True),
    Tool("rspec", ("rspec", "app_spec.rb"), "app_spec.rb", src.RSPEC, src.RSPEC_MORE),
    Tool("junit5", _sh(f"javac -d . -cp {JUNIT5} AppTest.java && java -jar {JUNIT5} -cp . --select-class AppTest "
                       "--disable-banner --disable-ansi-colors --details=tree"), "AppTest.java", src.JUNIT5,
         src.JAVA_MORE, needs=JUNIT5),
    Tool("junit4", _sh(f"javac -d . -cp {JUNIT4} AppTest.java && java -cp .:{JUNIT4} org.junit.runner.JUnitCore "
                       "AppTest"), "AppTest.java", src.JUNIT4, src.JAVA_MORE, needs="/usr/share/java/junit4.jar"),
    Tool("javac", ("javac", "-d", "out", "App.java"), "App.java", src.JAVAC, src.JAVAC_MORE),
)
_TITLE = re.compile(r"^### (?P<name>\S+) \((?P<variant>\w+)\)\n\$ .*\n", re.MULTILINE)


def record(root: Path) -> str:
    """Each tool's command and its output on every variant, for a reader to see the shapes."""
    parts = []
    for tool in TOOLS:
        for variant in VARIANTS:
            parts.append(f"### {tool.name} ({variant})\n$ {tool.shown}\n{tool.run(root / tool.name, variant)}")
    return "\n".join(parts)


def recorded(text: str | None = None) -> dict[tuple[str, str], str]:
    """What `record` wrote: each (tool, variant)'s output, as the tool printed it."""
    text = text if text is not None else RECORD.read_text()
    titles = list(_TITLE.finditer(text))
    ends = [t.start() for t in titles[1:]] + [len(text)]
    return {(t["name"], t["variant"]): text[t.end():end].removesuffix("\n") for t, end in zip(titles, ends,
                                                                                              strict=True)}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        RECORD.write_text(record(Path(scratch)))
