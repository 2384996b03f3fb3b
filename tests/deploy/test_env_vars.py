"""Every environment variable the code reads is listed in kubernetes/service/secret.yaml or documented as optional
in README.md or docs/; the collector behind it finds new reads by itself."""

from __future__ import annotations

import re

from tests.deploy.envscan import scan_package, scan_source
from tests.deploy.manifests import KUBE_DIR, ROOT, secret_names

PACKAGE = ROOT / "hummingbird_agent"
# boto reads these itself for the SQS queues and S3 sessions; the code never names them.
AWS_NAMES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION")


def readme_optional() -> set[str]:
    """Backticked UPPER_CASE names in paragraphs of README.md and docs/ that say "optional"."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n\n".join(p.read_text(encoding="utf-8") for p in pages)
    names: set[str] = set()
    for paragraph in re.split(r"\n\s*\n", text):
        if "optional" in paragraph.lower():
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", paragraph))
    return names


def test_collector_sees_every_kind_of_read() -> None:
    source = '''
import os
NAME_ENV = "FROM_CONSTANT"
OTHER_ENV_OVERRIDES = {"OVERRIDE_ME": ("a", "b")}
class Settings:
    token_env: str = "FROM_DEFAULT"
    key_env: str = Field("FROM_FIELD", description="x")
def read(loaded, env):
    loaded.secret("FROM_SECRET")
    loaded.env.get("FROM_ENV_GET", "x")
    env.get(NAME_ENV)
    os.environ["FROM_SUBSCRIPT"]
    os.environ.get("FROM_ENVIRON_GET")
    os.getenv("FROM_GETENV")
    headers.get("NOT_AN_ENV_READ")
    loaded.secret(config.token_env)
'''
    found = {r.name: r.how for r in scan_source(source, "sample.py")}
    assert found == {
        "OVERRIDE_ME": "overrides",
        "FROM_DEFAULT": "default",
        "FROM_FIELD": "default",
        "FROM_SECRET": "secret",
        "FROM_ENV_GET": "get",
        "FROM_CONSTANT": "get",
        "FROM_SUBSCRIPT": "subscript",
        "FROM_ENVIRON_GET": "get",
        "FROM_GETENV": "getenv",
    }


def test_collector_finds_the_known_reads_of_the_package() -> None:
    names = {r.name for r in scan_package(PACKAGE)}
    expected = {
        "HUMMINGBIRD_GITLAB_TOKEN", "GEMINI_API_KEY", "GITLAB_READ_TOKEN", "GITLAB_WEBHOOK_SECRET",
        "KONFLUX_KUBECONFIG", "NEO4J_USER", "NEO4J_PASSWORD", "QDRANT_API_KEY",
        "AWS_ENDPOINT_URL", "EXTRACTION_STRATEGY", "MCP_SERVERS_CONFIG", "EXPLORATORY_INVESTIGATION_THRESHOLD",
        "SENTRY_DSN", "LOG_LEVEL", "HUMMINGBIRD_CONFIG", "LLM_CONTEXT_WINDOW", "TOOL_BUDGET_MARGIN",
        "TOOL_MAX_FULL_SCHEMAS", "TOOL_RETRIEVAL_CANDIDATE_K", "TOOL_RESERVED_EXPLORE",
    }
    assert expected <= names


def test_every_env_var_read_is_in_the_secret_or_documented_optional() -> None:
    live, commented = secret_names()
    documented = live | commented | readme_optional()
    missing = sorted({f"{r.name} ({r.where})" for r in scan_package(PACKAGE) if r.name not in documented})
    assert not missing, ("add to kubernetes/service/secret.yaml or docs/configuration.md as optional: "
                         + ", ".join(missing))


def test_aws_credentials_are_documented_in_the_secret() -> None:
    live, commented = secret_names()
    assert set(AWS_NAMES) <= live | commented
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= live
    assert "IRSA" in (KUBE_DIR / "service" / "secret.yaml").read_text(encoding="utf-8")


def test_only_config_reads_the_process_environment() -> None:
    pattern = re.compile(r"\bos\.(environ|getenv|putenv)\b|\bfrom os import .*\benviron\b")
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() != "config/loading.py"
        and pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert not offenders
