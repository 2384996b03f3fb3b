"""The CI-definition hint reads the CI config file the project's settings name (`ci_config_path`, read from the
fake GitLab through the workflow's data source), falls back to `.gitlab-ci.yml` when the setting cannot be
read, reads nothing for a config in another project or at a URL, and parses files that declare CI/CD inputs
(a `spec:` header document, then the config)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.bamboo.strategies.ci_config import job_definition, own_config_path, parse_config
from tests.bamboo.fakes import uncalled_llm
from tests.bamboo.test_ci_includes import requested_files
from tests.bamboo.test_incident_learning import SHA, TASK, extractor, workflow_files
from tests.servers import GitLabServer

PIPELINE = """\
include: ci/jobs.yml
unit:
  timeout: 30m
"""
JOBS = "unit: {stage: test, script: [pytest -q]}\n"
WITH_INPUTS = """\
spec:
  inputs:
    stage:
      default: test
    runner:
---
unit:
  stage: $[[ inputs.stage ]]
  tags:
    - $[[ inputs.runner ]]
  script:
    - pytest -q --junit=$[[ inputs.stage | expand_vars ]].xml
"""


def hint_key(path: str) -> str:
    return f"job unit 2/4 in {path} at {SHA[:12]}"


def project_reads(server: GitLabServer) -> int:
    return sum(1 for r in server.requests if r.path.rstrip("/").endswith("/projects/group%2Fapp"))


def test_the_setting_names_a_file_of_the_repository_or_somewhere_else() -> None:
    assert [own_config_path(s) for s in (None, "", "  ")] == [".gitlab-ci.yml"] * 3
    assert own_config_path("ci/pipeline.yml") == own_config_path("/ci/pipeline.yml") == "ci/pipeline.yml"
    assert [own_config_path(s) for s in (".gitlab-ci.yml@group/templates", "ci.yml@group/templates:main",
                                         "https://example.com/ci.yml", "/")] == [None] * 4


async def test_the_hint_reads_the_file_the_project_settings_name(tmp_path: Path,
                                                                 gitlab_server: GitLabServer) -> None:
    project = gitlab_server.add_project(1, "group/app", ci_config_path="ci/pipeline.yml")
    gitlab_server.add_file(1, ".gitlab-ci.yml", "unit: {script: [make]}\n", ref=SHA)  # not the project's config
    gitlab_server.add_file(1, "ci/pipeline.yml", PIPELINE, ref=SHA)
    gitlab_server.add_file(1, "ci/jobs.yml", JOBS, ref=SHA)
    ext = extractor(uncalled_llm(), workflow_files(tmp_path, gitlab_server))
    hints = await ext.prefetch_hints(IncidentInput("", TASK))
    assert list(hints) == [hint_key("ci/pipeline.yml")]
    assert yaml.safe_load(hints[hint_key("ci/pipeline.yml")]) == {"stage": "test", "script": ["pytest -q"],
                                                                   "timeout": "30m"}
    assert requested_files(gitlab_server) == ["ci/pipeline.yml", "ci/jobs.yml"]
    assert project_reads(gitlab_server) == 1
    assert all(r.header("PRIVATE-TOKEN") == gitlab_server.read_token for r in gitlab_server.requests)
    # Unset (GitLab answers "" or null): `.gitlab-ci.yml`.
    for unset in ("", None):
        project["ci_config_path"] = unset
        assert list(await ext.prefetch_hints(IncidentInput("", TASK))) == [hint_key(".gitlab-ci.yml")]


@pytest.mark.parametrize("elsewhere", [".gitlab-ci.yml@group/templates", "https://example.com/ci.yml"])
async def test_a_config_outside_the_repository_gives_no_hint_and_no_file_read(
        tmp_path: Path, gitlab_server: GitLabServer, elsewhere: str) -> None:
    gitlab_server.add_project(1, "group/app", ci_config_path=elsewhere)
    gitlab_server.add_file(1, ".gitlab-ci.yml", "unit: {script: [make]}\n", ref=SHA)
    ext = extractor(uncalled_llm(), workflow_files(tmp_path, gitlab_server))
    assert await ext.prefetch_hints(IncidentInput("", TASK)) == {}
    assert requested_files(gitlab_server) == []


async def test_an_unreadable_setting_falls_back_to_gitlab_ci_yml(
        tmp_path: Path, gitlab_server: GitLabServer, caplog: pytest.LogCaptureFixture) -> None:
    gitlab_server.add_project(1, "group/app", ci_config_path="ci/pipeline.yml")
    gitlab_server.add_file(1, ".gitlab-ci.yml", "unit: {script: [make]}\n", ref=SHA)
    gitlab_server.fail_next(status=403, path=r"/projects/group/app$", method="GET")
    ext = extractor(uncalled_llm(), workflow_files(tmp_path, gitlab_server))
    with caplog.at_level(logging.INFO):
        hints = await ext.prefetch_hints(IncidentInput("", TASK))
    assert hints == {hint_key(".gitlab-ci.yml"): "script:\n- make"}
    assert "CI config path of group/app unknown; reading .gitlab-ci.yml" in caplog.text
    assert gitlab_server.read_token not in caplog.text


def test_a_file_declaring_inputs_is_its_config_after_the_header() -> None:
    definition = job_definition(parse_config(WITH_INPUTS), "unit")
    assert definition is not None
    assert yaml.safe_load(definition) == {"stage": "$[[ inputs.stage ]]", "tags": ["$[[ inputs.runner ]]"],
                                          "script": ["pytest -q --junit=$[[ inputs.stage | expand_vars ]].xml"]}
    assert parse_config("---\n" + WITH_INPUTS) == parse_config(WITH_INPUTS)  # an explicit first document
    assert parse_config("spec: {inputs: {a: }}\n---\n") is None  # a header without a config
    assert parse_config("unit: {script: [x]}\n---\nlint: {script: [y]}\n") == {"unit": {"script": ["x"]}}  # no header
    assert parse_config(WITH_INPUTS + "---\nlint: {script: [z]}\n") is None  # three documents


async def test_the_hint_reads_config_files_that_declare_inputs(tmp_path: Path,
                                                                    gitlab_server: GitLabServer) -> None:
    gitlab_server.add_project(1, "group/app")
    root = "include:\n  - local: ci/unit.yml\n    inputs: {runner: docker}\nunit:\n  timeout: $[[ inputs.timeout ]]\n"
    # The root config may declare inputs too (pipeline inputs).
    gitlab_server.add_file(1, ".gitlab-ci.yml", "spec: {inputs: {timeout: {default: 30m}}}\n---\n" + root, ref=SHA)
    gitlab_server.add_file(1, "ci/unit.yml", WITH_INPUTS, ref=SHA)
    ext = extractor(uncalled_llm(), workflow_files(tmp_path, gitlab_server))
    hints = await ext.prefetch_hints(IncidentInput("", TASK))
    assert yaml.safe_load(hints[hint_key(".gitlab-ci.yml")]) == {
        "stage": "$[[ inputs.stage ]]", "tags": ["$[[ inputs.runner ]]"],
        "script": ["pytest -q --junit=$[[ inputs.stage | expand_vars ]].xml"], "timeout": "$[[ inputs.timeout ]]"}
