"""The baselines of bench/triage.py on the attack worlds: `name_only` ("it failed on main too") and
`masked_log_equality` (the same job lists and failure reasons, and the job scripts' output equal line for line once
numbers and ids are masked), each given the world's checks to judge, with false_green per family."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.attack_model import Attack
from bench.triage_figures import masked_lines, ratio
from hummingbird_agent.triage.evidence import INFRASTRUCTURE_REASONS
from hummingbird_agent.triage.model import NOT_YOURS, Verdict
from tests.triage.world import Attempt

_NOT_YOURS = {v.value for v in NOT_YOURS}
Strategy = Callable[[Attempt, Attack, Attempt | None], str]


def _latest(attempts: tuple[Attempt, ...], name: str) -> Attempt | None:
    return next((a for a in reversed(attempts) if a.name == name), None)


def _metadata(mine: Attempt, attack: Attack) -> str | None:
    """What job lists and failure reasons alone decide: flaky, infrastructure, or a job that did not fail."""
    if mine.status != "failed":
        return Verdict.UNCLASSIFIED.value
    if (mine.failure_reason or "") in INFRASTRUCTURE_REASONS:
        return Verdict.INFRASTRUCTURE.value
    passes = [a for pipe in attack.same_sha for a in pipe.attempts if a.name == mine.name and a.status == "success"]
    return Verdict.FLAKY.value if passes else None


def name_only(mine: Attempt, attack: Attack, base: Attempt | None) -> str:
    said = _metadata(mine, attack)
    if said is not None or base is None:
        return said or Verdict.UNCLASSIFIED.value
    return Verdict.PRE_EXISTING.value if base.status == "failed" else Verdict.NEW.value


def masked_log_equality(mine: Attempt, attack: Attack, base: Attempt | None) -> str:
    said = name_only(mine, attack, base)
    if said != Verdict.PRE_EXISTING.value or base is None:
        return said
    same = masked_lines(str(mine.trace or "")) == masked_lines(str(base.trace or ""))
    return Verdict.PRE_EXISTING.value if same else Verdict.NEW.value


def said_by(strategy: Strategy, attack: Attack) -> dict[str, str]:
    """The strategy's verdict on every check the world's truth names (an external status: unclassified)."""
    out = {}
    for name in attack.truth:
        mine = _latest((*attack.mr, *attack.retry), name)
        out[name] = Verdict.UNCLASSIFIED.value if mine is None else strategy(mine, attack, _latest(attack.base, name))
    return out


def baseline_figures(attacks: list[Attack]) -> dict[str, Any]:
    """Per strategy: false_green (all its verdicts not-yours while a truth is not) and accuracy per check."""
    out: dict[str, Any] = {}
    for label, strategy in (("name_only", name_only), ("masked_log_equality", masked_log_equality)):
        said = [(attack, said_by(strategy, attack)) for attack in attacks]
        green = sum(all(v in _NOT_YOURS for v in verdicts.values()) and
                    any(t not in _NOT_YOURS for t in attack.truth.values()) for attack, verdicts in said)
        pairs = [(attack.truth[name], v) for attack, verdicts in said for name, v in verdicts.items()]
        out[label] = {"false_green": green, "accuracy": ratio(sum(t == v for t, v in pairs), len(pairs))}
    return out
