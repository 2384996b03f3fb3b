"""The attack worlds of bench/triage.py as data: what each pipeline of one MR ran (the analysed one, the merge base's,
older target-branch ones, other pipelines of the commit), its external statuses and diff, a retry after the first
verdict, and the true verdict of each check; and how such a world is seeded in the fake GitLab."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.triage_world import volatile_changed
from tests.triage.world import Attempt, CiWorld, sha_of

Row = dict[str, Any]
# Where a planted failure goes in a log, as a share of its lines (`late`: the log's last lines before the runner's).
POSITIONS = {"early": 0.1, "middle": 0.5, "late": 1.0}


@dataclass(frozen=True)
class Pipe:
    """A pipeline besides the analysed one: `commit` labels its commit ("" is the MR's own commit)."""

    attempts: tuple[Attempt, ...]
    commit: str = ""
    ref: str = "main"
    source: str = "push"


@dataclass(frozen=True)
class Child:
    """A trigger job (bridge) `name` and the jobs of the child pipeline it started, on the MR and on the base."""

    name: str
    mr: tuple[Attempt, ...]
    base: tuple[Attempt, ...]


@dataclass(frozen=True)
class Attack:
    """One MR of an attack family. `truth` maps every check that must be listed (job or status name) to its true
    verdict; a check that never ran or was never examined is `unclassified` (it may not be proven not-yours)."""

    family: str
    kind: str
    repo: str
    """The fake GitLab project: one per attack, so no other world's pipelines are its evidence."""
    truth: Mapping[str, str]
    mr: tuple[Attempt, ...]
    base: tuple[Attempt, ...] = ()
    history: tuple[Pipe, ...] = ()
    """Older target-branch pipelines of other commits, oldest first (seeded before the base's)."""
    same_sha: tuple[Pipe, ...] = ()
    statuses: tuple[Mapping[str, Any], ...] = ()
    """External commit statuses of the MR's commit (name, status, target_url, ...)."""
    diffs: tuple[Mapping[str, Any], ...] | None = None
    retry: tuple[Attempt, ...] = ()
    """Attempts added to the analysed pipeline after a first triage; the second triage is the one graded."""
    children: tuple[Child, ...] = ()
    """Trigger jobs of the analysed and the base's pipelines and the child pipelines they started."""
    logs: tuple[str, ...] = field(default=())
    """Source log ids (for the report)."""


def seed(world: CiWorld, iid: int, attack: Attack) -> int:
    """The attack's pipelines in the fake GitLab, oldest first; the analysed pipeline's id."""
    base_sha, sha = sha_of(attack.repo, "base", iid), sha_of(attack.repo, "mr", iid)
    extra: dict[str, Any] = {} if attack.diffs is None else {"diffs": [dict(d) for d in attack.diffs]}
    world.mr(iid, base_sha=base_sha, sha=sha, **extra)
    for pipe in attack.history:
        world.pipeline(sha_of(attack.repo, pipe.commit, iid), pipe.attempts, ref=pipe.ref, source=pipe.source)
    if attack.base:
        base = world.pipeline(base_sha, attack.base)
        for child in attack.children:
            world.trigger(base, child.name, child.base)
    for pipe in attack.same_sha:
        world.pipeline(sha, pipe.attempts, ref=pipe.ref, source=pipe.source)
    pipeline = world.pipeline(sha, attack.mr, ref="feature", source="merge_request_event")
    for child in attack.children:
        world.trigger(pipeline, child.name, child.mr)
    # `{web}` in a status's fields: this GitLab's address (another project's job lives there too).
    web = world.gl.projects[world.project_id]["web_url"].removesuffix("/" + world.path)
    for status in attack.statuses:
        fields = {k: v.replace("{web}", web) if isinstance(v, str) else v for k, v in status.items()}
        world.gl.add_commit_status(world.project_id, sha, ref="feature", **fields)
    return pipeline


def retried(world: CiWorld, attack: Attack, pipeline: int) -> bool:
    """After a first triage: the attack's retried attempts join the analysed pipeline (False when it has none)."""
    for attempt in attack.retry:
        world.retry(pipeline, attempt)
    return bool(attack.retry)


class LogPool:
    """The development logs the attack worlds are built from, dealt round-robin over repositories."""

    def __init__(self, rows: list[Row], logs: Mapping[str, str]) -> None:
        by_repo: dict[str, list[Row]] = {}
        for row in sorted(rows, key=lambda r: (r["repository"], str(r["log_id"]))):
            by_repo.setdefault(row["repository"], []).append(row)
        self.repos, self.by_repo, self.logs = sorted(by_repo), by_repo, logs

    def row(self, k: int) -> Row:
        """The k-th log: repository k mod R, then that repository's logs in turn."""
        rows = self.by_repo[self.repos[k % len(self.repos)]]
        return rows[(k // len(self.repos)) % len(rows)]

    def log(self, k: int) -> str:
        return self.logs[self.row(k)["log_id"]]

    def other_run(self, k: int) -> str:
        """The same log as another run of the same failure prints it (timestamps, durations and ids changed)."""
        return volatile_changed(self.log(k))

    def project(self, family: str, kind: str, k: int) -> str:
        repo = self.row(k)["repository"].replace("@", "/")
        slug = "".join(c if c.isalnum() else "-" for c in kind).strip("-")
        return f"attacks/{family}-{slug}-{k}/{repo.replace('/', '-')}"


def planted(log: str, lines: list[str], where: str) -> str:
    """`log` with `lines` inserted at a share of its length (POSITIONS); the rest of the log unchanged."""
    body = log.rstrip("\n").split("\n")
    at = round(len(body) * POSITIONS[where])
    return "\n".join([*body[:at], *lines, *body[at:]]) + "\n"


def failed(name: str, trace: str, **kw: Any) -> Attempt:
    return Attempt(name, "failed", trace=trace, **kw)


def passing(name: str, trace: str = "ok\n", **kw: Any) -> Attempt:
    return Attempt(name, "success", trace=trace, **kw)
