"""/metrics over real HTTP: after a scripted run through the whole service, and for webhook deliveries and
the dead-letter queue of the embedded transport; the dashboard and the alert rules use only exported metrics."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path

import pytest
import yaml
from aiohttp import ClientSession
from prometheus_client.parser import text_string_to_metric_families

from hummingbird_agent.config.loading import load_config
from hummingbird_agent.errors import RetryLater
from hummingbird_agent.events.protocols import Continuations, Event
from hummingbird_agent.events.serve import run_service
from hummingbird_agent.metrics import Metrics
from tests.runner.harness import expect_turns, pipeline_event, seed_gitlab, start_service
from tests.servers import GeminiServer, GitLabServer, MotoServer, samples
from tests.servers.gemini import function_call_turn, text_turn, usage

REPO = Path(__file__).resolve().parents[2]
KUBE = REPO / "kubernetes"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls)


async def scrape(url: str) -> str:
    async with ClientSession() as http, http.get(f"{url}/metrics") as resp:
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/plain")
        return await resp.text()


def listening_url(log_text: str) -> str:
    found = re.search(r"listening on (http://[\d.]+:\d+)", log_text)
    assert found, "no serve ready line"
    return found.group(1)


@pytest.mark.podman
@pytest.mark.timeout(240)
async def test_metrics_after_a_scripted_run(tmp_path: Path, gitlab_server: GitLabServer,
                                            gemini_server: GeminiServer, moto_server: MotoServer) -> None:
    seed_gitlab(gitlab_server)
    async with start_service(tmp_path, gitlab_server, gemini_server, moto_server) as service:
        expect_turns(service.model,
                     function_call_turn("sandbox_exec", {"command": "echo hi"}, usage_metadata=usage(100, 20, 5)),
                     function_call_turn("no_such_tool", {}, usage_metadata=usage(200, 10)),
                     text_turn("## Analysis\nDone.", usage_metadata=usage(300, 30, 50)))
        service.publish(pipeline_event())
        await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis note")
        url = listening_url(service.log_path.read_text())
        for _ in range(600):  # the run is counted once its session is saved, just after the note
            m = parse(text := await scrape(url))
            if value(m, "hummingbird_runs_total") >= 1:
                break
            await asyncio.sleep(0.05)
    wf = {"workflow": "analyze-failures"}
    assert value(m, "hummingbird_runs_total", outcome="completed", **wf) == 1
    assert value(m, "hummingbird_run_duration_seconds_count", **wf) == 1
    assert value(m, "hummingbird_time_to_placeholder_seconds_count", **wf) == 1
    model = {"provider": "gemini", "model": "gemini-test"}
    assert value(m, "hummingbird_model_calls_total", outcome="ok", **model) == 3
    assert [value(m, "hummingbird_model_tokens_total", kind=k, **model) for k in ("input", "output", "cached")] == [
        600, 60, 55]
    assert value(m, "hummingbird_tool_calls_total", tool="sandbox_exec", outcome="ok") == 1
    assert value(m, "hummingbird_tool_calls_total", tool="unknown", outcome="unknown_tool") == 1
    assert value(m, "hummingbird_sandbox_starts_total", outcome="ok") == 1
    assert value(m, "hummingbird_sandbox_exec_seconds_count") >= 1
    assert value(m, "hummingbird_session_saves_total", outcome="saved") == 1
    assert value(m, "hummingbird_gitlab_api_calls_total", method="POST", status="201") >= 1  # the placeholder
    assert value(m, "hummingbird_gitlab_api_calls_total", method="PUT", status="200") >= 1  # the result
    assert value(m, "hummingbird_events_routed_total", outcome="forwarded") == 1
    assert value(m, "hummingbird_events_handled_total", kind="gitlab/pipeline", outcome="handled") == 1
    assert value(m, "hummingbird_events_handled_total", kind="agent/continuation", outcome="handled") == 1
    assert value(m, "hummingbird_queue_messages", queue="work.fifo", state="visible") == 0
    assert "test-key" not in text and "bot-token" not in text


async def refuse_forever(event: Event, continuations: Continuations) -> None:
    raise RetryLater("not now", 0)


async def test_webhook_outcomes_and_dead_letters(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = {"queues": {"backend": "embedded", "embedded_path": str(tmp_path / "q.sqlite"), "max_receives": 1,
                         "wait_time_s": 0},
              "webhook": {"enabled": True, "port": 0, "secret_env": "HOOK_SECRET"},
              "workflows": {"analyze-failures": {"description": "d",
                                                 "prompt": str(REPO / "workflows/analyze-failures.md")}}}
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    loaded = load_config(tmp_path / "config.yaml", {"HOOK_SECRET": "hook-secret-value"})
    metrics, stop = Metrics(), asyncio.Event()
    caplog.set_level(logging.INFO, "hummingbird_agent.events.serve")
    task = asyncio.create_task(run_service(loaded, "all", refuse_forever, stop, metrics=metrics))
    try:
        while not (ready := [r for r in caplog.records if r.getMessage().startswith("serve ready")]):
            await asyncio.sleep(0.05)
        url = listening_url(ready[0].getMessage())
        body = samples.load("gitlab/webhooks_docs/pipeline_event.json")
        good = {"X-Gitlab-Token": "hook-secret-value", "X-Gitlab-Event": "Pipeline Hook", "Idempotency-Key": "k1"}
        async with ClientSession() as http:
            for headers in (good, good, {**good, "X-Gitlab-Token": "wrong"}, {**good, "X-Gitlab-Event": "Bogus"}):
                async with http.post(f"{url}/webhook", json=body, headers=headers) as resp:
                    await resp.read()
            async with http.post(f"{url}/webhook", data=b"not json", headers={**good, "Idempotency-Key": "k2"}):
                pass
            push = samples.load("gitlab/webhooks_captured/fedora_w2fm_push_hook.json")
            async with http.post(f"{url}/webhook", json=push["body"], headers={**good, "X-Gitlab-Event": "Push Hook",
                                                                                  "Idempotency-Key": "k3"}) as resp:
                assert (await resp.json())["status"] == "ignored"
            async with http.post(f"{url}/webhook", data=b"{}", headers={**good, "Content-Encoding": "br"}):
                pass
        for _ in range(400):  # the event is retried at once, then dead-lettered after max_receives
            m = parse(await scrape(url))
            if value(m, "hummingbird_queue_messages", queue="work", state="dead_lettered") == 1:
                break
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 30) == 0
    received = "hummingbird_events_received_total"
    assert value(m, received, kind="pipeline", outcome="queued") == 1
    assert value(m, received, kind="pipeline", outcome="duplicate") == 1
    assert value(m, received, kind="other", outcome="duplicate") == 1  # a made-up event header is one label value
    assert value(m, received, outcome="rejected", reason="unauthorized") == 1
    assert value(m, received, kind="pipeline", outcome="rejected", reason="bad_request") == 1
    assert value(m, received, kind="push", outcome="ignored") == 1  # not counted as a duplicate
    assert value(m, received, kind="push", outcome="duplicate") == 0
    assert value(m, received, outcome="rejected", reason="unsupported_encoding") == 1
    assert value(m, "hummingbird_events_handled_total", kind="gitlab/pipeline", outcome="retried") >= 1
    assert value(m, "hummingbird_queue_messages", queue="work", state="dead_lettered") == 1
    assert value(m, "hummingbird_queue_messages", queue="work", state="visible") == 0


def exported_names() -> set[str]:
    """Every sample name the service can export (the router's counter is registered when the router runs)."""
    metrics = Metrics()
    metrics.watch_counts("hummingbird_events_routed", "h", "outcome", dict)
    names: set[str] = set()
    for family in metrics.registry.collect():
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"], "gauge": [""]}[family.type]
        names |= {family.name + s for s in suffixes}
    return names


def test_dashboard_and_alerts_use_only_exported_metrics() -> None:
    exported = exported_names()
    dashboard = json.loads((KUBE / "monitoring" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    docs = [d for d in yaml.safe_load_all((KUBE / "monitoring" / "prometheus-rules.yaml").read_text()) if d]
    [rule_doc] = [d for d in docs if d["kind"] == "PrometheusRule"]
    rules = [r for g in rule_doc["spec"]["groups"] for r in g["rules"]]
    assert {r["alert"] for r in rules} >= {"HummingbirdDeadLetters", "HummingbirdEventsNotHandled",
                                          "HummingbirdRunErrorRate", "HummingbirdPlaceholderLatencyHigh"}
    used = {name for expr in [*exprs, *(r["expr"] for r in rules)] for name in re.findall(r"hummingbird_\w+", expr)}
    assert used and used <= exported, used - exported
    assert len(exprs) >= 10 and exported <= used | {n for n in exported if n.endswith(("_sum", "_count"))}
    monitor = next(d for d in yaml.safe_load_all((KUBE / "monitoring" / "servicemonitor.yaml").read_text())
                   if d and d["kind"] == "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
