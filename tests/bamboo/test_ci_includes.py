"""The CI-definition hint follows `include:` entries naming files of the same repository (read from the fake
GitLab through the workflow's data source), merged as GitLab merges them, within the files and characters
budgets; other projects', remote, template and component includes are never fetched."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import yaml

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.bamboo.strategies.ci_config import job_definition, local_includes, parse_config, with_includes
from tests.bamboo.fakes import uncalled_llm
from tests.bamboo.test_incident_learning import SHA, TASK, extractor, workflow_files
from tests.servers import GitLabServer

HINT = f"job unit 2/4 in .gitlab-ci.yml at {SHA[:12]}"
MAIN = """\
include:
  - local: /ci/base.yml
  - ci/broken.yml
  - ci/missing.yml
  - remote: https://example.com/ci.yml
  - project: group/templates
    file: /jobs.yml
  - template: Python.gitlab-ci.yml
  - component: gitlab.com/group/comp/lint@1.0
  - ci/*.yml
unit:
  timeout: 30m
"""
BASE = """\
include: [ci/jobs.yml, .gitlab-ci.yml]
default:
  image: python:3.12
  tags: [docker]
.tests:
  stage: test
  before_script: [pip install -e .]
"""
JOBS = """\
include: {local: ci/base.yml}
unit:
  extends: .tests
  script: [pytest -q]
  timeout: 10m
"""


def requested_files(server: GitLabServer) -> list[str]:
    return [unquote(r.path.split("/repository/files/")[1].split("/")[0]) for r in server.requests
            if "/repository/files/" in r.path]


def test_local_includes_are_the_same_repositorys_files_in_order() -> None:
    def paths(include: object) -> list[str]:
        return local_includes({"include": include})

    assert paths("ci/a.yml") == ["ci/a.yml"]
    assert paths("/ci/a.yml") == ["ci/a.yml"]
    assert paths(["a.yml", "/b.yml"]) == ["a.yml", "b.yml"]
    assert paths([{"local": "/a.yml"}, {"local": "b.yml", "rules": [{"if": "$X"}]}]) == ["a.yml", "b.yml"]
    assert paths({"local": "a.yml"}) == ["a.yml"]
    assert paths([{"remote": "https://example.com/a.yml"}, "https://example.com/b.yml",
                  {"project": "group/p", "file": "/c.yml"}, {"project": "group/p", "local": "d.yml"},
                  {"template": "Python.gitlab-ci.yml"}, {"component": "gitlab.com/g/c/lint@1"},
                  "ci/*.yml", "ci/**.yml", "$CI_DIR/a.yml", "/", "", None, 3, ["a.yml"], {"file": "e.yml"}]) == []
    assert local_includes({"unit": {"script": ["make"]}}) == []


def test_includes_merge_deeply_the_last_include_and_then_the_including_file_winning() -> None:
    first = {"variables": {"A": "1", "B": "1"}, "unit": {"script": ["one"], "tags": ["a"]}, "stages": ["x"]}
    second = {"variables": {"B": "2"}, "unit": {"script": ["two"]}, "lint": {"script": ["ruff"]}}
    main = {"include": ["first.yml", "second.yml"], "variables": {"C": "3"}, "unit": {"tags": ["b"]}}
    assert with_includes(main, [first, second]) == {
        "variables": {"A": "1", "B": "2", "C": "3"},
        "unit": {"script": ["two"], "tags": ["b"]},  # lists are replaced, never concatenated
        "stages": ["x"], "lint": {"script": ["ruff"]}}
    assert with_includes(main, []) == {k: v for k, v in main.items() if k != "include"}
    looped = parse_config("a: &a {b: *a}\n")
    assert looped is not None and with_includes(looped, [looped]) == looped  # a mapping containing itself


def test_a_job_from_an_include_gets_its_template_and_defaults_from_others() -> None:
    base, jobs, main = (parse_config(text) for text in (BASE, JOBS, MAIN))
    assert base is not None and jobs is not None and main is not None
    config = with_includes(main, [with_includes(base, [jobs])])
    definition = job_definition(config, "unit")
    assert definition is not None
    assert yaml.safe_load(definition) == {"stage": "test", "image": "python:3.12", "tags": ["docker"],
                                          "before_script": ["pip install -e ."], "script": ["pytest -q"],
                                          "timeout": "30m"}


async def test_the_hint_reads_nested_local_includes_once_and_nothing_elsewhere(
        tmp_path: Path, gitlab_server: GitLabServer) -> None:
    gitlab_server.add_project(1, "group/app")
    files = {".gitlab-ci.yml": MAIN, "ci/base.yml": BASE, "ci/jobs.yml": JOBS, "ci/broken.yml": "unit: [unclosed\n"}
    for path, text in files.items():
        gitlab_server.add_file(1, path, text, ref=SHA)
    ext = extractor(uncalled_llm(), workflow_files(tmp_path, gitlab_server))
    hints = await ext.prefetch_hints(IncidentInput("", TASK))
    assert list(hints) == [HINT]
    assert yaml.safe_load(hints[HINT]) == {"stage": "test", "image": "python:3.12", "tags": ["docker"],
                                           "before_script": ["pip install -e ."], "script": ["pytest -q"],
                                           "timeout": "30m"}
    # Depth first in include order, each file once (the cycle back to .gitlab-ci.yml is not read again).
    assert requested_files(gitlab_server) == [".gitlab-ci.yml", "ci/base.yml", "ci/jobs.yml", "ci/broken.yml",
                                              "ci/missing.yml"]
    assert all(r.header("PRIVATE-TOKEN") == gitlab_server.read_token for r in gitlab_server.requests)
    # A job only another project's include defines: no hint, as without includes.
    gitlab_server.add_file(1, ".gitlab-ci.yml", "include: {project: group/templates, file: /unit.yml}\n", ref=SHA)
    assert await ext.prefetch_hints(IncidentInput("", TASK)) == {}


async def test_the_hint_reads_at_most_the_budgeted_files(tmp_path: Path, gitlab_server: GitLabServer) -> None:
    gitlab_server.add_project(1, "group/app")
    chain = [".gitlab-ci.yml"] + [f"ci/{n}.yml" for n in range(budgets.BAMBOO_CI_CONFIG_MAX_FILES)]
    for path, child in zip(chain, chain[1:], strict=False):
        gitlab_server.add_file(1, path, f"include: {child}\n", ref=SHA)
    gitlab_server.add_file(1, chain[-1], "unit: {script: [make]}\n", ref=SHA)
    ext = extractor(uncalled_llm(), workflow_files(tmp_path, gitlab_server))
    assert await ext.prefetch_hints(IncidentInput("", TASK)) == {}  # the job's file is one too many
    assert requested_files(gitlab_server) == chain[:-1]
    gitlab_server.add_file(1, chain[-2], "unit: {script: [make]}\n", ref=SHA)
    assert await ext.prefetch_hints(IncidentInput("", TASK)) == {HINT: "script:\n- make"}


async def test_the_hint_parses_at_most_the_budgeted_characters(tmp_path: Path,
                                                               gitlab_server: GitLabServer) -> None:
    gitlab_server.add_project(1, "group/app")
    size = budgets.BAMBOO_CI_CONFIG_MAX_CHARS - 64  # each file alone is small enough to parse
    bulky = [f"ci/bulk{n}.yml" for n in range(budgets.BAMBOO_CI_CONFIG_TOTAL_CHARS // size)]
    main = f"include: {bulky + ['ci/unit.yml']}\n"
    for n, path in enumerate(bulky):
        gitlab_server.add_file(1, path, f"bulk{n}: {{script: [make]}}\n#".ljust(size, "x"), ref=SHA)
    room = budgets.BAMBOO_CI_CONFIG_TOTAL_CHARS - len(main) - size * len(bulky)
    unit = "unit: {script: [make]}\n#"
    gitlab_server.add_file(1, ".gitlab-ci.yml", main, ref=SHA)
    gitlab_server.add_file(1, "ci/unit.yml", unit.ljust(room + 1, "x"), ref=SHA)
    ext = extractor(uncalled_llm(), workflow_files(tmp_path, gitlab_server))
    assert await ext.prefetch_hints(IncidentInput("", TASK)) == {}  # read, but over the total
    gitlab_server.add_file(1, "ci/unit.yml", unit.ljust(room, "x"), ref=SHA)
    assert await ext.prefetch_hints(IncidentInput("", TASK)) == {HINT: "script:\n- make"}
