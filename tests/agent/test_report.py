"""The audited note: footer, "What I looked at", gaps, trimming order, and what never appears in it."""

from __future__ import annotations

from hummingbird_agent.agent.audit import CallRecord, key_arguments, record_call
from hummingbird_agent.agent.report import RunAudit, audited_note, footer
from hummingbird_agent.models.base import ToolCall, Usage
from hummingbird_agent.tools.base import ToolResult


def audit(calls: tuple[CallRecord, ...] = (), **kwargs: object) -> RunAudit:
    fields: dict[str, object] = dict(
        workflow="analyze-failures", provider="gemini", model="gemini-2.5-pro", session_id="s-1", iterations=3,
        max_iterations=10, usage=Usage(12_300, 1_200, 8_000), wall_s=42.4, calls=calls,
    )
    fields.update(kwargs)
    return RunAudit(**fields)  # type: ignore[arg-type]


def test_footer_names_workflow_model_budget_tokens_time_session_and_how_to_continue() -> None:
    text = footer(audit())
    for part in ("`analyze-failures`", "gemini/gemini-2.5-pro", "3/10 iterations", "12.3k in", "1.2k out",
                 "8.0k cached", "42 s", "session `s-1`", "reply to continue", "`/hummingbird help`"):
        assert part in text


def test_calls_are_listed_in_order_with_arguments_size_spill_errors_and_gaps() -> None:
    path = "/w/_out/log-1.log"
    log = ToolResult(ok=True, content={"spilled_to": path, "size_bytes": 48_000}, spilled_path=path)
    missing = ToolResult.error("not_found", "job 12 log does not exist (expired)")
    pods = ToolResult(ok=True, content="[]", truncated=True, metadata={"gaps": ["kubearchive: HTTP 503"]})
    calls = (
        record_call(ToolCall("gitlab_get_job_log", {"project": "g/p", "job_id": 11}), log),
        record_call(ToolCall("gitlab_get_job_log", {"project": "g/p", "job_id": 12}), missing),
        record_call(ToolCall("konflux_list_pods", {"namespace": "ns"}), pods),
    )
    note = audited_note("## Analysis", audit(calls, source_gaps=("data source testing_farm is unavailable",)), 10_000)
    assert note.startswith("## Analysis\n\n<details><summary>What I looked at</summary>")
    first, second, third = (note.index(f"{i}. `") for i in (1, 2, 3))
    assert first < second < third
    assert "project=`g/p` job_id=`11` → 46.9 KB, spilled to the sandbox" in note
    assert "job_id=`12` → error `not_found`" in note
    gaps = note[note.index("**Data gaps**"):note.index("</details>")]
    assert "data source testing_farm is unavailable" in gaps
    assert "expired" in gaps and "output was cut" in gaps and "kubearchive: HTTP 503" in gaps
    assert note.rstrip().endswith("`/hummingbird help`</sub>")


def test_credentials_in_arguments_never_reach_the_note() -> None:
    args = {"url": "https://oauth2:glpat-SECRET1@gitlab.example/x.log?private_token=SECRET2#t", "api_key": "SECRET3",
            "headers": {"Authorization": "SECRET4"}, "command": "curl http://u:SECRET5@h/p", "project": "g/p",
            "args": {"job": 502, "token": "SECRET6"}}
    shown = dict(key_arguments(args))
    assert shown == {"url": "https://gitlab.example/x.log", "command": "curl http://h/p", "project": "g/p",
                     "args.job": "502"}
    note = audited_note("ok", audit((record_call(ToolCall("fetch", args), ToolResult(ok=True, content="x")),)), 10_000)
    assert "SECRET" not in note


def test_a_stopped_run_says_why_with_a_correlation_id() -> None:
    budget = audited_note("", audit(stop="budget", correlation_id="c0ffee", iterations=10), 10_000)
    assert "the iteration budget ran out (10 of 10 iterations used)" in budget and "`c0ffee`" in budget
    model = audited_note("", audit(stop="model_error", error_class="TransientError", correlation_id="x1"), 10_000)
    assert "model call failed (TransientError)" in model and "Traceback" not in model


def test_a_huge_run_trims_the_details_first_and_keeps_the_footer() -> None:
    calls = tuple(CallRecord("sandbox_exec", (("command", f"grep err part{i}.log"),), 900, False) for i in range(500))
    gaps = tuple(f"data source s{i} is unavailable" for i in range(5))
    limit = 8_000
    note = audited_note("## Analysis\nshort answer", audit(calls, source_gaps=gaps), limit)
    assert len(note) <= limit
    assert note.startswith("## Analysis\nshort answer")
    assert "more tool calls not shown" in note and "1. `sandbox_exec`" in note
    assert all(g in note for g in gaps), "gaps are kept longer than call lines"
    assert note.endswith(footer(audit(calls)))
    # An answer that alone exceeds the limit is cut last, after the details are gone; the footer stays.
    long = audited_note("x" * 20_000, audit(calls, source_gaps=gaps), limit)
    assert len(long) <= limit and "[truncated" in long and long.endswith(footer(audit(calls)))
    assert "500 more tool calls not shown" in long




def test_an_unsaved_session_takes_back_the_footers_way_to_continue() -> None:
    from hummingbird_agent.gitlab.note_text import FOOTER_UNSAVED, unsaved_body

    body = unsaved_body(audited_note("## Analysis", audit(), 10_000))
    assert FOOTER_UNSAVED in body and "reply to continue" not in body and "`/hummingbird help`" in body


def test_a_printed_only_note_takes_back_the_footers_way_to_continue_not_the_answers() -> None:
    from hummingbird_agent.gitlab.note_text import FOOTER_UNPOSTED, unposted_body

    body = unposted_body(audited_note("Say 'reply to continue' in the MR.", audit(), 10_000))
    assert body.startswith("Say 'reply to continue' in the MR.") and body.count("reply to continue") == 1
    assert body.rstrip().endswith(f"{FOOTER_UNPOSTED} · `/hummingbird help`</sub>")
    assert unposted_body("no footer") == "no footer"
