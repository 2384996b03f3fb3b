"""MR failures of bench/triage.py built from the development logs, each with its true verdict by construction.

LogChunks (labelled Travis logs, a `category` per repository: same category = same kind of failure; some builds
fail with an identical chunk) gives each repository its scenarios; CiDiff (pass/fail pairs of one build) gives
passing logs. A scenario is one failed job of an MR: what the MR's job logged, what the merge base or the target
branch ran, and the verdict that the construction makes true.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Row = dict[str, Any]
INFRA_REASONS = ("runner_system_failure", "stuck_or_timeout_failure", "scheduler_failure", "api_failure",
                 "data_integrity_failure", "unmet_prerequisites")
TIMEOUT_LINE = "ERROR: Job failed: execution took longer than 1h0m0s seconds"
GENERIC_TAIL = 'The command "./ci/run.sh" exited with 1.\n\nDone. Your build exited with 1.\n'
PASS_TAIL = 'The command "./ci/run.sh" exited with 0.\n\nDone. Your build exited with 0.\n'
# Learned incidents of one cause (past failures the knowledge base holds); the cause's later logs are tested.
LEARNED_PER_CAUSE = 2
_VOLATILE = re.compile(r"\d{4}-\d\d-\d\d|\d{1,2}:\d\d:\d\d(?:[.,]\d+)?|\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|min)"
                       r"\b|\b[0-9a-f]{7,40}\b|\b\d{5,}\b")
_HEX_ID = re.compile(r"[0-9a-f]{7,40}")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")


@dataclass(frozen=True)
class Run:
    """A job run on the base or the target branch: `trace` None with passed=False never happens."""

    trace: str
    passed: bool = False
    failure_reason: str | None = None


@dataclass(frozen=True)
class Scenario:
    """One failed MR job. `base` runs on the merge base's pipeline (`base_job` names the job there; another name
    means the job did not run on the base); `target` runs on a recent target-branch pipeline of another commit."""

    kind: str
    repo: str
    dataset: str
    job: str
    truth: str
    trace: str | None
    failure_reason: str | None = None
    retry_passes: bool = False
    same_sha_passes: bool = False
    base: Run | None = None
    base_job: str = ""
    target: Run | None = None
    logs: tuple[str, ...] = ()
    """Source log ids (for the report)."""
    copy: bool = False
    """The other run's log is this log with its volatile parts changed (not another build of the failure)."""


@dataclass
class MR:
    repo: str
    dataset: str
    scenarios: list[Scenario] = field(default_factory=list)


def volatile_changed(log: str) -> str:
    """The same failure in another run: timestamps, durations, hashes and long ids differ."""
    def shift(m: re.Match[str]) -> str:
        # Digits change everywhere; letters only in a hex id (a duration's unit word is not volatile).
        hexid = _HEX_ID.fullmatch(m.group(0)) is not None
        return "".join(str((int(c) + 3) % 10) if c.isdigit() else "abcdef"[("abcdef".index(c) + 2) % 6]
                       if hexid and c in "abcdef" else c for c in m.group(0))
    return _VOLATILE.sub(shift, log)


def _key(line: str) -> str:
    return re.sub(r"\W+", "", _ANSI.sub("", line))


def failure_start(row: Row, lines: list[str]) -> int | None:
    """Index of the first line of the log's labelled failure chunk, None when it is not found."""
    first = next((k for k in map(_key, row["chunk"].split("\n")) if len(k) > 8), "")
    return next((n for n, line in enumerate(lines) if first and first in _key(line)), None)


def before_failure(row: Row, log: str) -> str:
    """The first part of the log, before its labelled failure: a run that hangs or dies before saying why."""
    lines = log.split("\n")
    at = failure_start(row, lines)
    return "\n".join(lines[: max(3, min(len(lines) if at is None else at, len(lines) * 2 // 5))]) + "\n"


def passing(row: Row, log: str) -> str:
    """A passing run of the same job (LogChunks has no passing logs): the same output up to the labelled
    failure, then success."""
    lines = log.split("\n")
    at = failure_start(row, lines)
    return "\n".join(lines[: len(lines) * 2 // 3 if at is None else at]) + "\n" + PASS_TAIL


def learned_rows(rows: list[Row]) -> list[Row]:
    """Per repository with more than one category: the first LEARNED_PER_CAUSE logs of its most frequent
    category that has at least one more log to test (ties: the lowest category)."""
    out: list[Row] = []
    for repo_rows in _by_repo(rows).values():
        cats: dict[int, list[Row]] = defaultdict(list)
        for row in repo_rows:
            cats[row["category"]].append(row)
        fit = [c for c, rs in cats.items() if len(rs) > LEARNED_PER_CAUSE]
        if len(cats) > 1 and fit:
            best = max(fit, key=lambda c: (len(cats[c]), -c))
            out += cats[best][:LEARNED_PER_CAUSE]
    return out


def _by_repo(rows: list[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["repository"], str(r["log_id"]))):
        out[row["repository"]].append(row)
    return out


class RepoBuilder:
    """The scenarios of one LogChunks repository; `learned` holds the (category) causes the KB learned."""

    def __init__(self, repo: str, rows: list[Row], logs: dict[str, str], learned: set[int], held: set[str],
                 index: int) -> None:
        self.repo, self.logs, self.learned, self.index = repo, logs, learned, index
        self.pool = [r for r in rows if r["log_id"] not in held]
        self.used: dict[str, int] = defaultdict(int)

    def pick(self, *, learned: bool | None = None, exclude: tuple[str, ...] = ()) -> Row:
        """The least used log (of a learned or unlearned category when asked, if any)."""
        choice = [r for r in self.pool if r["log_id"] not in exclude]
        if learned is not None:
            choice = [r for r in choice if (r["category"] in self.learned) == learned] or choice
        row = min(choice, key=lambda r: (self.used[r["log_id"]], str(r["log_id"])))
        self.used[row["log_id"]] += 1
        return row

    def truth_unless_known(self, row: Row, truth: str) -> str:
        return "known" if row["category"] in self.learned else truth

    def scenario(self, kind: str, job: str, row: Row, truth: str, **kw: Any) -> Scenario:
        return Scenario(kind, self.repo, "logchunks", job, truth, self.logs[row["log_id"]],
                        logs=(str(row["log_id"]), *kw.pop("more", ())), **kw)

    def same_failure_pair(self, taken: set[str]) -> tuple[Row, str, str]:
        """(MR row, other log of the same failure, its id): another build with the identical chunk when there is
        one, else the same log with its volatile parts changed."""
        groups: dict[str, list[Row]] = defaultdict(list)
        for row in self.pool:
            groups[row["chunk"]].append(row)
        pairs = [g for g in groups.values() if len(g) > 1 and not {r["log_id"] for r in g[:2]} & taken]
        if pairs:
            a, b = pairs[0][:2]
            self.used[a["log_id"]] += 1
            return a, self.logs[b["log_id"]], str(b["log_id"])
        row = self.pick(exclude=tuple(taken))
        return row, volatile_changed(self.logs[row["log_id"]]), f"{row['log_id']}*"

    def mrs(self) -> Iterator[MR]:
        taken: set[str] = set()
        a, other, other_id = self.same_failure_pair(taken)
        taken |= {str(a["log_id"]), other_id}
        yield self._one(self.scenario("pre-existing on the base", "test", a, "pre-existing",
                                      base=Run(other), base_job="test", more=(other_id,),
                                      copy=other_id.endswith("*")))
        if (added := self._added_failure(taken)) is not None:
            yield added
        a, other, other_id = self.same_failure_pair(taken)
        # Last of the repository's MRs: its target-branch pipeline is then among the newest ones looked back at.
        on_target = self._one(self.scenario("pre-existing on the target branch", "integration", a, "pre-existing",
                                            target=Run(other), more=(other_id,), copy=other_id.endswith("*")))
        cats = {r["category"] for r in self.pool}
        if len(cats) > 1:
            mine = self.pick(learned=False)
            theirs = self.pick(exclude=tuple(r["log_id"] for r in self.pool if r["category"] == mine["category"]))
            yield self._one(self.scenario("fails differently on the base", "build", mine,
                                          self.truth_unless_known(mine, "new"), base=Run(self.logs[theirs["log_id"]]),
                                          base_job="build", more=(str(theirs["log_id"]),)))
        yield self._mixed()
        yield from self._traps()
        new = self.pick(learned=False)
        yield self._one(self.scenario("passes on the base, unlearned cause", "unit", new,
                                      self.truth_unless_known(new, "new"),
                                      base=Run(passing(new, self.logs[new["log_id"]]), passed=True), base_job="unit"))
        alone = self.pick(learned=False)
        yield self._one(self.scenario("did not run on the base", "new-job", alone,
                                      self.truth_unless_known(alone, "unclassified"),
                                      base=Run(PASS_TAIL, passed=True), base_job="unit-other"))
        if self.learned:
            known = self.pick(learned=True)
            yield self._one(self.scenario("learned cause, passes on the base", "compile", known,
                                          self.truth_unless_known(known, "new"),
                                          base=Run(passing(known, self.logs[known["log_id"]]), passed=True),
                                          base_job="compile"))
        yield on_target

    def _added_failure(self, taken: set[str]) -> MR | None:
        """A new failure among old ones: the base fails as the MR's log did before, and the MR's log adds the
        failure chunk of another category of the repository just before its end. The truth is new."""
        cats = {r["category"] for r in self.pool}
        if len(cats) < 2:
            return None
        old = self.pick(exclude=tuple(taken))
        extra = self.pick(exclude=tuple(r["log_id"] for r in self.pool if r["category"] == old["category"]))
        lines = self.logs[old["log_id"]].rstrip("\n").split("\n")
        at = max(0, len(lines) - 3)
        mine = "\n".join([*lines[:at], *extra["chunk"].split("\n"), *lines[at:]]) + "\n"
        return self._one(Scenario("a new failure among the base's", self.repo, "logchunks", "suite",
                                  self.truth_unless_known(extra, "new"), mine,
                                  base=Run(volatile_changed(self.logs[old["log_id"]])), base_job="suite",
                                  logs=(str(old["log_id"]), str(extra["log_id"]))))

    def _mixed(self) -> MR:
        """Flaky, platform-failed and log-less jobs of one MR (an erased log is not read, so unclassified); the
        platform failure failed so on the base too (a runner failure the base did not have could be the MR's)."""
        flaky, infra, erased = self.pick(), self.pick(), self.pick()
        retry = self.index % 2 == 0
        reason = INFRA_REASONS[self.index % len(INFRA_REASONS)]
        return MR(self.repo, "logchunks", [
            self.scenario("passing retry" if retry else "passes on the same commit", "e2e", flaky, "flaky",
                          retry_passes=retry, same_sha_passes=not retry),
            self.scenario(f"failure_reason {reason}", "package", infra, "infrastructure", failure_reason=reason,
                          base=Run(volatile_changed(self.logs[infra["log_id"]]), failure_reason=reason),
                          base_job="package"),
            Scenario("erased log", self.repo, "logchunks", "docs", "unclassified", None,
                     logs=(str(erased["log_id"]),)),
        ])

    def _traps(self) -> Iterator[MR]:
        """A hang without context and a script that says only `exited with 1`, on the MR and on the base, from
        two builds of different failures: nothing in either log tells whether they are the same."""
        traps = (("timeout without context", "deploy-check", TIMEOUT_LINE + "\n", "job_execution_timeout"),
                 ("generic failure lines", "check", GENERIC_TAIL, None))
        for kind, job, tail, reason in traps:
            mine = self.pick()
            theirs = self.pick(exclude=(mine["log_id"],))
            base = Run(before_failure(theirs, self.logs[theirs["log_id"]]) + tail, failure_reason=reason)
            yield self._one(Scenario(kind, self.repo, "logchunks", job, "unclassified",
                                     before_failure(mine, self.logs[mine["log_id"]]) + tail, failure_reason=reason,
                                     base=base, base_job=job, logs=(str(mine["log_id"]), str(theirs["log_id"]))))

    def _one(self, scenario: Scenario) -> MR:
        return MR(self.repo, "logchunks", [scenario])


def logchunks_mrs(rows: list[Row], logs: dict[str, str], held: list[Row]) -> list[MR]:
    learned: dict[str, set[int]] = defaultdict(set)
    for row in held:
        learned[row["repository"]].add(row["category"])
    held_ids = {r["log_id"] for r in held}
    out: list[MR] = []
    for index, (repo, repo_rows) in enumerate(_by_repo(rows).items()):
        out += RepoBuilder(repo, repo_rows, logs, learned[repo], held_ids, index).mrs()
    return out


def cidiff_mrs(root: Path) -> list[MR]:
    """Per CiDiff build: the MR fails where the base passed (new), and the same failure on the base."""
    out: list[MR] = []
    for build in sorted(p for p in root.iterdir() if (p / "fail.log").is_file()):
        fail, ok = (_read(build / n) for n in ("fail.log", "pass.log"))
        repo = f"cidiff/{build.name}"
        out.append(MR(repo, "cidiff", [Scenario("passes on the base", repo, "cidiff", "build", "new", fail,
                                                base=Run(ok, passed=True), base_job="build", logs=(build.name,))]))
        out.append(MR(repo, "cidiff", [Scenario("pre-existing on the base", repo, "cidiff", "verify", "pre-existing",
                                                fail, base=Run(volatile_changed(fail)), base_job="verify",
                                                logs=(build.name, build.name + "*"), copy=True)]))
    return out


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace").replace("\r\n", "\n")
