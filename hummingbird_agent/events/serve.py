"""`serve`: opens the transport named by config, then runs router, worker and the HTTP edge (webhook,
health) for the chosen role until SIGTERM/SIGINT; in-flight handlers get the configured grace period."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import ROLE_QUEUE_URLS, LoadedConfig, QueuesConfig, check_role
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.events.edge import EdgeLimits, HttpEdge
from hummingbird_agent.events.embedded import EmbeddedStore
from hummingbird_agent.events.protocols import Continuations, Event, Handler, Queue
from hummingbird_agent.events.router import RouterStats, router_loop
from hummingbird_agent.events.watch import OutageLog, WatchedQueue
from hummingbird_agent.events.webhook import DedupLedger, WebhookIngress, build_app
from hummingbird_agent.events.worker import WorkerSettings, poll_loop
from hummingbird_agent.metrics import Metrics, metered_handler
from hummingbird_agent.metrics.http import add_metrics_route, webhook_counter

logger = logging.getLogger(__name__)
ROLES = ("router", "worker", "ingress", "all")
# Embedded queue names; each has a dead-letter queue named <name>-dlq in the same file.
INGRESS_QUEUE = "ingress"
WORK_QUEUE = "work"


async def log_only_handler(event: Event, continuations: Continuations) -> None:
    """The default handler until the conversation layer is plugged in: log the event and consume it."""
    logger.info(
        "event (log only): %s/%s message=%s group=%s", event.source, event.event_type, event.message_id, event.group_id
    )


@dataclass(frozen=True, slots=True)
class Transport:
    """The two queues a role uses (None when the role does not need it) and where they live."""

    ingress: Queue | None
    work: Queue | None
    description: str


def _needs(role: str) -> tuple[bool, bool]:
    """(ingress queue needed, work queue needed) for a role."""
    urls = ROLE_QUEUE_URLS[role]
    return "ingress_url" in urls, "work_url" in urls


@contextlib.asynccontextmanager
async def open_transport(loaded: LoadedConfig, role: str) -> AsyncIterator[Transport]:
    """Open the configured backend's queues for `role`, each watched by one OutageLog; closed on exit."""
    outages = OutageLog()
    async with _open_backend(loaded, role) as raw:
        yield Transport(
            WatchedQueue(raw.ingress, outages) if raw.ingress is not None else None,
            WatchedQueue(raw.work, outages) if raw.work is not None else None,
            raw.description,
        )


@contextlib.asynccontextmanager
async def _open_backend(loaded: LoadedConfig, role: str) -> AsyncIterator[Transport]:
    queues = loaded.config.queues
    if queues.backend == "embedded":
        async with _embedded(loaded, queues) as transport:
            yield transport
        return
    # The SDK adapter is imported only when the SQS backend is chosen.
    from hummingbird_agent.events.sqs import sqs_client

    check_role(loaded, role)
    need_ingress, need_work = _needs(role)
    async with sqs_client(queues.region, queues.endpoint_url) as client:
        ingress = client.queue(queues.ingress_url) if need_ingress and queues.ingress_url else None
        work = client.queue(queues.work_url) if need_work and queues.work_url else None
        yield Transport(ingress, work, f"sqs ({queues.endpoint_url or queues.region})")


@contextlib.asynccontextmanager
async def _embedded(loaded: LoadedConfig, queues: QueuesConfig) -> AsyncIterator[Transport]:
    path = loaded.resolve(queues.embedded_path)
    store = EmbeddedStore(path)
    try:
        store.open()
    except OSError as exc:
        raise ConfigError(f"queues.embedded_path: cannot open {path} ({exc.strerror})") from None
    try:
        ingress = store.queue(
            INGRESS_QUEUE, fifo=False, dead_letter=f"{INGRESS_QUEUE}-dlq", max_receives=queues.max_receives
        )
        work = store.queue(WORK_QUEUE, fifo=True, dead_letter=f"{WORK_QUEUE}-dlq", max_receives=queues.max_receives)
        yield Transport(ingress, work, f"embedded ({path})")
    finally:
        store.close()


def depth_readers(queues: list[Queue]) -> dict[str, Any]:
    """Each queue's depth reader for /metrics (both backends have one; a watched queue is looked through)."""
    inner = [getattr(q, "inner", q) for q in queues]
    return {q.name: q.depth for q in inner if hasattr(q, "depth")}


def worker_settings(queues: QueuesConfig) -> WorkerSettings:
    return WorkerSettings(
        max_concurrent=queues.max_concurrent_agents,
        visibility_timeout_s=queues.visibility_timeout_s,
        heartbeat_interval_s=queues.heartbeat_interval_s,
        wait_s=queues.wait_time_s,
        shutdown_grace_s=queues.shutdown_grace_s,
    )


async def _start_http(loaded: LoadedConfig, role: str, transport: Transport, waiting: str | None,
                      metrics: Metrics) -> HttpEdge:
    hook = loaded.config.webhook
    ingress = None
    if hook.enabled and role in ("ingress", "all") and transport.ingress is not None:
        secret = loaded.secret(hook.secret_env)
        if secret is None:
            logger.warning("webhook: %s is not set; every webhook is refused with 401", hook.secret_env)
        ledger = DedupLedger(budgets.WEBHOOK_DEDUP_WINDOW_S, budgets.WEBHOOK_DEDUP_MAX_KEYS)
        ingress = WebhookIngress(transport.ingress, secret, hook.max_body_bytes, ledger)
    queues = [q for q in (transport.ingress, transport.work) if q is not None]
    app = build_app(queues, ingress, hook.path, waiting, waiting_unready=role == "worker")
    add_metrics_route(app, metrics, depth_readers(queues))
    app.middlewares.append(webhook_counter(metrics, hook.path))
    edge = HttpEdge(app, EdgeLimits())
    try:
        await edge.start(hook.host, hook.port)
    except OSError as exc:
        raise ConfigError(f"webhook: cannot listen on {hook.host}:{hook.port} ({exc.strerror})") from None
    return edge


async def run_service(
    loaded: LoadedConfig,
    role: str,
    handler: Handler,
    stop: asyncio.Event | None = None,
    *,
    worker_waiting: str | None = None,
    metrics: Metrics | None = None,
) -> int:
    """Run `role` until `stop` is set or SIGTERM/SIGINT arrives; returns the exit code (0). Every role serves
    /metrics from `metrics` (a fresh registry when not given).

    `worker_waiting` (why the handler cannot run, e.g. a missing secret) keeps the worker from
    receiving at all, so waiting events keep their receive counts and never reach the dead-letter
    queue; router and webhook keep accepting, /readyz says why."""
    if role not in ROLES:
        raise ConfigError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    stop = stop or asyncio.Event()
    metrics = metrics if metrics is not None else Metrics()
    queues = loaded.config.queues
    waiting = worker_waiting if role in ("worker", "all") else None
    if waiting:
        logger.warning("worker not receiving: %s; events stay queued until it is fixed and the service restarts",
                       waiting)
    hurry = asyncio.Event()
    with _signals_set(stop, hurry):
        async with open_transport(loaded, role) as transport:
            edge = await _start_http(loaded, role, transport, waiting, metrics)
            try:
                work = None if waiting else metered_handler(handler, metrics)
                loops = _loops(role, transport, work, queues, (stop, hurry), metrics)
                logger.info("serve ready: role=%s transport=%s listening on %s", role, transport.description, edge.url)
                await asyncio.gather(stop.wait(), *loops)
            finally:
                await edge.aclose()
    logger.info("serve stopped: role=%s", role)
    return 0


def _loops(
    role: str, transport: Transport, handler: Handler | None, queues: QueuesConfig,
    signals: tuple[asyncio.Event, asyncio.Event], metrics: Metrics,
) -> list[Awaitable[Any]]:
    """The role's loops; `signals` is (stop, hurry): the first signal stops receiving, a second one ends the grace."""
    stop, hurry = signals
    loops: list[Awaitable[Any]] = []
    if role in ("router", "all") and transport.ingress is not None and transport.work is not None:
        stats = RouterStats()
        metrics.watch_counts("hummingbird_events_routed", "Ingress messages by routing outcome.", "outcome",
                             lambda: {"forwarded": stats.forwarded, "undecodable": stats.undecodable,
                                      "send_failed": stats.send_failures})
        loops.append(
            router_loop(
                transport.ingress,
                transport.work,
                stop,
                wait_s=queues.wait_time_s,
                visibility_timeout_s=queues.visibility_timeout_s,
                stats=stats,
            )
        )
    if role in ("worker", "all") and transport.work is not None and handler is not None:
        loops.append(poll_loop(transport.work, handler, stop, worker_settings(queues), hurry))
    return loops


@contextlib.contextmanager
def _signals_set(stop: asyncio.Event, hurry: asyncio.Event) -> Any:
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        # add_signal_handler raises NotImplementedError on loops without signal support, RuntimeError or
        # ValueError off the main thread (tests run the service in a task): then SIGTERM is simply not ours.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, _on_signal, sig, stop, hurry)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def _on_signal(sig: signal.Signals, stop: asyncio.Event, hurry: asyncio.Event) -> None:
    if stop.is_set():  # a second Ctrl-C: do not make the operator wait out the grace period
        logger.info("%s again: cancelling running handlers now; their messages are released", sig.name)
        hurry.set()
        return
    logger.info("shutdown requested by %s: no new messages; running handlers may finish", sig.name)
    stop.set()


def serve(loaded: LoadedConfig, role: str, handler: Handler = log_only_handler) -> int:
    """Synchronous entry point for the CLI: runs run_service() in a fresh event loop; returns the exit code."""
    return run_to_exit(run_service(loaded, role, handler))


def run_to_exit(main: Coroutine[Any, Any, int]) -> int:
    """Like asyncio.run(main), but the exit does not wait for blocking calls still running in threads
    (asyncio.run and the interpreter join them, however long an SDK keeps retrying): after
    budgets.EXIT_THREAD_JOIN_S the process exits with main's code and without them."""
    executor = ThreadPoolExecutor(thread_name_prefix="blocking")
    loop = asyncio.new_event_loop()
    loop.set_default_executor(executor)
    try:
        code = loop.run_until_complete(main)
        loop.run_until_complete(_cancel_leftovers())
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        executor.shutdown(wait=False, cancel_futures=True)
        loop.close()
    deadline = time.monotonic() + budgets.EXIT_THREAD_JOIN_S
    others = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    for thread in others:
        thread.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in others if t.is_alive()]
    if stuck:
        logger.warning("exiting without %d blocking calls still running: %s", len(stuck), ", ".join(stuck))
        logging.shutdown()
        sys.stdout.flush()
        os._exit(code)
    return code


async def _cancel_leftovers() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=budgets.CANCEL_WAIT_S)
