"""Every metric the service exports, in one CollectorRegistry per instance (no process-global state: two
services in one process, or two tests, never share a counter). The only importer of prometheus_client."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Seconds. A run takes from seconds (answered from the diff) to the better part of an hour.
RUN_BUCKETS_S = (5, 15, 30, 60, 120, 300, 600, 1200, 2400, 3600)
# Seconds from the worker accepting an event to the placeholder note; the target is "a few seconds".
PLACEHOLDER_BUCKETS_S = (0.25, 0.5, 1, 2, 5, 10, 30, 60, 300)
# Seconds of one sandbox command: most finish in well under a second, the model may ask for minutes.
EXEC_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class Metrics:
    """The service's metrics. Label values are bounded by the code (workflows, tools, outcomes from fixed sets)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.events_received = Counter("hummingbird_events_received", "Webhook deliveries by event kind and outcome "
                                       "(queued, duplicate, ignored, rejected) and rejection reason.",
                                       ["kind", "outcome", "reason"], registry=r)
        self.events_handled = Counter("hummingbird_events_handled", "Work-queue events by source/kind and outcome "
                                      "(handled, retried, dropped, failed).", ["kind", "outcome"], registry=r)
        self.queue_messages = Gauge("hummingbird_queue_messages", "Messages per queue by state (visible, in_flight, "
                                    "dead_lettered).", ["queue", "state"], registry=r)
        self.runs = Counter("hummingbird_runs", "Workflow runs by outcome (completed, no_data, budget, "
                            "model_error, tool_failure, no_answer, not_started).", ["workflow", "outcome"], registry=r)
        self.run_duration = Histogram("hummingbird_run_duration_seconds", "Wall time of a workflow run.",
                                      ["workflow"], buckets=RUN_BUCKETS_S, registry=r)
        self.time_to_placeholder = Histogram("hummingbird_time_to_placeholder_seconds", "From the worker accepting "
                                             "an event to its placeholder note.", ["workflow"],
                                             buckets=PLACEHOLDER_BUCKETS_S, registry=r)
        self.triage_checks = Counter("hummingbird_triage_checks", "Failed checks triaged before the model, by "
                                     "verdict.", ["workflow", "verdict"], registry=r)
        self.outage_guard = Counter("hummingbird_outage_guard", "MRs pointed to an earlier diagnosis of the same "
                                    "failure instead of a model run.", ["workflow"], registry=r)
        self.model_calls = Counter("hummingbird_model_calls", "Model calls by provider, model and outcome (ok or the "
                                   "error class).", ["provider", "model", "outcome"], registry=r)
        self.model_tokens = Counter("hummingbird_model_tokens", "Tokens by provider, model and kind (input, output, "
                                    "cached).", ["provider", "model", "kind"], registry=r)
        self.tool_calls = Counter("hummingbird_tool_calls", "Tool calls by tool and outcome (ok or the error kind).",
                                  ["tool", "outcome"], registry=r)
        self.sandbox_starts = Counter("hummingbird_sandbox_starts", "Sandbox starts by outcome (ok, error).",
                                      ["outcome"], registry=r)
        self.sandbox_exec = Histogram("hummingbird_sandbox_exec_seconds", "Wall time of one sandbox command.",
                                      buckets=EXEC_BUCKETS_S, registry=r)
        self.gitlab_calls = Counter("hummingbird_gitlab_api_calls", "GitLab API calls of the bot client by HTTP "
                                    "method and status.", ["method", "status"], registry=r)
        self.session_saves = Counter("hummingbird_session_saves", "Session saves by outcome (saved, failed).",
                                     ["outcome"], registry=r)
        self.investigate_turns = Counter("hummingbird_investigate_turns", "Investigation turns by kind (narration, "
                                         "proposal, auto_run, approved, rejected, finalize, stored, error, ...).",
                                         ["kind"], registry=r)
        self.investigate_approvals = Counter("hummingbird_investigate_approvals", "Reviewed proposals by outcome "
                                             "(approved, rejected).", ["outcome"], registry=r)
        self.investigate_refusals = Counter("hummingbird_investigate_refusals", "Tool calls of investigation code "
                                            "refused at the proxy (not read-only and not approved).", registry=r)
        self.investigate_procedures = Counter("hummingbird_investigate_procedures_stored", "Procedures stored by "
                                              "confirmed investigations.", registry=r)

    def watch_counts(self, name: str, help_text: str, label: str, read: Callable[[], Mapping[str, int]]) -> None:
        """Export counts kept elsewhere (a loop's stats object) as a counter family read at scrape time."""
        self.registry.register(_CountsCollector(name, help_text, label, read))

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric in this instance's registry."""
        return generate_latest(self.registry)


class _CountsCollector(Collector):
    def __init__(self, name: str, help_text: str, label: str, read: Callable[[], Mapping[str, int]]) -> None:
        self._name, self._help, self._label, self._read = name, help_text, label, read

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self._name, self._help, labels=[self._label])
        for value, count in self._read().items():
            family.add_metric([value], count)
        yield family
