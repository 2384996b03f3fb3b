"""Per-project read credentials: a project entry may name its own GitLab read token and Konflux kubeconfig
variables (else the workflow's are used); each project's tools read with its own, a token that cannot read
a project is one line, and check-config names which project uses which variable (never a value)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent.bamboo.explore.session import read_only_tools
from hummingbird_agent.bamboo.factory import build_stores
from hummingbird_agent.cli import main
from hummingbird_agent.config.credentials import source_env
from hummingbird_agent.config.loading import load_config, required_env_names
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.sandbox import PodmanSandbox
from tests.servers import DEVELOPER, GitLabServer
from tests.servers.k8s import KubeServer, tekton_object

A, B, SHARED = "team-a/app", "team-b/lib", "shared/tools"
TOKENS = {"TEAM_A_READ_TOKEN": "glpat-team-a-read", "TEAM_B_READ_TOKEN": "glpat-team-b-read",
          "GITLAB_READ_TOKEN": "read-token"}
KUBECONFIG = """\
apiVersion: v1
current-context: c
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
users: [{{name: u, user: {{token: {token}}}}}]
"""


def write_config(tmp_path: Path, gitlab_url: str, sources: dict[str, Any] | None = None,
                 projects: dict[str, Any] | None = None) -> Path:
    (tmp_path / "wf.md").write_text("Analyse.\n")
    workflow = {"description": "d", "prompt": "wf.md",
                "data_sources": sources or {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}},
                "projects": projects if projects is not None else {
                    A: {"gitlab_token_env": "TEAM_A_READ_TOKEN"}, B: {"gitlab_token_env": "TEAM_B_READ_TOKEN"},
                    SHARED: {}}}
    config = {"gitlab": {"url": gitlab_url, "token_env": "HB_BOT_TOKEN"}, "workflows": {"wf": workflow}}
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))
    return path


def seed(gitlab: GitLabServer) -> None:
    """Two teams' projects, each readable only by its own team's token; a third readable by the shared one."""
    for pid, path, title in ((1, A, "A's change"), (2, B, "B's change"), (3, SHARED, "shared change")):
        gitlab.add_project(pid, path)
        gitlab.add_mr(pid, 7, sha=f"{pid}" * 40, title=title, author_id=42)
        gitlab.add_member(pid, 42, DEVELOPER)  # a trusted author: the title is shown
    gitlab.add_token("glpat-team-a-read", 9101, scope="read_api", projects=[A])
    gitlab.add_token("glpat-team-b-read", 9102, scope="read_api", projects=[B])


def test_a_project_uses_its_own_variable_else_the_workflows(tmp_path: Path) -> None:
    loaded = load_config(write_config(tmp_path, "http://gitlab.invalid"), {})
    workflow = loaded.config.workflows["wf"]
    assert (source_env(workflow, A, "gitlab").env, source_env(workflow, A, "gitlab").own) == ("TEAM_A_READ_TOKEN", True)
    assert (source_env(workflow, SHARED, "gitlab").env, source_env(workflow, SHARED, "gitlab").own) == (
        "GITLAB_READ_TOKEN", False)
    assert source_env(workflow, A, "konflux") is None  # not declared: no variable at all
    # Every variable the config names is required (and a secret, so it is redacted from logs and notes).
    names = required_env_names(loaded.config)
    assert {"TEAM_A_READ_TOKEN", "TEAM_B_READ_TOKEN", "GITLAB_READ_TOKEN"} <= set(names)


async def test_each_project_reads_only_its_own_with_its_own_token(tmp_path: Path,
                                                                  gitlab_server: GitLabServer) -> None:
    seed(gitlab_server)
    loaded = load_config(write_config(tmp_path, gitlab_server.url), TOKENS)

    for project, token, title in ((A, "glpat-team-a-read", "A's change"), (B, "glpat-team-b-read", "B's change")):
        tools = ReadTools.declared(loaded, "wf", project)
        details = await tools.call("gitlab_get_mr_details", project=project, mr_iid=7)
        assert details["title"] == title and tools.gaps == []
        seen = gitlab_server.requests_to(rf"/projects/{project.replace('/', '%2F')}|/projects/{project}")
        assert seen and {r.header("PRIVATE-TOKEN") for r in seen} == {token}
        gitlab_server.requests.clear()

    # Team A's run asking for team B's project gets no data and one clear line, however often it asks.
    tools = ReadTools.declared(loaded, "wf", A)
    assert await tools.call("gitlab_get_mr_details", project=B, mr_iid=7) is None
    assert await tools.call("gitlab_get_project", project=B) is None
    assert tools.gaps == [f"the GitLab read token in TEAM_A_READ_TOKEN cannot read project {B} "
                          "(HTTP 404: it does not exist or that token may not see it)"]
    # A project without its own variable reads with the workflow's token.
    shared = ReadTools.declared(loaded, "wf", SHARED)
    assert (await shared.call("gitlab_get_mr_details", project=SHARED, mr_iid=7))["title"] == "shared change"
    assert {r.header("PRIVATE-TOKEN") for r in gitlab_server.requests_to("shared")} == {"read-token"}


async def test_a_token_that_cannot_read_its_own_project_is_one_line(tmp_path: Path,
                                                                   gitlab_server: GitLabServer) -> None:
    seed(gitlab_server)
    swapped = {**TOKENS, "TEAM_A_READ_TOKEN": "glpat-team-b-read"}  # a wrong token deployed for team A
    loaded = load_config(write_config(tmp_path, gitlab_server.url), swapped)
    tools = ReadTools.declared(loaded, "wf", A)
    for tool, args in (("gitlab_get_mr_details", {"mr_iid": 7}), ("gitlab_get_mr_diff", {"mr_iid": 7}),
                       ("gitlab_get_job_log", {"job_id": 3})):
        assert await tools.call(tool, project=A, **args) is None
    assert tools.gaps == [f"the GitLab read token in TEAM_A_READ_TOKEN cannot read project {A} "
                          "(HTTP 404: it does not exist or that token may not see it)"]
    assert "glpat" not in tools.gaps[0]


def test_an_unset_project_variable_is_a_gap_never_the_workflows_token(tmp_path: Path) -> None:
    loaded = load_config(write_config(tmp_path, "http://gitlab.invalid"), {"GITLAB_READ_TOKEN": "read-token"})
    tools = ReadTools.declared(loaded, "wf", A)
    assert tools.gaps == ["data source gitlab is unavailable: env var TEAM_A_READ_TOKEN (GitLab read token of "
                          f"{A}) is unset"]
    assert ReadTools.declared(loaded, "wf", SHARED).gaps == []


async def test_each_project_reads_konflux_with_its_own_kubeconfig(tmp_path: Path) -> None:
    sources = {"konflux": {"cluster_url": "https://api.example.com:6443"}}
    projects = {A: {"konflux_kubeconfig_env": "TEAM_A_KUBECONFIG"}, B: {"konflux_kubeconfig_env": "TEAM_B_KUBECONFIG"}}
    with KubeServer("cluster-a", token="kube-token-a") as cluster_a, KubeServer("cluster-b", token="kube-token-b") \
            as cluster_b:
        env = {}
        for name, server in (("TEAM_A_KUBECONFIG", cluster_a), ("TEAM_B_KUBECONFIG", cluster_b)):
            path = tmp_path / name.lower()
            path.write_text(KUBECONFIG.format(server=server.url, token=server.token))
            env[name] = str(path)
            server.add(tekton_object("pipelineruns", f"run-of-{name.lower()}", namespace="tenant"))
        loaded = load_config(write_config(tmp_path, "http://gitlab.invalid", sources, projects), env)
        for project, server in ((A, cluster_a), (B, cluster_b)):
            tools = ReadTools.declared(loaded, "wf", project)
            stream = await tools.call("konflux_get_pipelineruns", namespace="tenant", commit_sha="a" * 40)
            assert stream is not None and tools.gaps == []
            b"".join(stream.chunks)
            assert server.requests and all(r.header("Authorization") == f"Bearer {server.token}"
                                           for r in server.requests)
        assert not cluster_a.errors and not cluster_b.errors


async def test_an_exploration_of_a_projects_incident_reads_with_its_token(tmp_path: Path,
                                                                          gitlab_server: GitLabServer) -> None:
    seed(gitlab_server)
    own_only = {k: v for k, v in TOKENS.items() if k != "GITLAB_READ_TOKEN"}  # no shared token at all
    loaded = load_config(write_config(tmp_path, gitlab_server.url), own_only)
    stores, box = build_stores(loaded), PodmanSandbox(loaded.config.sandbox)  # the box is never opened

    assert not any(t.name.startswith("gitlab_") for t in read_only_tools(loaded, "wf", stores, box))
    tools = {t.name: t for t in read_only_tools(loaded, "wf", stores, box, B)}
    details = await tools["gitlab_get_mr_details"].handler(project=B, mr_iid=7)
    assert details["title"] == "B's change"
    assert {r.header("PRIVATE-TOKEN") for r in gitlab_server.requests_to("team-b")} == {"glpat-team-b-read"}


def test_a_project_variable_for_an_undeclared_source_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path, "http://gitlab.invalid", projects={A: {"konflux_kubeconfig_env": "TEAM_A_KUBE"}})
    with pytest.raises(ConfigError) as caught:
        load_config(path, {})
    assert str(caught.value) == ("config.yaml: workflows.wf: projects.team-a/app.konflux_kubeconfig_env: "
                                 "the workflow declares no konflux data source")


def test_check_config_names_the_variable_each_project_reads_with(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_config(tmp_path, "http://gitlab.invalid")
    env = {**TOKENS, "HB_BOT_TOKEN": "glpat-the-bots-token", "GITLAB_WEBHOOK_SECRET": "hook-secret"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TEAM_B_READ_TOKEN")
    assert main(["check-config", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"    credentials of {A}: gitlab TEAM_A_READ_TOKEN (own)\n" in out
    assert f"    credentials of {B}: gitlab TEAM_B_READ_TOKEN (own, unset)\n" in out
    assert f"    credentials of {SHARED}: gitlab GITLAB_READ_TOKEN (workflow)\n" in out
    [missing] = [line for line in out.splitlines() if line.startswith("missing env vars: ")]
    assert "TEAM_B_READ_TOKEN" in missing and "TEAM_A_READ_TOKEN" not in missing
    assert not any(value in out for value in TOKENS.values())

