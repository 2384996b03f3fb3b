"""The figures of bench/triage.py: per-verdict precision and recall, the risk figures (false_green, the log-based
not-yours precision), folds, and the baselines given the same signals."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from typing import Any

from bench.triage_world import MR, Scenario
from hummingbird_agent.triage.evidence import INFRASTRUCTURE_REASONS
from hummingbird_agent.triage.model import NOT_YOURS, Triage, Verdict

FOLDS = 4
# (scenario, verdict said, reason with the fingerprint's first lines, its MR's triage)
Graded = tuple[Scenario, str, str, Triage]
# What changes between two runs of one failure: numbers with their unit word (`1.2 seconds`), hex ids, digits.
_MASK = re.compile(r"\b\d+(?:\.\d+)?\s?[A-Za-z]*\b|\b[0-9a-f]{7,40}\b|\d+")


def ratio(hits: int, n: int) -> float | None:
    return round(hits / n, 3) if n else None


def figures(rows: list[Graded]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows), "accuracy": ratio(sum(v == s.truth for s, v, _, _ in rows), len(rows))}
    for verdict in Verdict:
        said = [s.truth == verdict for s, v, _, _ in rows if v == verdict]
        true = [v == verdict for s, v, _, _ in rows if s.truth == verdict]
        out[verdict.value] = {"precision": ratio(sum(said), len(said)), "recall": ratio(sum(true), len(true)),
                              "said": len(said), "true": len(true)}
    not_yours = [s.truth == v for s, v, _, _ in rows if v in NOT_YOURS]
    out["not_yours_precision"] = ratio(sum(not_yours), len(not_yours))
    out["not_yours_verdicts"] = len(not_yours)
    # The verdict that needed a log: pre-existing (flaky and infrastructure come from job lists and failure reasons).
    out["log_not_yours_precision"] = out[Verdict.PRE_EXISTING.value]["precision"]
    out["log_not_yours_recall"] = out[Verdict.PRE_EXISTING.value]["recall"]
    out["log_not_yours_n"] = {"said": out[Verdict.PRE_EXISTING.value]["said"],
                              "true": out[Verdict.PRE_EXISTING.value]["true"]}
    return out


def by_folds(rows: list[Graded], metrics: tuple[str, ...] = ("accuracy", "not_yours_precision",
                                                               "log_not_yours_precision", "log_not_yours_recall"),
             ) -> dict[str, Any]:
    """Repositories dealt round-robin (sorted by name, per data set) into FOLDS folds: mean and worst of each."""
    repos = sorted({(s.dataset, s.repo) for s, *_ in rows})
    fold = {repo: n % FOLDS for n, (_, repo) in enumerate(repos)}
    parts = [figures([r for r in rows if fold[r[0].repo] == f]) for f in range(FOLDS)]
    out: dict[str, Any] = {}
    for metric in metrics:
        values = [p[metric] for p in parts if p[metric] is not None]
        out[metric] = {"mean": round(statistics.mean(values), 3) if values else None,
                       "worst": min(values) if values else None, "per_fold": [p[metric] for p in parts]}
    return out


def false_green(results: list[tuple[MR, Triage]]) -> dict[str, Any]:
    """MRs whose commit status would be `success` while one of their failures is truly the MR's (new, known) or
    unclassified: a merge rule would let them in."""
    bad = [mr for mr, found in results if found.status == "success"
           and any(s.truth not in {v.value for v in NOT_YOURS} for s in mr.scenarios)]
    green = sum(found.status == "success" for _, found in results)
    # With `triage.model_when: news` (the default) a green MR gets the status note and no model call.
    return {"false_green": len(bad), "mrs": len(results), "success_statuses": green,
            "no_model_call_share": round(green / len(results), 3) if results else None,
            "false_green_kinds": dict(Counter(s.kind for mr in bad for s in mr.scenarios))}


def by_pair(rows: list[Graded]) -> dict[str, Any]:
    """Pre-existing recall where the other run is a copy of the same log (volatile parts changed: any masking
    finds it) apart from where it is another build of the same failure."""
    out: dict[str, Any] = {}
    for name, copy in (("copy_of_the_log", True), ("two_builds", False)):
        true = [v == s.truth for s, v, _, _ in rows if s.truth == Verdict.PRE_EXISTING.value and s.copy == copy]
        out[name] = {"recall": ratio(sum(true), len(true)), "n": len(true)}
    return out


def metadata_only(s: Scenario) -> str:
    """The simplest strategy that games a not-yours precision: job lists and failure reasons only, never
    pre-existing (the signals flaky and infrastructure need, and nothing else)."""
    if s.retry_passes or s.same_sha_passes:
        return Verdict.FLAKY.value
    if (s.failure_reason or "") in INFRASTRUCTURE_REASONS:
        return Verdict.INFRASTRUCTURE.value
    on_base = s.base is not None and s.base_job == s.job
    return Verdict.NEW.value if on_base and s.trace is not None else Verdict.UNCLASSIFIED.value


def _decided(s: Scenario, said: str) -> bool:
    """Whether the metadata alone decides (flaky, infrastructure, or an erased log nothing can be read from)."""
    return said in (Verdict.FLAKY.value, Verdict.INFRASTRUCTURE.value) or s.trace is None


def name_only(s: Scenario) -> str:
    """The baseline "it failed on main too": the same job lists and failure reasons as the triage, no logs. A job
    whose last run on the merge base or a recent target-branch pipeline failed is called pre-existing."""
    said = metadata_only(s)
    if _decided(s, said):
        return said
    on_base = s.base is not None and s.base_job == s.job
    if (on_base and s.base is not None and not s.base.passed) or s.target is not None:
        return Verdict.PRE_EXISTING.value
    return said


def masked_lines(log: str) -> list[str]:
    return [_MASK.sub("N", line.strip()) for line in log.splitlines() if line.strip()]


def log_equal(s: Scenario) -> str:
    """The baseline given the logs: metadata as above, then pre-existing when the MR's log and the other failing
    run's log are equal line for line once digits and hashes are masked; else new when the job ran on the base."""
    said = metadata_only(s)
    if _decided(s, said) or s.trace is None:
        return said
    others = [run for run in (s.base if s.base_job == s.job else None, s.target) if run is not None and not run.passed]
    if any(masked_lines(run.trace) == masked_lines(s.trace) for run in others):
        return Verdict.PRE_EXISTING.value
    return said


def baseline(rows: list[Graded], results: list[tuple[MR, Triage]], strategy: Any) -> dict[str, Any]:
    """A baseline's figures on the same scenarios, with its false greens (success when it says not-yours for all)."""
    said = [(s, strategy(s), "", found) for s, _, _, found in rows]
    figs = figures(said)
    verdict = {id(s): v for s, v, _, _ in said}
    green = [mr for mr, _ in results if all(verdict[id(s)] in {v.value for v in NOT_YOURS} for s in mr.scenarios)
             and any(s.truth not in {v.value for v in NOT_YOURS} for s in mr.scenarios)]
    keys = ("not_yours_precision", "not_yours_verdicts", "log_not_yours_precision", "log_not_yours_recall",
            "log_not_yours_n")
    return {**{k: figs[k] for k in keys}, "false_green": len(green), "folds": by_folds(said), "by_pair": by_pair(said)}


def cost(results: list[tuple[MR, Triage]]) -> dict[str, Any]:
    per_calls = [found.calls / max(len(mr.scenarios), 1) for mr, found in results]
    per_bytes = [found.log_bytes / max(len(mr.scenarios), 1) for mr, found in results]
    failures = sum(len(mr.scenarios) for mr, _ in results)
    return {"calls_per_failure_mean": round(sum(f.calls for _, f in results) / failures, 2),
            "calls_per_failure_max": round(max(per_calls), 2),
            "log_bytes_per_failure_mean": round(sum(f.log_bytes for _, f in results) / failures),
            "log_bytes_per_failure_max": round(max(per_bytes))}


def verdicts(results: list[tuple[Any, Triage]]) -> dict[str, Any]:
    """Every check's verdict (and each of its cases') by repository, MR and job, and apart their history lines: what
    `--dump` writes, so that two versions of the triage can be compared job by job."""
    said: dict[str, str] = {}
    history: dict[str, str] = {}
    seen: Counter[str] = Counter()
    for mr, found in results:
        seen[mr.repo] += 1
        for check in found.checks:
            key = f"{mr.repo} !{seen[mr.repo]} {check.name}"
            said[key], history[key] = check.verdict.value, check.history
            for case in check.cases:
                said[f"{key} {case.title}"], history[f"{key} {case.title}"] = case.verdict.value, case.history
    return {"verdicts": said, "history": history, "calls": [found.calls for _, found in results]}


def kind_groups(rows: list[Graded]) -> dict[str, list[Graded]]:
    out: dict[str, list[Graded]] = {}
    for row in rows:
        kind = row[0].kind.split(" failure_reason")[0] if row[0].kind.startswith("failure_reason") else row[0].kind
        out.setdefault("failure_reason" if kind.startswith("failure_reason") else kind, []).append(row)
    return out
