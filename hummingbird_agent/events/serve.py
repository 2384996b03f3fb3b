"""`serve`: opens the transport named by config, then runs router, worker and the HTTP edge (webhook,
health) for the chosen role until SIGTERM/SIGINT; in-flight handlers get the configured grace period."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from hummingbird_agent import budgets
from hummingbird_agent.config import LoadedConfig, QueuesConfig
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.events.embedded import EmbeddedStore
from hummingbird_agent.events.protocols import Continuations, Event, Handler, Queue
from hummingbird_agent.events.router import RouterStats, router_loop
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
    return role in ("router", "ingress", "all"), role in ("router", "worker", "all")


@contextlib.asynccontextmanager
async def open_transport(loaded: LoadedConfig, role: str) -> AsyncIterator[Transport]:
    """Open the configured backend's queues for `role`; closed again on exit."""
    queues = loaded.config.queues
    if queues.backend == "embedded":
        async with _embedded(loaded, queues) as transport:
            yield transport
        return
    # The SDK adapter is imported only when the SQS backend is chosen.
    from hummingbird_agent.events.sqs import sqs_client

    need_ingress, need_work = _needs(role)
    for needed, key, url in (
        (need_ingress, "ingress_url", queues.ingress_url),
        (need_work, "work_url", queues.work_url),
    ):
        if needed and not url:
            raise ConfigError(f"queues.{key} is required for role {role!r} with the sqs backend")
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


def worker_settings(queues: QueuesConfig) -> WorkerSettings:
    return WorkerSettings(
        max_concurrent=queues.max_concurrent_agents,
        visibility_timeout_s=queues.visibility_timeout_s,
        heartbeat_interval_s=queues.heartbeat_interval_s,
        wait_s=queues.wait_time_s,
        shutdown_grace_s=queues.shutdown_grace_s,
    )


async def _start_http(loaded: LoadedConfig, role: str, transport: Transport,
                      metrics: Metrics) -> tuple[web.AppRunner, str]:
    hook = loaded.config.webhook
    ingress = None
    if hook.enabled and role in ("ingress", "all") and transport.ingress is not None:
        secret = loaded.secret(hook.secret_env)
        if secret is None:
            logger.warning("webhook: %s is not set; every webhook is refused with 401", hook.secret_env)
        ledger = DedupLedger(budgets.WEBHOOK_DEDUP_WINDOW_S, budgets.WEBHOOK_DEDUP_MAX_KEYS)
        ingress = WebhookIngress(transport.ingress, secret, hook.max_body_bytes, ledger)
    queues = [q for q in (transport.ingress, transport.work) if q is not None]
    app = build_app(queues, ingress, hook.path)
    add_metrics_route(app, metrics, {q.name: q.depth for q in queues if hasattr(q, "depth")})
    app.middlewares.append(webhook_counter(metrics, hook.path))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, hook.host, hook.port).start()
    except OSError as exc:
        await runner.cleanup()
        raise ConfigError(f"webhook: cannot listen on {hook.host}:{hook.port} ({exc.strerror})") from None
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"


async def run_service(loaded: LoadedConfig, role: str, handler: Handler, stop: asyncio.Event | None = None,
                      metrics: Metrics | None = None) -> int:
    """Run `role` until `stop` is set or SIGTERM/SIGINT arrives; returns the exit code (0). Every role serves
    /metrics from `metrics` (a fresh registry when not given)."""
    if role not in ROLES:
        raise ConfigError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    stop = stop or asyncio.Event()
    metrics = metrics if metrics is not None else Metrics()
    queues = loaded.config.queues
    with _signals_set(stop):
        async with open_transport(loaded, role) as transport:
            runner, url = await _start_http(loaded, role, transport, metrics)
            try:
                loops = _loops(role, transport, metered_handler(handler, metrics), queues, stop, metrics)
                logger.info("serve ready: role=%s transport=%s listening on %s", role, transport.description, url)
                await asyncio.gather(stop.wait(), *loops)
            finally:
                await runner.cleanup()
    logger.info("serve stopped: role=%s", role)
    return 0


def _loops(
    role: str, transport: Transport, handler: Handler, queues: QueuesConfig, stop: asyncio.Event, metrics: Metrics
) -> list[Awaitable[Any]]:
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
    if role in ("worker", "all") and transport.work is not None:
        loops.append(poll_loop(transport.work, handler, stop, worker_settings(queues)))
    return loops


@contextlib.contextmanager
def _signals_set(stop: asyncio.Event) -> Any:
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        # add_signal_handler raises NotImplementedError on loops without signal support, RuntimeError or
        # ValueError off the main thread (tests run the service in a task): then SIGTERM is simply not ours.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, _on_signal, sig, stop)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def _on_signal(sig: signal.Signals, stop: asyncio.Event) -> None:
    logger.info("shutdown requested by %s: no new messages; running handlers may finish", sig.name)
    stop.set()


def serve(loaded: LoadedConfig, role: str, handler: Handler = log_only_handler) -> int:
    """Synchronous entry point for the CLI: runs run_service() in a fresh event loop; returns the exit code."""
    return asyncio.run(run_service(loaded, role, handler))
