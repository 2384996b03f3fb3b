"""The running service: build every client once, hand the event handler to the transport, close on exit."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from functools import partial

from hummingbird_agent import budgets
from hummingbird_agent.agent.run import SourceRegistrar
from hummingbird_agent.bamboo.diagnose.known_causes import StoredCauses
from hummingbird_agent.bamboo.factory import build_accumulator, build_stores
from hummingbird_agent.bamboo.service import build_investigation, build_navigator
from hummingbird_agent.bamboo.stores.base import opened
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.config.model_targets import all_targets
from hummingbird_agent.data_sources import register_selected
from hummingbird_agent.errors import RetryLater
from hummingbird_agent.events.protocols import Continuations, Event, Handler
from hummingbird_agent.events.serve import run_service, run_to_exit
from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.gitlab.seal import Seal
from hummingbird_agent.metrics import MeteredModel, MeteredSandbox, Metrics
from hummingbird_agent.models.factory import build_model
from hummingbird_agent.runner.bamboo_executor import BambooAccumulateExecutor, BambooDiagnoseExecutor
from hummingbird_agent.runner.deps import Deps
from hummingbird_agent.runner.engines import EngineExecutor, KnowledgeAgentExecutor
from hummingbird_agent.runner.executor import Executor
from hummingbird_agent.runner.handlers import handle_event
from hummingbird_agent.runner.human_input import ThreadQuestions
from hummingbird_agent.runner.investigate import InvestigateExecutor
from hummingbird_agent.runner.triage_step import TriageService
from hummingbird_agent.sandbox.base import Sandbox
from hummingbird_agent.sandbox.factory import SandboxFactory
from hummingbird_agent.sessions.base import SessionStore
from hummingbird_agent.sessions.local import LocalSessionStore, sweep, sweep_periodically
from hummingbird_agent.sessions.s3 import S3SessionStore

log = logging.getLogger(__name__)
# How long an event waits before it is retried when the service is not configured to handle it yet.
UNCONFIGURED_RETRY_S = 300.0


@contextlib.asynccontextmanager
async def open_sessions(loaded: LoadedConfig) -> AsyncIterator[SessionStore]:
    cfg = loaded.config.sessions
    if cfg.backend == "local":
        local = LocalSessionStore(loaded.resolve(cfg.directory))
        if not cfg.max_age_days:
            yield local
            return
        # Swept before the service takes work, then hourly for its lifetime.
        await sweep(local, cfg.max_age_days * 86400.0)
        sweeper = asyncio.create_task(sweep_periodically(local, cfg.max_age_days * 86400.0,
                                                         budgets.SESSION_SWEEP_INTERVAL_S))
        try:
            yield local
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
        return
    queues = loaded.config.queues
    store = S3SessionStore(cfg.s3_bucket or "", cfg.s3_prefix, queues.region, queues.endpoint_url)
    await store.start()
    try:
        yield store
    finally:
        await store.aclose()


@contextlib.asynccontextmanager
async def open_deps(
    loaded: LoadedConfig, register_sources: SourceRegistrar, redact: Callable[[str], str] = str,
    metrics: Metrics | None = None,
) -> AsyncIterator[Deps]:
    """Every client the handlers use, opened in order and closed in reverse; each records into `metrics`."""
    cfg = loaded.config
    metrics = metrics if metrics is not None else Metrics()
    async with contextlib.AsyncExitStack() as stack:
        gitlab = GitLabClient(cfg.gitlab.url, loaded.secret(cfg.gitlab.token_env) or "", cfg.gitlab.request_timeout_s,
                              on_response=lambda method, status: metrics.gitlab_calls.labels(method, status).inc(),
                              settle_s=cfg.gitlab.write_settle_s, redact=redact)
        await gitlab.open()
        stack.push_async_callback(gitlab.aclose)
        sandboxes = SandboxFactory(cfg.sandbox, min(budgets.SANDBOX_WARM_POOL_SIZE, cfg.queues.max_concurrent_agents))
        await sandboxes.start()
        stack.push_async_callback(sandboxes.close)

        def new_sandbox(session_id: str) -> Sandbox:
            return MeteredSandbox(sandboxes.new(session_id), metrics)

        providers = {t.name: t.connection.provider for t in all_targets(cfg)}
        model = MeteredModel(build_model(loaded), providers, cfg.model.provider, metrics)
        stack.push_async_callback(model.aclose)
        sessions = await stack.enter_async_context(open_sessions(loaded))
        stores = await stack.enter_async_context(opened(build_stores(loaded))) if cfg.bamboo.enabled else None
        known = StoredCauses(stores, cfg.bamboo.share_groups) if stores is not None else None
        triage = TriageService(loaded, known, metrics)
        engines: dict[str, Executor] = {
            "agent": KnowledgeAgentExecutor(loaded, model, new_sandbox, register_sources, redact, stores, metrics,
                                            triage)}
        if stores is not None:
            questions = ThreadQuestions(gitlab)
            engines["bamboo-accumulate"] = BambooAccumulateExecutor(
                loaded, gitlab, build_accumulator(loaded, model, stores, questions.clients), questions)
            engines["bamboo-diagnose"] = BambooDiagnoseExecutor(loaded, build_navigator(loaded, model, stores))
            engines["bamboo-investigate"] = InvestigateExecutor(partial(build_investigation, loaded, model, stores),
                                                                metrics)
        executor = EngineExecutor(loaded, engines)
        seal = Seal.from_secrets(loaded.secret(cfg.gitlab.marker_secret_env or ""),
                                 loaded.secret(cfg.gitlab.token_env) or "")
        yield Deps(loaded=loaded, gitlab=gitlab, sessions=sessions, executor=executor, seal=seal, metrics=metrics,
                   triage=triage)


def build_handler(deps: Deps) -> Handler:
    handler: Handler = partial(handle_event, deps)
    return handler


async def serve_async(loaded: LoadedConfig, role: str, redact: Callable[[str], str] = str,
                      stop: asyncio.Event | None = None, metrics: Metrics | None = None) -> int:
    """Run the service until `stop` is set or SIGTERM/SIGINT arrives; every role serves /metrics. Without its
    secrets the worker does not receive (events wait in the queue, receive counts untouched); router and
    webhook run."""
    cfg = loaded.config
    metrics = metrics if metrics is not None else Metrics()
    # A named marker secret is waited for like the token: replicas signing with different keys would each
    # disown the other's status note.
    missing = [n for n in (cfg.gitlab.token_env, cfg.gitlab.marker_secret_env) if n and not loaded.secret(n)]
    missing += [t.connection.key_env for t in all_targets(cfg) if t.connection.missing(loaded.secret)]
    if missing or role in ("router", "ingress"):
        waiting = f"{', '.join(dict.fromkeys(missing))} not set" if missing else None  # once per variable
        return await run_service(loaded, role, no_handler, stop, worker_waiting=waiting, metrics=metrics)
    async with open_deps(loaded, register_selected, redact, metrics) as deps:
        return await run_service(loaded, role, build_handler(deps), stop, metrics=metrics)


async def no_handler(event: Event, _continuations: Continuations) -> None:
    """Never called: roles without a worker, or a worker waiting for its secrets, do not receive."""
    raise RetryLater(f"no handler in this process for {event.event_type}", UNCONFIGURED_RETRY_S)


def serve(loaded: LoadedConfig, role: str, redact: Callable[[str], str] = str) -> int:
    return run_to_exit(serve_async(loaded, role, redact))
