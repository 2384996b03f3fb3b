"""`queue stats|peek|redrive|purge`: opens the configured backend's queues without creating anything
(a missing store or queue is a one-line error) and prints what the operator asked for."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.errors import ConfigError, PermanentError
from hummingbird_agent.events.admin import QueueAdmin, peek_warnings, render_peek, render_stats
from hummingbird_agent.events.embedded import EmbeddedStore
from hummingbird_agent.events.embedded_admin import EmbeddedAdmin


@dataclass(frozen=True, slots=True)
class QueueRequest:
    """One invocation: `action` with its queue (peek, purge), source (redrive), ids, limit and flags (`force`:
    peek on SQS although a receive counts toward the queue's maxReceiveCount)."""

    action: str
    queue: str = "work-dlq"
    source: str = "work"
    ids: frozenset[str] = frozenset()
    limit: int = budgets.ADMIN_PEEK_DEFAULT
    yes: bool = False
    force: bool = False
    as_json: bool = False


def queue_tool(loaded: LoadedConfig, request: QueueRequest, confirm: Callable[[str], bool] | None = None) -> int:
    """Run one queue command; prints the result and returns the exit code (1: purge not confirmed).
    Redrive ids not in the dead-letter queue raise PermanentError once the others are moved."""
    return asyncio.run(_run(loaded, request, confirm or ask))


def ask(question: str) -> bool:
    if not sys.stdin.isatty():
        raise ConfigError("purge needs confirmation: run it in a terminal or pass --yes")
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


async def _run(loaded: LoadedConfig, request: QueueRequest, confirm: Callable[[str], bool]) -> int:
    async with open_admin(loaded) as admin:
        if request.action == "stats":
            rows = await admin.stats()
            print(json.dumps([asdict(r) for r in rows]) if request.as_json else render_stats(rows))
        elif request.action == "peek":
            peek = await admin.peek(request.queue, request.limit, request.force)
            print(json.dumps([asdict(p) for p in peek.rows]) if request.as_json else render_peek(peek.rows))
            for line in peek_warnings(request.queue, peek):
                print(line, file=sys.stderr)
        elif request.action == "redrive":
            redriven = await admin.redrive(request.source, request.ids)
            print(redriven.summary)
            if redriven.not_found:
                # After the summary: what was found is moved; main prints this as one line, exit 2.
                missing = ", ".join(sorted(redriven.not_found))
                raise PermanentError(f"{len(redriven.not_found)} of the given ids are not in "
                                     f"{request.source}-dlq: {missing}")
        else:
            if not request.yes and not confirm(f"Delete every message in {request.queue}?"):
                print("purge cancelled")
                return 1
            count = await admin.purge(request.queue)
            print(f"purged {request.queue}" + (f": {count} messages deleted" if count is not None else ""))
    return 0


@contextlib.asynccontextmanager
async def open_admin(loaded: LoadedConfig) -> AsyncIterator[QueueAdmin]:
    queues = loaded.config.queues
    if queues.backend == "embedded":
        path = loaded.resolve(queues.embedded_path)
        store = EmbeddedStore(path)
        try:
            store.open(create=False)
        except OSError as exc:
            raise ConfigError(f"embedded queue store {path}: {exc.strerror or exc}") from None
        try:
            yield EmbeddedAdmin(store)
        finally:
            store.close()
        return
    # The SDK adapter is imported only when the SQS backend is chosen.
    from hummingbird_agent.events.sqs import sqs_client
    from hummingbird_agent.events.sqs_admin import SqsAdmin

    urls = {name: url for name, url in (("ingress", queues.ingress_url), ("work", queues.work_url)) if url}
    if not urls:
        raise ConfigError("queues.ingress_url and queues.work_url are not set")
    async with sqs_client(queues.region, queues.endpoint_url) as client:
        yield SqsAdmin(client, urls)
