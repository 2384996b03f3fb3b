"""The commit's statuses in the ledger: each is a job the triage listed, a trigger job (bridge) whose downstream
pipeline's jobs are items of their own, or an external check. Trigger jobs are read only when some status is not a
listed job: every bridge is a status of its commit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hummingbird_agent.triage.evidence import TRIGGER, Runs, Sources, by_name
from hummingbird_agent.triage.ledger import RUNNING, Ledger
from hummingbird_agent.triage.model import CheckResult, Verdict
from hummingbird_agent.triage.reader import FINISHED, TriageReader, Unread


def _ids(sources: Sources) -> set[int]:
    jobs = [j for attempts in sources.analysed.values() for j in attempts]
    jobs += [j for _, by in sources.same_sha.pipelines for attempts in by.values() for j in attempts]
    return {int(j.get("id") or 0) for j in jobs}


async def account_statuses(reader: TriageReader, sources: Sources, ledger: Ledger,
                           statuses: Sequence[Mapping[str, Any]], ignore: frozenset[str], project_id: int) -> None:
    """Statuses that are listed jobs are already items; the others are bridges (read from the commit's pipelines,
    their same-project downstream pipelines added) or external checks."""
    known = _ids(sources)
    if sources.unlisted_problem or sources.problems:
        # Jobs the triage could not list look like external statuses: each is a check not examined.
        ledger.add_statuses(statuses, known, ignore, sources.unlisted_problem or sources.problems[0])
        return
    if any(int(s.get("id") or 0) not in known and str(s.get("name")) not in ignore for s in statuses):
        listed = {int(p.get("id") or 0) for p, _ in sources.same_sha.pipelines} | {int(sources.pipeline.get("id") or 0)}
        for pipeline in [sources.pipeline, *(p for p, _ in sources.same_sha.pipelines)]:
            if pipeline:
                await _bridges(reader, pipeline, sources, ledger, listed, known, project_id)
        known |= _ids(sources)
    ledger.add_statuses(statuses, known, ignore)


async def read_pipeline(reader: TriageReader, pipeline: Mapping[str, Any], sources: Sources,
                        ledger: Ledger | None, label: str = "") -> None:
    """Another pipeline of the commit: its jobs are evidence (a re-run that passed), and items of the ledger when
    it is current (`ledger`); a list not read whole is a gap of the ledger."""
    listed = await reader.jobs(pipeline, fresh=pipeline.get("status") not in FINISHED)
    sources.same_sha.add(pipeline, listed.jobs)
    if ledger is None:
        return
    if listed.problem:
        sources.problems.append(listed.problem)
    ledger.add_pipeline(pipeline, by_name(listed.jobs), label or f"pipeline {pipeline.get('id')}")


async def _bridges(reader: TriageReader, pipeline: Mapping[str, Any], sources: Sources, ledger: Ledger,
                   listed: set[int], known: set[int], project_id: int) -> None:
    found = await reader.bridges(pipeline)
    if isinstance(found, Unread):
        sources.problems.append(f"the trigger jobs of pipeline {pipeline.get('id')} could not be read: {found.reason}")
        return
    for bridge in found:
        known.add(int(bridge.get("id") or 0))
        downstream = bridge.get("downstream_pipeline") or {}
        if int(downstream.get("project_id") or -1) == project_id and downstream.get("id"):
            if int(downstream["id"]) not in listed:
                listed.add(int(downstream["id"]))
                child = {**downstream, TRIGGER: str(bridge.get("name"))}
                await read_pipeline(reader, child, sources, ledger, f"child pipeline of {bridge.get('name')}")
        else:
            _bridge_item(bridge, ledger)


def _bridge_item(bridge: Mapping[str, Any], ledger: Ledger) -> None:
    """A trigger job whose downstream pipeline the triage cannot read (another project's, or none was created)."""
    state, name = str(bridge.get("status") or ""), str(bridge.get("name"))
    if state == "success":
        ledger.passed += 1
    elif state in RUNNING:
        ledger.running.append(f"trigger job {name}")
    elif bridge.get("allow_failure") and state in ("failed", "manual"):
        ledger.optional += 1
    else:
        where = "in another project, which the triage does not read" if bridge.get("downstream_pipeline") else (
            "never created")
        ledger.unproven.append(CheckResult(name, Verdict.UNCLASSIFIED, f"a trigger job ({state}): its downstream "
                                           f"pipeline is {where}", url=str(bridge.get("web_url") or "")))


async def read_children(reader: TriageReader, runs: Runs, children: Runs, project_id: int) -> None:
    """The jobs of the child pipelines the pipelines of `runs` (the merge base's) started, added to `children`, each
    marked with its trigger job: what a failed job of the MR's child pipeline of that trigger job is compared with."""
    for pipeline, _ in list(runs.pipelines):
        found = await reader.bridges(pipeline)
        if isinstance(found, Unread):
            reader.gaps.append(f"the trigger jobs of pipeline {pipeline.get('id')} could not be read: {found.reason}")
            continue
        for bridge in found:
            downstream = bridge.get("downstream_pipeline") or {}
            if int(downstream.get("project_id") or -1) == project_id and downstream.get("id"):
                children.add({**downstream, TRIGGER: str(bridge.get("name"))}, (await reader.jobs(downstream)).jobs)
