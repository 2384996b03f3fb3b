"""The `bamboo` commands: populate (bamboo.populate), stats, analyze, index-docs / index-source."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from functools import partial
from typing import TextIO

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.diagnose.navigator import ReasoningNavigator
from hummingbird_agent.bamboo.learn.incidents import read_lines
from hummingbird_agent.bamboo.learn.populate import populate
from hummingbird_agent.bamboo.retrieval.log_vector import LOG_SECTION
from hummingbird_agent.bamboo.stores import owners
from hummingbird_agent.bamboo.stores.base import Stores, opened
from hummingbird_agent.bamboo.strategies.base import IncidentInput, default_registry
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.errors import AgentError, ConfigError
from hummingbird_agent.observability import setup_logging
from hummingbird_agent.progress import Progress

log = logging.getLogger(__name__)


@contextlib.contextmanager
def bar_logging(loaded: LoadedConfig, bar: Progress, on: bool = True) -> Iterator[None]:
    """Log lines above the bar while the block runs; the process's logging set-up is restored after it."""
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    if on:
        setup_logging(loaded.env.get("LOG_LEVEL", "WARNING"), loaded.secret_values(), bar.log_stream(),
                      json_lines=False)
    try:
        yield
    finally:
        root.handlers[:] = saved
        root.setLevel(level)


async def stats(stores: Stores, out: TextIO | None = None) -> int:
    """Counts per node and edge type, vector points per section, top causes."""
    out = out or sys.stdout
    async with opened(stores):
        counts = await stores.graph.counts()
        causes = await stores.graph.top_causes(budgets.BAMBOO_TOP_CAUSES)
        sections = Counter({s: await stores.vectors.count(s) for s in
                            ("Summary", "Symptom", "Cause", "Resolution", "Task_Context", LOG_SECTION)})
        points = await stores.vectors.count()
    unowned = f" ({counts.unowned} without a project: no project's diagnosis or triage sees them)" \
        if counts.unowned else ""
    lines = [f"incidents: {counts.incidents}{unowned}",
             "nodes: " + ", ".join(f"{k} {v}" for k, v in counts.nodes.items()),
             "edges: " + ", ".join(f"{k} {v}" for k, v in counts.edges.items()),
             f"vector points: {points} (" + ", ".join(f"{k} {v}" for k, v in sections.items()) + ")",
             "top causes:" if causes else "top causes: none yet"]
    for rank, cause in enumerate(causes, 1):
        fixes = "; ".join(owners.plain(r) for r in cause.resolutions) or "none recorded"
        lines.append(f"  {rank}. {owners.shown(cause.name)} (incidents {cause.frequency}, "
                     f"confidence {cause.confidence:.2f}) -> resolutions: {fixes}")
    print("\n".join(lines), file=out)
    return 0


def with_strategy(loaded: LoadedConfig, strategy: str) -> LoadedConfig:
    """`loaded` with another extraction strategy; ConfigError (one line) when it is not registered."""
    names = default_registry().names()
    if strategy.lower() not in names:
        raise ConfigError(f"--strategy {strategy!r} is not registered (registered: {', '.join(names)})")
    bamboo = loaded.config.bamboo.model_copy(update={"extraction_strategy": strategy.lower()})
    return dataclasses.replace(loaded, config=loaded.config.model_copy(update={"bamboo": bamboo}))


def populate_command(loaded: LoadedConfig, path: str, dry_run: bool, max_retries: int | None,
                     strategy: str | None = None, show: bool = False) -> int:
    """`bamboo populate FILE.jsonl [--strategy NAME]`: build the model, stores and accumulator from config,
    then run."""
    from hummingbird_agent.bamboo.factory import build_accumulator, build_stores
    from hummingbird_agent.models import build_model

    if max_retries is not None and max_retries < 0:
        print("error: --max-retries must be 0 or more", file=sys.stderr)
        return 2
    if strategy:
        try:
            loaded = with_strategy(loaded, strategy)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    lines = read_lines(path)  # an unreadable file is one error line before anything opens
    bar = Progress(len(lines), sys.stderr, "populate")
    stores = None if dry_run else build_stores(loaded)
    model = build_model(loaded)

    async def run() -> int:
        try:
            return await populate(build_accumulator(loaded, model, stores), stores, path, dry_run, max_retries,
                                  progress=bar, show=show)
        finally:
            await model.aclose()

    # Warnings (a failed line, a rejected extraction) are printed above the bar, never through it.
    with bar_logging(loaded, bar):
        return asyncio.run(run())


def stats_command(loaded: LoadedConfig) -> int:
    from hummingbird_agent.bamboo.factory import build_stores

    return asyncio.run(stats(build_stores(loaded)))


def analyze_command(loaded: LoadedConfig, paths: Sequence[str], as_json: bool) -> int:
    """`bamboo analyze INCIDENT.json... [--json]`: diagnose each incident and print its AnalysisResult; several
    incidents get a heading each (JSON: one object per line) and progress on stderr."""
    from hummingbird_agent.bamboo import service
    from hummingbird_agent.bamboo.factory import build_stores
    from hummingbird_agent.models import build_model

    try:
        incidents = [service.read_incident(path) for path in paths]
        stores = build_stores(loaded)
        model = build_model(loaded)
        navigator = service.build_navigator(loaded, model, stores)
    except AgentError as exc:
        return service.report_error(exc)
    bar = Progress(len(incidents), sys.stderr, "analyze")

    async def run() -> int:
        failed = 0
        try:
            try:
                async with opened(stores):
                    for path, incident in zip(paths, incidents, strict=True):
                        ok = await _analyze_one(navigator, incident, path, as_json, len(incidents) > 1, bar)
                        failed += not ok
                        if len(incidents) > 1:
                            bar.advance(failed=not ok)
            finally:
                bar.finish()
        except AgentError as exc:
            return service.report_error(exc)
        finally:
            await model.aclose()
        return 2 if failed else 0

    with bar_logging(loaded, bar, on=len(incidents) > 1):
        return asyncio.run(run())


async def _analyze_one(navigator: ReasoningNavigator, incident: IncidentInput, path: str, as_json: bool,
                       several: bool, bar: Progress) -> bool:
    from hummingbird_agent.bamboo import service

    try:
        result = await navigator.analyze(incident)
    except AgentError as exc:
        bar.above(partial(service.report_error, exc))
        return False
    if not several:
        service.print_result(result, as_json)
    elif as_json:
        bar.above(partial(print, json.dumps({"incident": path, **result.to_json()}), flush=True))
    else:
        bar.above(partial(print, f"== {path}\n{result.render()}\n", flush=True))
    return True


def index_command(loaded: LoadedConfig, kind: str, folder: str) -> int:
    """`bamboo index-docs DIR` / `bamboo index-source DIR`: build the offline PanDA index under
    bamboo.panda.index_dir (replacing the previous one)."""
    from hummingbird_agent.bamboo.factory import panda_index as index_of
    from hummingbird_agent.bamboo.panda import index as panda_index

    target = index_of(loaded, kind).path
    try:
        counts = panda_index.build(folder, kind, target)
    except (ConfigError, OSError) as exc:
        print(f"error: index-{kind}: {exc}", file=sys.stderr)
        return 2
    print(f"index-{kind}: {counts['chunks']} sections from {counts['files']} files -> {target}")
    return 0
