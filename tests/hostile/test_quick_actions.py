"""Nothing untrusted acts through the bot's notes: no quick action runs as the bot, nobody is mentioned and no
other project's issue is referenced by a log, a model answer or another system's URL.

The fake GitLab reads every written text with GitLab's own quick-action extractor and finds mentions in the
rendered Markdown (tests/servers/gitlab_markdown.py), so these tests see what GitLab would run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.gitlab.quiet import link_target, no_commands, quiet_markdown
from hummingbird_agent.triage.model import CheckResult, KnownCause, Triage, Verdict
from hummingbird_agent.triage.render import details, headline, table
from tests.runner.harness import IID, MEMBER, SHA, Service, expect_turns, pipeline_event
from tests.servers import GitLabServer
from tests.servers.gemini import text_turn
from tests.servers.gitlab_markdown import References, quick_actions, references
from tests.triage.conftest import failing_log
from tests.triage.world import Attempt, CiWorld, sha_of

HOSTILE_ANSWER = "\n".join(["The log says:", "/approve", "/merge", "/label ~ok", "/assign @mallory", "@all look",
                            "see other-group/secret#12", "", "Fix: `npm i @types/node`."])
HOSTILE = "\n".join(["```", "/approve", "/merge", "/label ~ok", "/CLOSE", "/assign @mallory", "@all look here",
                     "see other-group/secret#12"])


def test_the_fake_runs_commands_where_gitlab_does() -> None:
    """GitLab's own examples: a command line runs and is taken out; one in a ``` block does not; after a
    four-backtick block a log's ``` closed early, it does."""
    assert quick_actions("hello\n/labels ~foo ~\"bar baz\"\nworld") == ("hello\nworld", [("labels", '~foo ~"bar baz"')])
    assert quick_actions("```\n/close\n```")[1] == []
    assert quick_actions("````text\nlog\n```\n````\n\nThe answer:\n/approve\n")[1] == [("approve", "")]


@given(st.lists(st.sampled_from(["/approve", "/close", "/label ~x", "/merge now", "```", "````", "`", "text `a`",
                                 "/usr/bin/ld: cannot find -lz", "<details>", "</details>", ">>>", "\r/close",
                                 " /close", "/tmp"]), max_size=12))
def test_no_line_of_a_written_text_runs_as_a_quick_action(lines: list[str]) -> None:
    text = no_commands("\n".join(lines))
    assert quick_actions(text)[1] == []
    assert text.replace("\u200b", "") == "\n".join(lines).replace("\r", "")  # the reader sees the same text


def test_a_models_answer_mentions_nobody_but_its_code_is_left_as_written() -> None:
    answer = quiet_markdown("Ask @all or @bob, see other-group/secret#12 and !7.\n\n```sh\nnpm i @types/node\n```\n"
                            "Or run `npm i @types/node`: https://www.npmjs.com/package/@types/node")
    assert references(answer).users == () and references(answer).foreign == ()
    assert "```sh\nnpm i @types/node\n```" in answer and "`npm i @types/node`" in answer
    assert "https://www.npmjs.com/package/@types/node" in answer and "!7" in answer  # this project's MR stays a link


def test_a_url_another_system_gave_cannot_end_its_link() -> None:
    assert link_target("https://ci.example.com/run/1) @all <!-- x") == "https://ci.example.com/run/1%29%20@all%20%3C!--%20x"
    assert link_target("javascript:alert(1)") == "" and link_target("https://a|b") == "https://a%7Cb"


def _writes(c: GitLabClient) -> dict[str, Callable[[str], Awaitable[Any]]]:
    async def reply(body: str) -> None:
        thread = await c.create_thread(1, 7, "thread", internal=False)
        await c.reply(1, 7, thread.discussion_id, body)

    async def update(body: str) -> None:
        thread = await c.create_thread(1, 7, "thread", internal=False)
        await c.update_note(1, 7, thread.discussion_id, thread.note_id, body)

    async def edit(body: str) -> None:
        await c.edit_note(1, 7, (await c.create_note(1, 7, "note")).note_id, body)

    async def issue(body: str) -> None:
        made = await c.create_issue(1, title="broken", description=body, labels="")
        await c.edit_issue(1, int(made["iid"]), description=body)
        await c.comment_issue(1, int(made["iid"]), body)

    return {"thread": lambda body: c.create_thread(1, 7, body, internal=False),
            "note": lambda body: c.create_note(1, 7, body), "reply": reply, "update": update, "edit": edit,
            "issue": issue}


@pytest.mark.parametrize("write", ["thread", "note", "reply", "update", "edit", "issue"])
async def test_every_text_the_client_writes_runs_no_quick_action(client: GitLabClient, gitlab_server: GitLabServer,
                                                                  write: str) -> None:
    await _writes(client)[write](f"The log said:\n{HOSTILE}\n")
    assert gitlab_server.quick_actions_run == []


async def _acted_on(service: Service) -> str:
    """The analysis note, once the run is over, after checking the bot's writes ran and mentioned nothing."""
    expect_turns(service.model, text_turn(HOSTILE_ANSWER))
    service.publish(pipeline_event())
    await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis note")
    await service.finished()
    bot = service.gitlab.bot_user["id"]
    assert [a for a in service.gitlab.quick_actions_run if a["user"] == bot] == []
    assert [r for r in service.gitlab.references_written if r["user"] == bot] == []
    return str(service.final_notes()[0]["body"])


@pytest.mark.podman
@pytest.mark.timeout(300)
async def test_a_models_answer_runs_no_command_and_mentions_nobody(service: Service) -> None:
    assert "`npm i @types/node`" in await _acted_on(service)


@pytest.mark.podman
@pytest.mark.timeout(300)
async def test_a_hostile_log_and_answer_act_on_nothing(triaged_service: Service) -> None:
    """The MR's own log and an external status carry commands, mentions and a link breaker; the model repeats
    them. The analysis note and the status note run nothing, mention nobody and link nothing of theirs."""
    service, world = triaged_service, CiWorld(triaged_service.gitlab)
    base = sha_of("base")
    world.pipeline(base, [Attempt("unit-tests", "success", trace="ok\n")])
    world.mr(IID, base_sha=base, sha=SHA, author_id=MEMBER, title="Add frob")
    world.pipeline(SHA, [Attempt("unit-tests", trace=failing_log("test_frob", "AssertionError: " + HOSTILE))],
                   ref="feature", source="merge_request_event", pipeline_id=501)
    service.gitlab.add_commit_status(1, SHA, "@all external", "failed", ref="feature",
                                     target_url="https://ci.example.com/1) @all\n/approve <!--")
    body = await _acted_on(service)
    assert "`npm i @types/node`" in body and "/approve" in body  # shown, copyable, inert


def test_names_and_knowledge_in_a_triage_note_mention_nobody() -> None:
    """Job names (the MR's own CI file names them), gaps, history and a learned resolution reach the note's prose
    (the headline, the running list, the evidence, the gaps): none of them mentions or references."""
    hostile = "@all see other/secret#3 and @bob"
    known = KnownCause("cause", 0.9, resolution=hostile)
    check = CheckResult(hostile, Verdict.NEW, hostile, failure_line=hostile, history=hostile, known=known,
                        url="https://ci.example.com/x) @all", excerpt=(hostile,))
    found = Triage(SHA, target_branch=hostile, checks=(check,), gaps=(hostile,), running=(hostile,),
                   unlisted=(hostile,))
    note = "\n\n".join([headline(found), table(found), details(found)])
    assert references(note) == References((), ()), note
