"""A third-party strategy package, written to a directory and installed with pip into its own target directory
(offline: the package carries a small in-tree PEP 517 backend that writes its wheel, so no build tool is fetched).
Its entry points: `acme` (a strategy with a source navigator), `panda` (a clash with a built-in) and `broken`
(a module that does not exist) and `halfdone` (a class without `extract`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ENTRY_POINTS = """[hummingbird_agent.strategies]
acme = acme_strategy:AcmeStrategy
panda = acme_strategy:AcmeStrategy
broken = acme_strategy_missing:Strategy
halfdone = acme_strategy:HalfDone
"""

PYPROJECT = """[build-system]
requires = []
build-backend = "tiny_backend"
backend-path = ["."]

[project]
name = "acme-strategy"
version = "0.1.0"
"""

STRATEGY = '''"""acme: incidents are tickets of the Acme deployer; the Symptom is the ticket's error."""
import re

from hummingbird_agent.bamboo.incident_graph import Edge, KnowledgeGraph, NodeType, RelType, make_node

SOURCE = {"acme/deploy.py": "def deploy(project):\\n    check(project)\\n"
                            "    raise QuotaExceeded(f'acme quota exceeded for {project}')\\n"}


class AcmeNavigator:
    async def navigate(self, question):
        words = set(re.findall(r"[a-z]+", question.lower()))
        return "\\n".join(f"{path}:{n}: {line.strip()}" for path, text in SOURCE.items()
                         for n, line in enumerate(text.splitlines(), 1)
                         if len(words & set(re.findall(r"[a-z]+", line.lower()))) >= 2)


class AcmeStrategy:
    name = "acme"

    def __init__(self, deps):
        self.deps = deps

    def incident_id(self, incident):
        return "acme-" + str(incident.task_data.get("ticket", "0"))

    def task_summary(self, incident):
        return dict(incident.task_data)

    async def prefetch_hints(self, incident):
        return {}

    def source_navigator(self):
        return AcmeNavigator()

    async def extract(self, incident, doc_hints, feedback="", existing=()):
        nodes = (make_node(NodeType.SYMPTOM, "acme: " + incident.task_data["error"]),
                 make_node(NodeType.CAUSE, "project over its Acme quota"),
                 make_node(NodeType.RESOLUTION, "raise the project's quota"),
                 make_node(NodeType.PROCEDURE, "read the deployer's quota report"))
        edges = (Edge(nodes[0].key, RelType.INDICATE, nodes[1].key),
                 Edge(nodes[1].key, RelType.SOLVED_BY, nodes[2].key),
                 Edge(nodes[1].key, RelType.INVESTIGATED_BY, nodes[3].key))
        return KnowledgeGraph(nodes, edges)


class HalfDone:
    name = "halfdone"

    def __init__(self, deps):
        self.deps = deps

    def incident_id(self, incident):
        return "half"

    def task_summary(self, incident):
        return {}

    async def prefetch_hints(self, incident):
        return {}
'''

BACKEND = '''"""In-tree PEP 517 backend: a pure-Python wheel of acme_strategy, written with zipfile."""
import base64, hashlib, pathlib, zipfile

NAME, VERSION = "acme_strategy", "0.1.0"
INFO = f"{NAME}-{VERSION}.dist-info"


def _files():
    root = pathlib.Path(__file__).parent
    yield f"{NAME}/__init__.py", (root / NAME / "__init__.py").read_bytes()
    yield f"{INFO}/METADATA", f"Metadata-Version: 2.1\\nName: acme-strategy\\nVersion: {VERSION}\\n".encode()
    yield f"{INFO}/WHEEL", b"Wheel-Version: 1.0\\nGenerator: tiny\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    yield f"{INFO}/entry_points.txt", (root / "entry_points.txt").read_bytes()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / name, "w") as wheel:
        for path, data in _files():
            wheel.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        wheel.writestr(f"{INFO}/RECORD", "\\n".join(record + [f"{INFO}/RECORD,,"]) + "\\n")
    return name
'''


def write_package(root: Path) -> Path:
    """The package's source tree under `root`; returns its directory."""
    package = root / "acme-strategy"
    (package / "acme_strategy").mkdir(parents=True)
    (package / "pyproject.toml").write_text(PYPROJECT)
    (package / "tiny_backend.py").write_text(BACKEND)
    (package / "entry_points.txt").write_text(ENTRY_POINTS)
    (package / "acme_strategy" / "__init__.py").write_text(STRATEGY)
    return package


def install(root: Path) -> Path:
    """pip-install the package into `root/site` (no index, no build isolation, no dependencies); returns it."""
    target = root / "site"
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation", "--no-deps",
               "--disable-pip-version-check", "--target", str(target), str(write_package(root))]
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)
    return target
