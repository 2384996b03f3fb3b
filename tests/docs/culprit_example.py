"""The examples of docs/culprit.md: the status note's section and the issue the service renders for an MR blocked by
a break of `main` (16 merged MRs, the job failing the same way from the 9th on), through the fake GitLab. `python -m
tests.docs.culprit_example` rewrites them when they differ."""

from __future__ import annotations

import asyncio

from tests.docs.blocks import REPO, block, with_block
from tests.servers import GitLabServer
from tests.triage.conftest import run_triage
from tests.triage.culprit_world import authors, blocked_mr, history
from tests.triage.world import CiWorld

PAGE = REPO / "docs" / "culprit.md"
SHOWN_GITLAB = "https://gitlab.example.com"


def render_examples() -> dict[str, str]:
    """The blocks by name: the note's section and the issue's description, the server's address masked."""
    from hummingbird_agent.gitlab.seal import Seal
    from hummingbird_agent.triage.broken_issue import issue_body, issue_title
    from hummingbird_agent.triage.status_note import failed_entry, render

    with GitLabServer() as gl:
        world = CiWorld(gl)
        authors(world)
        merges = history(world, 16, broken_at=9)
        pipeline = blocked_mr(world, 7, merges[-1])
        found, _ = asyncio.run(run_triage(gl, 7))
        entry = failed_entry(found, pipeline, f"{gl.url}/group/project/-/pipelines/{pipeline}")
        (check,) = found.checks
        assert check.culprit is not None
        issue = f"# {issue_title(check, check.culprit)}\n\n{issue_body(check, check.culprit, [7, 12])}"
        # A fixed key: the markers' MACs in the page stay the same from run to run (a deployment's own key differs).
        seal = Seal(b"documentation example").within("group/project!7")
        return {"culprit-note": _fenced(render([entry], seal).replace(gl.url, SHOWN_GITLAB)),
                "culprit-issue": _fenced(issue.replace(gl.url, SHOWN_GITLAB))}


def _fenced(text: str) -> str:
    return f"````markdown\n{text}\n````"


def shown() -> dict[str, str]:
    text = PAGE.read_text(encoding="utf-8")
    return {name: block(text, name) for name in ("culprit-note", "culprit-issue")}


def main() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for name, body in render_examples().items():
        text = with_block(text, name, body)
    PAGE.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
