"""The package's layers, lowest first: a module may import its own layer and the layers below it, never one
above (tests/test_layers.py walks every import, function-level and type-checking ones included, and fails on
an upward import or an import cycle). docs/architecture.md explains the flow through them."""

from __future__ import annotations

# (name, module prefixes under hummingbird_agent, what the layer holds). A module belongs to the layer of its
# longest matching prefix; "" is the package's own __init__.
LAYERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("foundation", ("", "errors", "lifecycle", "budgets", "architecture"),
     "typed errors, the client lifecycle states and every limit; they import nothing of ours"),
    ("config", ("config",), "config.yaml: schema, loading, validation, model targets; pure data, no clients"),
    ("process", ("observability", "progress", "aws"),
     "logging with redaction, progress lines, and the lifecycle of one AWS client that events/ and sessions/ share"),
    ("adapters", ("models", "gitlab", "sessions", "sandbox", "logs", "events.protocols"),
     "one adapter per external system (model providers, GitLab, session storage, sandboxes), the excerpt engine, "
     "and the event and queue interfaces (no transport code)"),
    ("metrics", ("metrics",), "Prometheus registry, /metrics and wrappers that count model, sandbox and handler use"),
    ("tools and transport", ("tools", "events"),
     "the tool registry and sandbox tools; the event transport: webhook, queues, router, worker loop"),
    ("data sources", ("data_sources",), "read-only tools over GitLab, Konflux, Testing Farm and PanDA"),
    ("triage", ("triage",),
     "verdicts on each failed check before the model: pre-existing, flaky, infrastructure, known, new"),
    ("agent", ("agent",), "the provider-blind agent loop, prompts, transcripts and one workflow run"),
    ("knowledge vocabulary", ("bamboo", "bamboo.incident_graph", "bamboo.json_llm", "bamboo.analysis",
                              "bamboo.prompts", "bamboo.workflow_names"),
     "the incident graph model, the knowledge base's JSON LLM calls, prompt files, diagnosis result types"),
    ("knowledge stores", ("bamboo.stores", "bamboo.embeddings"), "graph and vector stores, embedders"),
    ("knowledge tools", ("bamboo.mcp", "bamboo.panda"),
     "the tool catalogue (built-in, external MCP servers, learned procedures) and the PanDA tools and indexes"),
    ("extraction strategies", ("bamboo.strategies",),
     "per-domain facts and prompts for turning an incident into a graph"),
    ("retrieval", ("bamboo.retrieval",), "scores of learned incidents and causes for a new failure"),
    ("learning", ("bamboo.learn",), "populate and accumulate: extract, review and store resolved incidents"),
    ("diagnosis", ("bamboo.diagnose",), "rank, explain and cite the learned causes of a new failure"),
    ("exploration", ("bamboo.explore",),
     "the ContextEnricher: orchestration code over the tool catalogue, run in a sandbox"),
    ("investigation", ("bamboo.investigate",),
     "investigate: the human-reviewed loop over the tool catalogue, its session state and what it stores"),
    ("knowledge assembly", ("bamboo.factory", "bamboo.service"), "the knowledge base built from config"),
    ("runner", ("runner",), "event handlers, work orders and workflow execution: where everything is wired"),
    ("cli", ("cli", "__main__"), "argument parsing and one function per command"),
)
