"""The example note of README.md and docs/index.md: `run analyze-failures --post --save-session` against the fake
GitLab, with a failed pipeline whose one failure is new and one fails on the merge base too, and a scripted model
that answers with the explanation below; the note is the body the fake GitLab received, without the hidden session
marker (an HTML comment GitLab does not show). What differs between runs is masked: the fake server's address,
the session id and the wall time."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hummingbird_agent.cli import main
from hummingbird_agent.gitlab.markers import parse_markers
from tests.runner.harness import IID, MEMBER, PROJECT, PROJECT_ID, REPO, seed_gitlab
from tests.servers import GitLabServer, function_call_turn, text_turn, usage
from tests.servers.gemini import GeminiServer
from tests.servers.model_common import model_section
from tests.triage.conftest import failing_log
from tests.triage.world import Attempt, CiWorld, sha_of

README = REPO / "README.md"
HOME = REPO / "docs" / "index.md"
NAME = "example-note"
SHOWN_GITLAB = "https://gitlab.example.com"
SHOWN_SESSION = "00000000-0000-0000-0000-000000000000"
LOGS = REPO / "tests" / "fixtures" / "logs"
NEW_JOB = 1005  # the MR pipeline's `integration` job, as the world numbers the jobs it seeds
OLD = "AssertionError: parse('1.2') returned None"


def explanation(short_sha: str) -> str:
    return "\n".join([
        f"### Pipeline failure analysis for !{IID} ({short_sha})",
        "Two checks failed; one is this MR's: `integration` fails because `load_config({})` no longer sets "
        "`timeout`.",
        "",
        "#### Root causes",
        "1. **The default `timeout` is missing** — `integration`. `tests/test_config.py:14`: "
        "`KeyError: 'timeout'`; the job passes on the merge base.",
        "   **Recommendation:** restore the default in `load_config`, or set `timeout` where the test builds "
        "the config.",
        "",
        "`unit-tests` fails the same way on `main` (see the triage): nothing to fix in this MR.",
    ])


def _seed(gl: GitLabServer) -> tuple[int, str]:
    """The CI history: the merge base runs both jobs (`unit-tests` already failing), the MR breaks `integration`."""
    seed_gitlab(gl)
    world, base = CiWorld(gl), sha_of("base")
    passing = (LOGS / "passed-job.log").read_text(encoding="utf-8")
    world.pipeline(base, [Attempt("unit-tests", trace=failing_log("test_parse", OLD, run=8)),
                          Attempt("integration", status="success", trace=passing)])
    mr = world.mr(IID, base_sha=base, author_id=MEMBER)
    failed = (LOGS / "failed-job.log").read_text(encoding="utf-8")
    pipeline = world.pipeline(mr["sha"], [Attempt("unit-tests", trace=failing_log("test_parse", OLD, run=2)),
                                          Attempt("integration", trace=failed)], ref="feature")
    return pipeline, mr["sha"]


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass(frozen=True)
class World:
    """The seeded fake GitLab and scripted model, a config file naming them, and the secrets a run reads."""

    gitlab: GitLabServer
    config: Path
    secrets: dict[str, str]
    pipeline: int


@contextlib.contextmanager
def world(directory: Path) -> Iterator[World]:
    """The example's servers, seeded and scripted, with their config written into `directory`."""
    with GitLabServer() as gl, GeminiServer() as model:
        pipeline, sha = _seed(gl)
        config = {"gitlab": {"url": gl.url, "token_env": "HB_BOT_TOKEN"},
                  "model": model_section("gemini", model, "GEMINI_API_KEY"),
                  "workflows": {"analyze-failures": {
                      "description": "analyse", "prompt": str(REPO / "workflows/analyze-failures.md"),
                      "require_data": True, "projects": {PROJECT: {}}, "triage": {"enabled": True},
                      "data_sources": {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}}}}}
        path = directory / "config.yaml"
        path.write_text(json.dumps(config), encoding="utf-8")
        # The model reads the new failure's log before it writes (the triage gave it the job's id).
        # Fixed token counts: the fake would count the request's bytes, which hold the server's port.
        model.script(function_call_turn("gitlab_get_job_log", {"project": PROJECT, "job_id": NEW_JOB},
                                        usage_metadata=usage(5200, 40)),
                     text_turn(explanation(sha[:8]), usage_metadata=usage(5600, 160)))
        secrets = {"GEMINI_API_KEY": model.api_key or "", "GITLAB_READ_TOKEN": gl.read_token,
                   "HB_BOT_TOKEN": gl.bot_token}
        yield World(gl, path, secrets, pipeline)


def render_note() -> str:
    """The note `run --post` posts, masked."""
    with tempfile.TemporaryDirectory() as tmp, world(Path(tmp)) as w:
        printed = io.StringIO()
        with _environment(w.secrets), contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
            code = main(["run", "analyze-failures", "--project", PROJECT, "--mr", str(IID), "--pipeline",
                         str(w.pipeline), "--config", str(w.config), "--post", "--save-session", str(Path(tmp, "s"))])
        assert code == 0, printed.getvalue()
        [discussion] = w.gitlab.discussions[(PROJECT_ID, IID)]
        return mask(discussion["notes"][0]["body"], w.gitlab.url)


def mask(note: str, gitlab_url: str) -> str:
    [marker] = parse_markers(note)
    note = "\n".join(line for line in note.splitlines() if "<!-- hummingbird-session" not in line)
    return mask_run(note.replace(marker.id, SHOWN_SESSION), gitlab_url).strip("\n")


def mask_run(text: str, gitlab_url: str) -> str:
    """What differs between runs, fixed: the fake GitLab's address and the footer's wall time."""
    return re.sub(r" · \d+ s · ", " · 0 s · ", text.replace(gitlab_url, SHOWN_GITLAB))


def fenced(note: str) -> str:
    """The note's Markdown source in a fence longer than the note's own fences."""
    return f"````markdown\n{note}\n````"


def on_home_page(note: str) -> str:
    """The note as an MR author sees it, framed (MkDocs reads Markdown inside an HTML block marked `markdown`, as
    GitLab does inside `<details>`), then its source folded below."""
    rendered = note.replace("<details>", "<details markdown>")
    return "\n".join([
        '<div class="gitlab-note" markdown>', "", rendered, "", "</div>", "",
        "<details markdown>", "<summary>The note's Markdown source</summary>", "", fenced(note), "", "</details>",
    ])


def shown(page: Path, note: str) -> str:
    """What `page` shows between its markers: the README is rendered by the forge as the note is by GitLab, so it
    holds the note itself; the site's home page holds it framed, with its source folded."""
    return note if page == README else on_home_page(note)


PAGES = (README, HOME)
