"""Triages of many MRs in one fake GitLab, each cold (its own empty cache), every job log a whole runner log: what
the triage benches share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar, cast

from bench.runner_sections import RunnerWorld
from hummingbird_agent.data_sources import gitlab as gitlab_source
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.triage.model import KnownCauses, Triage, TriageLimits
from hummingbird_agent.triage.reader import TriageCache, TriageReader
from hummingbird_agent.triage.run import TriageRequest, triage
from tests.servers import GitLabServer
from tests.triage.conftest import NOW
from tests.triage.world import CiWorld


class HasRepo(Protocol):
    @property
    def repo(self) -> str: ...


M = TypeVar("M", bound=HasRepo)


async def triage_all(mrs: Sequence[M], seed: Callable[[CiWorld, int, M], int], limits: TriageLimits | None = None,
                     known: KnownCauses | None = None,
                     then: Callable[[CiWorld, M, int], bool] | None = None) -> list[tuple[M, Triage]]:
    """Every MR seeded (one project per repository; `seed` returns the analysed pipeline), then triaged. `then`, after
    an MR's triage, may change its world (True when it did): the MR is then triaged again with the same cache, as
    the service's next pipeline event would be, and that second triage is the one returned."""
    out: list[tuple[M, Triage]] = []
    gl = GitLabServer()
    with gl:
        tools = ReadTools()
        gitlab_source.register(cast(ToolRegistry, tools), gl.url, gl.read_token)
        worlds: dict[str, CiWorld] = {}
        seeded: list[tuple[M, int, int]] = []
        iids: Counter[str] = Counter()
        for mr in mrs:
            world = worlds.get(mr.repo) or worlds.setdefault(mr.repo, RunnerWorld(gl, len(worlds) + 1, mr.repo))
            iids[mr.repo] += 1
            seeded.append((mr, iids[mr.repo], seed(world, iids[mr.repo], mr)))
        for mr, iid, pipeline in seeded:
            cache = TriageCache()
            request = TriageRequest(mr.repo, iid, NOW, pipeline_id=pipeline)
            found = await triage(TriageReader(tools, mr.repo, cache, limits), request, known)
            if then is not None and then(worlds[mr.repo], mr, pipeline):
                found = await triage(TriageReader(tools, mr.repo, cache, limits), request, known)
            out.append((mr, found))
        if gl.errors:
            raise SystemExit(f"fake GitLab hit a bug: {gl.errors}")
    return out
