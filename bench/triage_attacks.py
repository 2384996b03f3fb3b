"""The attack families of bench/triage.py: their worlds triaged in the fake GitLab and graded per family, with
false_green (MRs whose status would be `success` while a check is truly the MR's or never examined) and n."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.attack_baselines import baseline_figures
from bench.attack_model import Attack, LogPool, retried, seed
from bench.attacks_history import fixed_then_broken, flaky_claims, platform_reasons, retry_after_verdict
from bench.attacks_ledger import child_pipelines, external, not_run, shards
from bench.attacks_logs import new_anywhere, report_not_log, short_logs
from bench.triage_figures import ratio
from bench.triage_run import triage_all
from hummingbird_agent.triage.model import NOT_YOURS, CheckResult, Triage, Verdict

FAMILIES: dict[str, tuple[str, Callable[[LogPool], list[Attack]]]] = {
    "a": ("a new failure anywhere in the log, each runner's format", new_anywhere),
    "b": ("the test report's cases all pre-existing, the log prints a new failure", report_not_log),
    "c": ("parallel shards sharing one report suite", shards),
    "d": ("tests skipped after a pre-existing failure, or canceled", not_run),
    "e": ("failed external statuses that look like jobs", external),
    "f": ("a failed job of a child pipeline behind a trigger job", child_pipelines),
    "g": ("a job retried after the verdict fails anew", retry_after_verdict),
    "h": ("fixed on the base, broken again by the MR", fixed_then_broken),
    "i": ("platform failure reasons the MR can cause", platform_reasons),
    "j": ("flaky claims from other failures or unrelated jobs", flaky_claims),
    "k": ("short logs of real tools, identical or moved but for the runner's sections, or one problem more",
          short_logs),
}
_NOT_YOURS = {v.value for v in NOT_YOURS}


def build(pool: LogPool, families: list[str]) -> list[Attack]:
    return [attack for family in families for attack in FAMILIES[family][1](pool)]


async def run_attacks(attacks: list[Attack]) -> list[tuple[Attack, Triage]]:
    """Each attack in its own project, triaged cold (and once more after its retry, with the same cache)."""
    return await triage_all(attacks, lambda world, iid, attack: seed(world, iid, attack), then=retried)


def graded(attack: Attack, found: Triage) -> list[tuple[str, str, str]]:
    """(check, truth, said) for every check the truth names; `missing` when the triage did not list it. A trigger
    job's row may be its child pipeline's jobs (`unit (child pipeline of NAME)`): the most decisive of them."""
    order = list(Verdict)
    out = []
    for name, truth in attack.truth.items():
        rows = [c.verdict for c in _rows(found, name)]
        out.append((name, truth, min(rows, key=order.index).value if rows else "missing"))
    return out


def _rows(found: Triage, name: str) -> list[CheckResult]:
    return [c for c in found.checks if c.name == name or c.name.endswith(f" of {name})")]


def false_green(attack: Attack, found: Triage) -> bool:
    return found.status == "success" and any(t not in _NOT_YOURS for t in attack.truth.values())


def _family(results: list[tuple[Attack, Triage]]) -> dict[str, Any]:
    rows = [(a, row) for a, found in results for row in graded(a, found)]
    bad = [a for a, found in results if false_green(a, found)]
    out: dict[str, Any] = {
        "mrs": len(results), "false_green": len(bad), "false_green_share": ratio(len(bad), len(results)),
        "false_green_kinds": dict(Counter(a.kind for a in bad)), "checks": len(rows),
        "accuracy": ratio(sum(t == s for _, (_, t, s) in rows), len(rows)),
        "said": dict(Counter(s for _, (_, _, s) in rows)), "true": dict(Counter(t for _, (_, t, _) in rows))}
    kinds = sorted({a.kind for a, _ in results})
    out["by_kind"] = {k: f"{sum(t == s for a, (_, t, s) in rows if a.kind == k)}/"
                         f"{sum(a.kind == k for a, _ in rows)}" for k in kinds}
    pre = Verdict.PRE_EXISTING.value
    said_pre = [t == pre for _, (_, t, s) in rows if s == pre]
    true_pre = [s == pre for _, (_, t, s) in rows if t == pre]
    out["log_not_yours_precision"] = ratio(sum(said_pre), len(said_pre))
    out["pre_existing_recall"] = ratio(sum(true_pre), len(true_pre))
    out["pre_existing_n"] = {"said": len(said_pre), "true": len(true_pre)}
    out["baselines"] = baseline_figures([a for a, _ in results])
    return out


def not_yours_share(results: list[tuple[Any, Triage]]) -> dict[str, Any]:
    """The cost of caution: the share of all failed checks the triage called not-yours."""
    checks = [c for _, found in results for c in found.checks]
    said = sum(c.verdict in NOT_YOURS for c in checks)
    return {"share": ratio(said, len(checks)), "said": said, "failed_checks": len(checks)}


def attack_figures(results: list[tuple[Attack, Triage]], families: list[str]) -> dict[str, Any]:
    """Per family: false_green with n, accuracy per check, the log-based not-yours precision and recall."""
    for attack, found in results:
        for name, truth, said in graded(attack, found):
            if said != truth:
                reason = "; ".join(c.reason for c in _rows(found, name)) or "not listed"
                print(f"WRONG [{attack.family}: {attack.kind}] {attack.repo} {name}: truth {truth}, said {said} "
                      f"({reason}); status {found.status}", file=sys.stderr)
    out: dict[str, Any] = {f: {"what": FAMILIES[f][0], **_family([r for r in results if r[0].family == f])}
                           for f in families}
    bad = sum(false_green(a, found) for a, found in results)
    true_share = [t in _NOT_YOURS for a, found in results for _, t, _ in graded(a, found)]
    out["all"] = {"mrs": len(results), "false_green": bad, "not_yours": not_yours_share(results),
                  "true_not_yours_share": ratio(sum(true_share), len(true_share)),
                  "baselines": baseline_figures([a for a, _ in results])}
    return out


async def attacks_bench(pool: LogPool, families: list[str]) -> dict[str, Any]:
    """The families' worlds built from the pool's logs, triaged, graded."""
    results = await run_attacks(build(pool, families))
    return attack_figures(results, families)
