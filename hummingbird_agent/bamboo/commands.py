"""`bamboo populate` and `bamboo stats`: learn incidents from JSONL, summarise the knowledge base."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import TextIO

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.accumulator import AccumulationResult, KnowledgeAccumulator, Stores
from hummingbird_agent.bamboo.incidents import iter_incidents, read_lines
from hummingbird_agent.bamboo.strategies.base import IncidentInput, default_registry
from hummingbird_agent.config import LoadedConfig
from hummingbird_agent.errors import AgentError, ConfigError

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PopulateReport:
    total: int = 0
    stored: int = 0
    with_warning: int = 0
    failures: list[tuple[int, str]] = field(default_factory=list)

    def render(self, path: str, dry_run: bool) -> str:
        verb = "extracted (dry run, nothing written)" if dry_run else "stored"
        lines = [f"populate: {self.total} incidents from {path}",
                 f"  {verb}: {self.stored}",
                 f"  rejected by the reviewer, best result {verb.split(' ')[0]} with a warning: {self.with_warning}",
                 f"  failed: {len(self.failures)}"]
        lines += [f"    line {n}: {reason}" for n, reason in self.failures]
        return "\n".join(lines)


def _progress(done: int, total: int, out: TextIO) -> None:
    if not out.isatty():
        return
    width = 30
    filled = width * done // max(total, 1)
    out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done == total:
        out.write("\n")
    out.flush()


async def populate(accumulator: KnowledgeAccumulator, stores: Stores | None, path: str, dry_run: bool,
                   max_retries: int | None, out: TextIO | None = None, progress: TextIO | None = None) -> int:
    """Learn every incident of a JSONL file; a bad line or a failed incident is reported and skipped."""
    out, progress = out or sys.stdout, progress or sys.stderr
    lines = read_lines(path)
    report = PopulateReport(total=len(lines))
    if stores is not None:
        await _open(stores)
    pending: list[tuple[int, AccumulationResult]] = []
    try:
        for done, (number, item) in enumerate(iter_incidents(lines), 1):
            if isinstance(item, str):
                report.failures.append((number, item))
            else:
                result = await _one(accumulator, item, number, max_retries, report)
                if result is not None:
                    pending.append((number, result))
            if len(pending) >= budgets.BAMBOO_POPULATE_BATCH:
                await _flush(accumulator, pending, dry_run, report)
                pending = []
            _progress(done, report.total, progress)
        await _flush(accumulator, pending, dry_run, report)
    finally:
        if stores is not None:
            await _close(stores)
    print(report.render(path, dry_run), file=out)
    return 1 if report.failures else 0


async def _one(accumulator: KnowledgeAccumulator, incident: IncidentInput, number: int, max_retries: int | None,
               report: PopulateReport) -> AccumulationResult | None:
    """Extract and review one incident; it is stored with its batch by `_flush`."""
    try:
        return await accumulator.process(incident, dry_run=True, max_review_retries=max_retries)
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
                     strategy: str | None = None) -> int:
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
    read_lines(path)  # an unreadable file is one error line before anything opens
    stores = None if dry_run else build_stores(loaded)
    model = build_model(loaded)

    async def run() -> int:
        try:
            return await populate(build_accumulator(loaded, model, stores), stores, path, dry_run, max_retries)
        finally:
            await model.aclose()

    return asyncio.run(run())


def stats_command(loaded: LoadedConfig) -> int:
    from hummingbird_agent.bamboo.factory import build_stores

    return asyncio.run(stats(build_stores(loaded)))


def analyze_command(loaded: LoadedConfig, path: str, as_json: bool) -> int:
    """`bamboo analyze INCIDENT.json [--json]`: diagnose one incident and print the AnalysisResult."""
    from hummingbird_agent.bamboo import service
    from hummingbird_agent.bamboo.factory import build_stores
    from hummingbird_agent.models import build_model

    try:
        incident = service.read_incident(path)
        stores = build_stores(loaded)
        model = build_model(loaded)
        navigator = service.build_navigator(loaded, model, stores)
    except AgentError as exc:
        return service.report_error(exc)

    async def run() -> int:
        try:
            result = await service.analyze_incident(navigator, stores, incident)
        except AgentError as exc:
            return service.report_error(exc)
        finally:
            await model.aclose()
        service.print_result(result, as_json)
        return 0

    return asyncio.run(run())


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
