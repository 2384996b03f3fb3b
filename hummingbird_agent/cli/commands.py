"""The CLI's commands: each loads the config, sets up logging and calls into one component."""

from __future__ import annotations

import argparse
import dataclasses

from hummingbird_agent.config.credentials import project_credentials
from hummingbird_agent.config.loading import (
    LoadedConfig,
    check_role,
    default_config_path,
    load_config,
    required_env_names,
)
from hummingbird_agent.config.model_targets import all_targets, knowledge_target, workflow_target
from hummingbird_agent.config.triage import TriageConfig
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.observability import Redactor, setup_logging, setup_sentry


def load(config_path: str | None) -> LoadedConfig:
    """Load and validate the config; ConfigError propagates to main as one line."""
    return load_config(config_path or default_config_path())


def start_process(loaded: LoadedConfig) -> Redactor:
    """Process-wide set-up for long-running commands: logging first, then Sentry."""
    redact = setup_logging(loaded.log_level, loaded.secret_values() | {loaded.sentry_dsn or ""})
    setup_sentry(loaded.sentry_dsn, redact)
    return redact


def check_config(config_path: str | None, role: str = "all") -> int:
    """Validate the file and what `serve --role <role>` needs (the same checks serve runs); print a summary."""
    loaded = load(config_path)
    check_role(loaded, role)
    loaded.secret_values()  # refuses a secret too short to redact, as serve and run do
    print(render_summary(loaded))
    return 0


def render_summary(loaded: LoadedConfig) -> str:
    """A short human summary of a valid config: workflows, projects, data sources, missing env vars."""
    cfg = loaded.config
    lines = [f"config: {loaded.path} (valid)", f"workflows: {len(cfg.workflows)}"]
    for name, wf in cfg.workflows.items():
        triggers = ", ".join(wf.triggers) or "command only"
        sources = ", ".join(wf.data_sources.declared()) or "none"
        # Knowledge-base engines use bamboo.model, not the workflow's model and iteration budget.
        target = workflow_target(cfg, name) if wf.engine == "agent" else knowledge_target(cfg)
        model = f"model {target.name}"
        engine = (f"{model}, max {wf.max_iterations} iterations" if wf.engine == "agent"
                  else f"engine {wf.engine}, {model}")
        lines.append(f"  {name}: {wf.description} [{engine}]")
        lines.append(f"    triggers: {triggers}; data sources: {sources}")
        if wf.triage.enabled:
            lines.append(f"    triage: {triage_summary(wf.triage)}")
        projects = ", ".join(wf.projects) or "none (no project may run it)"
        lines.append(f"    projects: {projects}")
        lines += credential_lines(loaded, name)
    lines.append(f"queues: {cfg.queues.backend}; sessions: {cfg.sessions.backend}; sandbox: {cfg.sandbox.backend}")
    lines.append(session_expiry_line(cfg.sessions.backend, cfg.sessions.max_age_days))
    lines.append(f"bamboo: {'enabled' if cfg.bamboo.enabled else 'disabled'}")
    lines += bamboo_lines(loaded) if cfg.bamboo.enabled else []
    lines += model_lines(loaded)
    missing = [name for name in required_env_names(cfg) if not loaded.secret(name)]
    lines.append("missing env vars: " + (", ".join(missing) if missing else "none"))
    return "\n".join(lines)


def triage_summary(triage: TriageConfig) -> str:
    status = f"commit status {triage.commit_status}" if triage.commit_status else "no commit status"
    guard = (f"outage guard from {triage.outage.min_mrs} MRs in {triage.outage.window_minutes} min"
             if triage.outage.enabled else "no outage guard")
    note = "status note" if triage.status_note else "no status note"
    culprit = ("culprit search" + (" with break issues" if triage.culprit_issue else "") if triage.culprit
               else "no culprit search")
    return (f"on, look-back {triage.lookback_pipelines} pipelines / {triage.lookback_days} days, {status}, {guard}, "
            f"{note}, model when {triage.model_when}, {culprit}")


def credential_lines(loaded: LoadedConfig, workflow: str) -> list[str]:
    """One line per allowlisted project: the variable each data source reads with (names only, never values)."""
    lines = []
    for name, project, envs in project_credentials(loaded.config):
        if name == workflow:
            used = ", ".join(f"{e.source} {e.env} ({'own' if e.own else 'workflow'}"
                             f"{'' if loaded.secret(e.env) else ', unset'})" for e in envs)
            lines.append(f"    credentials of {project}: {used}")
    return lines


def bamboo_lines(loaded: LoadedConfig) -> list[str]:
    """The knowledge base's extraction strategy (imported, and where it comes from: built in or which plugin) and
    its tool-budget settings with how prompt tokens are counted; ConfigError when the strategy cannot be loaded."""
    from hummingbird_agent import budgets
    from hummingbird_agent.bamboo.explore.tool_selection import candidate_pool
    from hummingbird_agent.bamboo.strategies.base import default_registry

    cfg = loaded.config.bamboo
    origin = default_registry().check(cfg.extraction_strategy)
    window = (f"{cfg.llm_context_window} tokens" if cfg.llm_context_window else
              f"auto (the model server's, else {budgets.TOOL_CONTEXT_WINDOW_TOKENS} tokens)")
    pool = candidate_pool(cfg.tool_max_full_schemas, cfg.tool_retrieval_candidate_k)
    provider = knowledge_target(loaded.config).connection.provider
    counting = _TOKEN_COUNTS.get(provider, f"bytes / {budgets.TOOL_BYTES_PER_TOKEN} (no count API)")
    return [f"  extraction strategy: {cfg.extraction_strategy} ({origin})",
            f"  tool budget: context window {window}, margin {cfg.tool_budget_margin} tokens, full schemas "
            f"{cfg.tool_max_full_schemas}, retrieval pool {pool}{'' if cfg.tool_retrieval_candidate_k else ' (auto)'}"
            f", reserved {min(cfg.tool_reserved_explore, cfg.tool_max_full_schemas)}; prompt tokens: {counting}"]


# How each provider's prompt tokens are counted when a prompt may be over the window (others: bytes / 4).
_TOKEN_COUNTS = {"gemini": "Gemini countTokens", "anthropic": "Anthropic count_tokens"}


def session_expiry_line(backend: str, days: int) -> str:
    if not days:
        return "sessions expire: never (sessions.max_age_days 0)"
    how = "swept by serve" if backend == "local" else "by the bucket's lifecycle rule, not by the service"
    return f"sessions expire: {days} days after their last save ({how})"


def model_lines(loaded: LoadedConfig) -> list[str]:
    """One line per model endpoint the config uses, and what it still lacks."""
    cfg = loaded.config
    if cfg.model.provider == "scripted":
        return [f"model: scripted ({cfg.model.script})"]
    lines, seen = [], set()
    for target in all_targets(cfg):
        if target.connection in seen:
            continue
        seen.add(target.connection)
        problem = target.connection.missing(loaded.secret)
        lines.append(f"model: {target.connection.describe()}" + (f" - missing: {problem}" if problem else ""))
    return lines


def serve(config_path: str | None, role: str, port: int | None = None) -> int:
    from hummingbird_agent.runner.service import serve as serve_service

    loaded = load(config_path)
    if port is not None:
        loaded = with_port(loaded, port)
    check_role(loaded, role)
    redact = start_process(loaded)
    return serve_service(loaded, role, redact)


def with_port(loaded: LoadedConfig, port: int) -> LoadedConfig:
    """`loaded` with webhook.port replaced (validated like the file's value)."""
    cfg = loaded.config
    try:
        webhook = type(cfg.webhook).model_validate({**cfg.webhook.model_dump(), "port": port})
    except ValueError:
        raise ConfigError(f"--port {port}: must be 0-65535") from None
    return dataclasses.replace(loaded, config=cfg.model_copy(update={"webhook": webhook}))


def run_workflow(args: argparse.Namespace) -> int:
    from hummingbird_agent.cli.run import require_agent_workflow, run_command
    from hummingbird_agent.cli.run_post import make_mr_check, make_poster
    from hummingbird_agent.data_sources import register_selected

    loaded = load(args.config)
    spec = loaded.config.workflows.get(args.workflow)
    if spec is not None and spec.engine == "bamboo-diagnose":
        from hummingbird_agent.cli import run_diagnose as cli_diagnose
        cli_diagnose.check_arguments(args)
        require_knowledge_base(loaded, f"run {args.workflow}")
        return cli_diagnose.diagnose_command(loaded, args)
    require_agent_workflow(loaded, args.workflow)  # before --post's token is asked for
    poster = make_poster(loaded, args.workflow, keeps_session=args.save_session is not None) if args.post else None
    return run_command(loaded, args, register_selected, poster, make_mr_check(loaded, args.workflow, args.post))


def require_knowledge_base(loaded: LoadedConfig, command: str) -> None:
    """ConfigError (one line saying how to enable it) when bamboo.enabled is off; called before any store is
    built, so a disabled knowledge base gets no directories, files or connections."""
    if not loaded.config.bamboo.enabled:
        raise ConfigError(f"{command}: the knowledge base is off in {loaded.path}; set `bamboo: {{enabled: true}}` "
                          "there (embedded stores under bamboo.graph.path and bamboo.vectors.path, or a Neo4j / "
                          "Qdrant server). Nothing was created")


# `bamboo` commands that keep the stores rather than learn or diagnose (cli/knowledge_upkeep.py).
UPKEEP = ("incidents", "backup", "restore", "reindex")


def bamboo(args: argparse.Namespace) -> int:
    from hummingbird_agent.cli import knowledge as kb
    loaded = load(args.config)
    command = args.bamboo_command
    uses_stores = (command in ("stats", "analyze", "investigate", *UPKEEP)
                   or (command == "populate" and not args.dry_run))
    if uses_stores:
        require_knowledge_base(loaded, f"bamboo {command}")
    if command in UPKEEP:
        from hummingbird_agent.cli import knowledge_upkeep

        return knowledge_upkeep.run(loaded, args)
    if args.bamboo_command == "populate":
        return kb.populate_command(loaded, args.file, args.dry_run, args.max_retries, args.strategy, args.show)
    if args.bamboo_command in ("index-docs", "index-source"):
        return kb.index_command(loaded, args.bamboo_command.removeprefix("index-"), args.dir)
    if command == "investigate":
        from hummingbird_agent.cli.investigate import investigate_command

        return investigate_command(loaded, args.question, args.project, args.mr, args.incident)
    if args.bamboo_command == "stats":
        return kb.stats_command(loaded)
    return kb.analyze_command(loaded, args.incident, args.json)


def queue(args: argparse.Namespace) -> int:
    from hummingbird_agent.events.queue_tool import QueueRequest, queue_tool

    # Only what this subcommand has and the operator gave; QueueRequest holds the defaults.
    names = {"queue": "queue", "source": "source", "limit": "max", "yes": "yes", "force": "force", "as_json": "json"}
    given = {key: getattr(args, name) for key, name in names.items() if getattr(args, name, None)}
    request = QueueRequest(action=args.queue_command, ids=frozenset(getattr(args, "id", [])), **given)
    return queue_tool(load(args.config), request)
