"""`bamboo populate`: learn incidents from a JSONL file in batches, each stored as one write."""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TextIO

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.learn.accumulator import AccumulationResult, KnowledgeAccumulator
from hummingbird_agent.bamboo.learn.causes import ExistingCause
from hummingbird_agent.bamboo.learn.incidents import iter_incidents, read_lines
from hummingbird_agent.bamboo.stores.base import Stores, opened
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.errors import AgentError
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


@contextlib.contextmanager
def _startup_objects_frozen() -> Iterator[None]:
    """Leave the objects alive before the run (imported modules, the clients) out of the collector's full
    passes while it runs: the embedded stores allocate enough to trigger them every few incidents, and
    each pass walked some 190k objects that cannot become garbage (about 0.1 s in 200 incidents)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def populate(accumulator: KnowledgeAccumulator, stores: Stores | None, path: str, dry_run: bool,
                   max_retries: int | None, out: TextIO | None = None, progress: Progress | TextIO | None = None,
                   show: bool = False) -> int:
    """Learn every incident of a JSONL file; a bad line or a failed incident is reported and skipped. With
    `show`, what each incident adds is printed to `out`."""
    out = out or sys.stdout
    lines = read_lines(path)
    report = PopulateReport(total=len(lines))
    bar = progress if isinstance(progress, Progress) else Progress(report.total, progress or sys.stderr, "populate")
    show_on = partial(_show, bar, out, dry_run) if show else None
    try:
        async with opened(stores) if stores is not None else contextlib.nullcontext():
            with _startup_objects_frozen():
                for start in range(0, len(lines), budgets.BAMBOO_POPULATE_BATCH):
                    batch = list(iter_incidents(lines[start : start + budgets.BAMBOO_POPULATE_BATCH]))
                    await _batch(accumulator, batch, dry_run, max_retries, report, bar, show_on)
    finally:
        bar.finish()
    print(report.render(path, dry_run), file=out)
    return 1 if report.failures else 0


async def _batch(accumulator: KnowledgeAccumulator, batch: Sequence[tuple[int, IncidentInput | str]], dry_run: bool,
                 max_retries: int | None, report: PopulateReport, bar: Progress,
                 show: Callable[[int, AccumulationResult], None] | None) -> None:
    """Process a batch, then store it as one write. Nothing is written before the batch is stored, so the
    closest existing causes of all its incidents are read together, before the first."""
    existing = iter(await accumulator.existing_causes([item for _, item in batch if not isinstance(item, str)]))
    pending: list[tuple[int, AccumulationResult]] = []
    for number, item in batch:
        failed_before = len(report.failures)
        if isinstance(item, str):
            report.failures.append((number, item))
        elif (result := await _one(accumulator, item, number, max_retries, report, next(existing))) is not None:
            pending.append((number, result))
            if show is not None:
                show(number, result)
        bar.advance(failed=len(report.failures) > failed_before)
    await _flush(accumulator, pending, dry_run, report)


def _show(bar: Progress, out: TextIO, dry_run: bool, number: int, result: AccumulationResult) -> None:
    bar.above(partial(print, render_knowledge(number, result, dry_run), file=out, flush=True))


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
