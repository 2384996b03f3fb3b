"""`bamboo populate` and `bamboo stats`: learn incidents from JSONL, summarise the knowledge base."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TextIO

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.accumulator import AccumulationResult, KnowledgeAccumulator, Stores
from hummingbird_agent.bamboo.causes import ExistingCause
from hummingbird_agent.bamboo.incidents import iter_incidents, read_lines
from hummingbird_agent.bamboo.navigator import ReasoningNavigator
from hummingbird_agent.bamboo.strategies.base import IncidentInput, default_registry
from hummingbird_agent.config import LoadedConfig
from hummingbird_agent.errors import AgentError, ConfigError
from hummingbird_agent.observability import setup_logging
from hummingbird_agent.progress import Progress

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PopulateReport:
    total: int = 0
    stored: int = 0
    with_warning: int = 0
    failures: list[tuple[int, str]] = field(default_factory=list)

    def render(self, path: str, dry_run: bool) -> str:
        verb = "would store (dry run, nothing written)" if dry_run else "stored"
        short = "would be stored" if dry_run else "stored"
        lines = [f"populate: {self.total} incidents from {path}",
                 f"  {verb}: {self.stored}",
                 f"  rejected by the reviewer, best result {short} with a warning: {self.with_warning}",
                 f"  failed: {len(self.failures)}"]
        lines += [f"    line {n}: {reason}" for n, reason in self.failures]
        return "\n".join(lines)


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


def render_knowledge(number: int, result: AccumulationResult, dry_run: bool) -> str:
    """What one incident adds to the knowledge base: its id, review verdict, summary, nodes and edges."""
    knowledge = result.knowledge
    verb = "would store" if dry_run else "stored"
    verdict = "approved" if result.approved else "rejected: " + "; ".join(result.review.issues)[:300]
    lines = [f"line {number}: {verb} incident {knowledge.incident_id} ({verdict}, {result.attempts} attempt(s))",
             f"  summary: {knowledge.summary}"]
    by_type: dict[str, list[str]] = {}
    for node in knowledge.graph.nodes:
        by_type.setdefault(node.type.value, []).append(node.name)
    lines += [f"  {kind}: " + "; ".join(names) for kind, names in by_type.items()]
    lines += [f"  edge: {e.source[1]} -{e.type.value}-> {e.target[1]}" for e in knowledge.graph.edges]
    return "\n".join(lines)


async def populate(accumulator: KnowledgeAccumulator, stores: Stores | None, path: str, dry_run: bool,
                   max_retries: int | None, out: TextIO | None = None, progress: Progress | TextIO | None = None,
                   show: bool = False) -> int:
    """Learn every incident of a JSONL file; a bad line or a failed incident is reported and skipped. With
    `show`, what each incident adds is printed to `out`."""
    out = out or sys.stdout
    lines = read_lines(path)
    report = PopulateReport(total=len(lines))
    bar = progress if isinstance(progress, Progress) else Progress(report.total, progress or sys.stderr, "populate")
    if stores is not None:
        await _open(stores)
    try:
        # A batch is stored after all of it is processed, so the store does not change within a batch:
        # the closest existing causes of all its incidents are read together, before the first.
        for start in range(0, len(lines), budgets.BAMBOO_POPULATE_BATCH):
            batch = list(iter_incidents(lines[start : start + budgets.BAMBOO_POPULATE_BATCH]))
            parsed = [item for _, item in batch if not isinstance(item, str)]
            existing = iter(await accumulator.existing_causes(parsed))
            pending: list[tuple[int, AccumulationResult]] = []
            for number, item in batch:
                failed_before = len(report.failures)
                if isinstance(item, str):
                    report.failures.append((number, item))
                elif (result := await _one(accumulator, item, number, max_retries, report,
                                           next(existing))) is not None:
                    pending.append((number, result))
                    if show:
                        bar.above(partial(print, render_knowledge(number, result, dry_run), file=out, flush=True))
                bar.advance(failed=len(report.failures) > failed_before)
            await _flush(accumulator, pending, dry_run, report)
    finally:
        bar.finish()
        if stores is not None:
            await _close(stores)
    print(report.render(path, dry_run), file=out)
    return 1 if report.failures else 0


async def _one(accumulator: KnowledgeAccumulator, incident: IncidentInput, number: int, max_retries: int | None,
               report: PopulateReport, existing: Sequence[ExistingCause]) -> AccumulationResult | None:
    """Extract and review one incident; it is stored with its batch by `_flush`."""
    try:
        return await accumulator.process(incident, dry_run=True, max_review_retries=max_retries, existing=existing)
    except AgentError as exc:
        log.warning("populate: line %d failed: %s", number, exc)
        report.failures.append((number, str(exc) or type(exc).__name__))
        return None


async def _flush(accumulator: KnowledgeAccumulator, pending: list[tuple[int, AccumulationResult]], dry_run: bool,
                 report: PopulateReport) -> None:
    if not dry_run:
        try:
            await accumulator.store([result for _, result in pending])
        except AgentError as exc:
            log.warning("populate: storing lines %s failed: %s", ", ".join(str(n) for n, _ in pending), exc)
            report.failures += [(number, f"not stored: {exc}") for number, _ in pending]
            return
    for _, result in pending:
        if result.approved:
            report.stored += 1
        else:
            report.with_warning += 1


async def _open(stores: Stores) -> None:
    await stores.graph.open()
    try:
        await stores.vectors.open()
    except BaseException:
        await stores.graph.aclose()
        raise


async def _close(stores: Stores) -> None:
    try:
        await stores.vectors.aclose()
    finally:
        await stores.graph.aclose()


async def stats(stores: Stores, out: TextIO | None = None) -> int:
    """Counts per node and edge type, vector points per section, top causes."""
    out = out or sys.stdout
    await _open(stores)
    try:
        counts = await stores.graph.counts()
        causes = await stores.graph.top_causes(budgets.BAMBOO_TOP_CAUSES)
        sections = Counter({s: await stores.vectors.count(s) for s in
                            ("Summary", "Symptom", "Cause", "Resolution", "Task_Context")})
        points = await stores.vectors.count()
    finally:
        await _close(stores)
    lines = [f"incidents: {counts.incidents}",
             "nodes: " + ", ".join(f"{k} {v}" for k, v in counts.nodes.items()),
             "edges: " + ", ".join(f"{k} {v}" for k, v in counts.edges.items()),
             f"vector points: {points} (" + ", ".join(f"{k} {v}" for k, v in sections.items()) + ")",
             "top causes:" if causes else "top causes: none yet"]
    for rank, cause in enumerate(causes, 1):
        fixes = "; ".join(cause.resolutions) or "none recorded"
        lines.append(f"  {rank}. {cause.name} (incidents {cause.frequency}, confidence {cause.confidence:.2f})"
                     f" -> resolutions: {fixes}")
    print("\n".join(lines), file=out)
    return 0


def with_strategy(loaded: LoadedConfig, strategy: str) -> LoadedConfig:
    """`loaded` with another extraction strategy; ConfigError (one line) when it is not registered."""
    if strategy.lower() not in default_registry().names():
        raise ConfigError(f"--strategy {strategy!r} is not registered (registered: "
                          f"{', '.join(default_registry().names())})")
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
            await _open(stores)
            try:
                for path, incident in zip(paths, incidents, strict=True):
                    ok = await _analyze_one(navigator, incident, path, as_json, len(incidents) > 1, bar)
                    failed += not ok
                    if len(incidents) > 1:
                        bar.advance(failed=not ok)
            finally:
                bar.finish()
                await _close(stores)
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
    from hummingbird_agent.bamboo import panda_index
    from hummingbird_agent.bamboo.factory import panda_index as index_of

    target = index_of(loaded, kind).path
    try:
        counts = panda_index.build(folder, kind, target)
    except (ConfigError, OSError) as exc:
        print(f"error: index-{kind}: {exc}", file=sys.stderr)
        return 2
    print(f"index-{kind}: {counts['chunks']} sections from {counts['files']} files -> {target}")
    return 0
