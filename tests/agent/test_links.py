"""Links in a note only to runs the run saw (pure): kept when given verbatim or built from a seen host and id,
unlinked otherwise; links that name no run are left alone."""

from __future__ import annotations

from hummingbird_agent.agent.links import UNSEEN, seen_text, unlink_unseen
from hummingbird_agent.models import tool_message, user_text
from hummingbird_agent.models.base import ToolCall

GITLAB = "https://gitlab.example.com"
RESULT = {"result": {"jobs": [{"id": 4711, "web_url": f"{GITLAB}/g/p/-/jobs/4711"}], "pipeline": {"id": 88}}}
SEEN = seen_text([user_text('{"project": "g/p", "iid": 7}'),
                  {"role": "model", "parts": [{"text": f"{GITLAB}/g/p/-/jobs/5"}]},  # the model's own text
                  tool_message([ToolCall("get_jobs", {})], [RESULT])], "You are Hummingbird.")


def test_seen_links_stay_and_invented_ones_are_unlinked() -> None:
    answer = (f"- [job 4711]({GITLAB}/g/p/-/jobs/4711) failed, in pipeline {GITLAB}/g/p/-/pipelines/88.\n"
              f"- [job 5]({GITLAB}/g/p/-/jobs/5) and {GITLAB}/g/p/-/jobs/6, on https://other.example/g/p/-/jobs/4711.\n"
              "- Docs: https://docs.gitlab.com/ci/yaml/ and [MR !7]" f"({GITLAB}/g/p/-/merge_requests/7).")
    text, removed = unlink_unseen(answer, SEEN)
    assert removed == 3
    assert text.splitlines() == [
        f"- [job 4711]({GITLAB}/g/p/-/jobs/4711) failed, in pipeline {GITLAB}/g/p/-/pipelines/88.",
        f"- job 5 and {UNSEEN}, on {UNSEEN}.",
        f"- Docs: https://docs.gitlab.com/ci/yaml/ and [MR !7]({GITLAB}/g/p/-/merge_requests/7).",
    ]


def test_a_pipelinerun_link_needs_its_name_seen() -> None:
    konflux = "https://konflux.example/ns/team/pipelinerun"
    seen = seen_text([tool_message([ToolCall("runs", {})], [{"result": [{"name": "build-abc12"}]}])],
                     "Konflux UI: https://konflux.example")
    text, removed = unlink_unseen(f"See {konflux}/build-abc12 and {konflux}/build-zzz99.", seen)
    assert (text, removed) == (f"See {konflux}/build-abc12 and {UNSEEN}.", 1)


def test_an_answer_without_links_is_unchanged() -> None:
    assert unlink_unseen("Job 4711 failed.", SEEN) == ("Job 4711 failed.", 0)
