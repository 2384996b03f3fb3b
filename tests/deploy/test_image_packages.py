"""Both service images install what the service imports: runtime-packages.txt covers pyproject.toml's
dependencies and their requirements (as installed in this .venv), the Containerfile installs every dependency
and everything its --no-deps wheels require, the Debian build installs the whole list. Static: no image is built
(the Fedora-based Containerfile cannot be built without its registry); test_image.py runs the Debian one."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


rp = _load("runtime_packages")
LISTED = rp.read_packages(ROOT / "runtime-packages.txt")
DEPENDENCIES = rp.dependencies(ROOT / "pyproject.toml")


def requirements(name: str, extras: frozenset[str] = frozenset()) -> dict[str, frozenset[str]]:
    """What the installed distribution `name` (with `extras`) requires here: canonical name -> extras asked."""
    wanted: dict[str, frozenset[str]] = {}
    for line in metadata.requires(name) or []:
        req = Requirement(line)
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in {"", *extras}):
            continue
        if req.name.replace("-", "_") in sys.stdlib_module_names:
            continue
        key = rp.canonical(req.name)
        wanted[key] = wanted.get(key, frozenset()) | frozenset(req.extras)
    return wanted


def closure(roots: list[str], descend: set[str] | None = None) -> dict[str, str]:
    """Every distribution `roots` need, transitively -> the first one that needs it ('pyproject.toml' for a
    root). With `descend`, only the requirements of those distributions are followed (and of the extras asked
    of others)."""
    found: dict[str, str] = {}
    extras: dict[str, frozenset[str]] = {}
    stack = [(name, frozenset[str](), "pyproject.toml") for name in roots]
    while stack:
        name, asked, by = stack.pop()
        if name in found and asked <= extras[name]:
            continue
        found.setdefault(name, by)
        extras[name] = extras.get(name, frozenset()) | asked
        wanted = requirements(name, extras[name])
        if descend is not None and name not in descend:  # only what the extras asked for adds to it
            wanted = {req: more for req, more in wanted.items() if req not in requirements(name)}
        stack += [(req, more, name) for req, more in wanted.items()]
    return found


def _commands(text: str) -> list[list[str]]:
    """The shell commands of every RUN instruction, each as tokens (`&&` and `;` split commands)."""
    joined = re.sub(r"\\\n", " ", text)
    commands: list[list[str]] = []
    for line in joined.splitlines():
        if line.startswith("RUN ") and not line.rstrip().endswith("]"):
            tokens = shlex.split(line[4:], comments=True, posix=True)
            commands += [c.split() for c in " ".join(tokens).replace(";", " && ").split(" && ")]
    return commands


def _rpms(args: list[str]) -> dict[str, str]:
    installed: dict[str, str] = {}
    for arg in args:
        if m := re.fullmatch(r"python3dist\((.+)\)", arg):
            installed[rp.canonical(m.group(1))] = "rpm"
        elif m := re.fullmatch(r"python3-(.+)", arg):
            installed[rp.canonical(m.group(1))] = installed[f"python-{rp.canonical(m.group(1))}"] = "rpm"
    return installed


def containerfile_installs(text: str) -> dict[str, str]:
    """Distribution -> rpm/wheel for what the Containerfile installs into its installroot: literal python3-NAME
    (NAME or python-NAME) and python3dist(NAME) RPMs, literal pip names, and runtime_packages.py's lines."""
    installed: dict[str, str] = {}
    for line in text.splitlines():
        for source in ("rpm", "wheel"):
            if re.search(rf"runtime_packages\.py {source}\b", line):
                installed |= {name: source for name, p in LISTED.items() if p.source == source}
    for command in _commands(text):
        args = command[command.index("install") + 1:] if "install" in command else []
        if "dnf" in command and any(a.startswith("--installroot") for a in args):
            installed |= _rpms(args)
        elif "pip" in command:
            installed |= {rp.canonical(a): "wheel" for a, before in zip(args, ["", *args[:-1]], strict=True)
                          if not a.startswith(("-", "$", '"')) and before not in ("-c", "--target", "-r")}
    return installed


def test_the_list_holds_every_runtime_dependency_and_requirement_and_nothing_else() -> None:
    needed = closure(DEPENDENCIES)
    missing = sorted(f"{name} (required by {by})" for name, by in needed.items() if name not in LISTED)
    assert not missing, f"runtime-packages.txt lacks: {', '.join(missing)}"
    assert not set(LISTED) - set(needed), f"listed but not needed: {sorted(set(LISTED) - set(needed))}"


def test_containerfile_installs_every_dependency_and_what_its_wheels_require() -> None:
    installed = containerfile_installs((ROOT / "Containerfile").read_text())
    wheels = {name for name, source in installed.items() if source == "wheel"}
    # An RPM brings its own requirements (dnf); a --no-deps wheel brings none: each must be installed too.
    needed = closure(DEPENDENCIES, descend=wheels)
    direct = sorted(name for name in DEPENDENCIES if name not in installed)
    indirect = sorted(f"{name} (for {by})" for name, by in needed.items() if name not in installed
                      and by != "pyproject.toml")
    assert not direct and not indirect, (
        f"the Containerfile does not install: dependencies {', '.join(direct) or '-'}; "
        f"requirements of its wheels {', '.join(indirect) or '-'}")


def test_the_containerfile_takes_its_packages_from_the_list_only() -> None:
    text = (ROOT / "Containerfile").read_text()
    assert containerfile_installs(text) == {name: p.source for name, p in LISTED.items()}
    [pip] = [c for c in _commands(text) if "pip" in c and "install" in c]
    assert {"--no-deps", "--only-binary=:all:", "-c", "/build/constraints.txt", "$wheels"} <= set(pip)


def test_the_debian_build_installs_the_whole_list_as_pinned_wheels_without_resolving() -> None:
    script = (ROOT / "scripts" / "build-service-image.sh").read_text()
    assert 'scripts/runtime_packages.py all >"$ctx/requirements.txt"' in script
    flags = re.search(r"^PIP_FLAGS=\((.*)\)$", script, re.M)
    assert flags and set(flags.group(1).split()) == {"--only-binary=:all:", "--no-deps", "-c", "constraints.txt"}
    assert '"${PIP_FLAGS[@]}" \\\n    -r "$ctx/requirements.txt"' in script


def test_every_wheel_is_pinned_at_the_version_installed_here() -> None:
    pins = dict(re.findall(r"^([A-Za-z0-9._-]+)==(\S+)$", (ROOT / "constraints.txt").read_text(), re.M))
    pins = {rp.canonical(name): version for name, version in pins.items()}
    # The Debian build installs every line as a wheel.
    unpinned = sorted(f"{name} ({pins.get(name)} != {metadata.version(name)})" for name in LISTED
                      if pins.get(name) != metadata.version(name))
    assert not unpinned, f"constraints.txt must pin: {', '.join(unpinned)}"


def test_the_listed_modules_are_the_dependencies_own() -> None:
    owners = metadata.packages_distributions()
    for name, package in LISTED.items():
        assert bool(package.modules) == (name in DEPENDENCIES), f"{name}: modules only on direct dependencies"
        for module in package.modules:
            dists = {rp.canonical(d) for d in owners.get(module.split(".")[0], [])}
            assert name in dists, f"{module} is not a module of {name} (it is of {dists})"
            assert importlib.util.find_spec(module), module


def test_both_builds_end_with_the_start_check() -> None:
    containerfile = (ROOT / "Containerfile").read_text()
    final = containerfile[containerfile.rindex("FROM scratch"):]
    assert '"/run/build/scripts/image_start_check.py", "--modules-from", "/run/build/modules.txt"' in final
    assert "runtime_packages.py modules >/build/modules.txt" in containerfile
    script = (ROOT / "scripts" / "build-service-image.sh").read_text()
    assert "python3 /run/check/image_start_check.py --modules-from /run/check/modules.txt" in script
    assert 'scripts/runtime_packages.py modules >"$ctx/check/modules.txt"' in script


def test_a_dependency_missing_from_the_list_stops_both_builds(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "runtime_packages.py", tmp_path / "scripts")
    shutil.copy(ROOT / "runtime-packages.txt", tmp_path)
    pyproject = (ROOT / "pyproject.toml").read_text().replace('"numpy",', '"numpy",\n    "Fresh_Dep>=1",')
    (tmp_path / "pyproject.toml").write_text(pyproject)
    for what in ("rpm", "wheel", "all", "modules"):
        result = subprocess.run([sys.executable, str(tmp_path / "scripts" / "runtime_packages.py"), what],
                                capture_output=True, text=True, check=False)
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr == "runtime-packages.txt lacks pyproject.toml dependencies: fresh-dep\n"
