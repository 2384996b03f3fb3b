"""The knowledge-base engines: learn an MR's analysed failure (bamboo-accumulate) or diagnose its failure
from what was learned (bamboo-diagnose). No sandbox and no session: one short note per run."""

from __future__ import annotations

import contextlib
import logging

from hummingbird_agent.bamboo.analysis import NOTHING_SIMILAR, AnalysisResult
from hummingbird_agent.bamboo.diagnose.citations import incident_link, learned_incident_id
from hummingbird_agent.bamboo.diagnose.navigator import ReasoningNavigator
from hummingbird_agent.bamboo.incident_graph import NodeType
from hummingbird_agent.bamboo.learn.accumulator import AccumulationResult, KnowledgeAccumulator
from hummingbird_agent.bamboo.stores.scoped import Scope
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.errors import AgentError
from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.gitlab.quiet import quiet_markdown as quiet
from hummingbird_agent.runner.agent_threads import AnalysisNote, last_analysis
from hummingbird_agent.runner.executor import Publish, SaveSession
from hummingbird_agent.runner.fix import Fix, fix_section, read_fix
from hummingbird_agent.runner.human_input import Thread, ThreadQuestions
from hummingbird_agent.runner.mr_incident import Gathered, gather_failure, trusted_discussion
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.sessions.base import StoredSession

log = logging.getLogger(__name__)
NOTHING_TO_LEARN = ("Nothing to learn yet: this merge request has no `analyze-failures` note. Run "
                    "`/hummingbird analyze-failures` on the failing pipeline first.")


def learn_sources(order: WorkOrder, analysis: AnalysisNote, gathered: Gathered, outcome: str) -> str:
    """The incident's explanation, most reliable first (the text is clipped at the end): the member's own
    words, the outcome and fix as GitLab recorded them, the analysis, the thread."""
    parts = [f"Merge request !{order.mr_iid}: {gathered.title}".rstrip(": ")]
    if order.trigger == "command" and order.message:
        parts.append(f"## Explanation by the member who asked to learn it\n{order.message}")
    if outcome:
        parts.append(outcome)
    parts.append(f"## The agent's analysis of the failure\n{analysis.text}")
    if gathered.discussion:
        parts.append(f"## Merge request discussion (members only)\n{gathered.discussion}")
    return "\n\n".join(parts)


def learned_note(result: AccumulationResult, gitlab_url: str, gaps: list[str], fix: Fix | None = None) -> str:
    # Names, explanations and gaps are the model's words or a source's: quieted, only the service's own text acts.
    causes = [quiet(n.name) for n in result.knowledge.graph.of_type(NodeType.CAUSE)]
    fixes = [quiet(n.name) for n in result.knowledge.graph.of_type(NodeType.RESOLUTION)]
    lines = [f"**Learned** this failure as incident {incident_link(result.knowledge.incident_id, gitlab_url)}.",
             "", f"- Causes stored: {', '.join(causes) or 'none named'}",
             f"- Resolutions stored: {', '.join(fixes) or 'none named'}"]
    if fix is not None:
        lines.append(f"- Fix read from `{fix.base[:12]}..{fix.head[:12]}`: {len(fix.files) + fix.more_files} "
                     "changed file(s)")
    if not result.approved:
        lines.append(f"- The reviewer did not approve it after {result.attempts} attempts; the best extraction "
                     "was stored.")
    lines += [f"- Not available: {quiet(gap)}" for gap in gaps]
    return "\n".join(lines)


def diagnosis_note(result: AnalysisResult, gitlab_url: str, gaps: list[str]) -> str:
    lines = ["## Knowledge-base diagnosis", "",
             f"**Most likely cause:** {quiet(result.root_cause)} (confidence {result.confidence:.2f})",
             f"**Resolution:** {quiet(result.resolution) or 'none known'}", "", quiet(result.explanation)]
    if not result.known:
        lines += ["", f"{NOTHING_SIMILAR}."]
    if result.candidates:
        lines += ["", "**Known causes ranked by the clues:**"]
        lines += [f"{n}. {quiet(c.name)} ({', '.join(c.clue_types)})" for n, c in enumerate(result.candidates, 1)]
    if result.novel_leads:
        lines += ["", "**Symptoms with no known cause:**", *(f"- `{s}`" for s in result.novel_leads)]
    if result.cited_incidents:
        lines += ["", "**Past incidents:** " + ", ".join(incident_link(i, gitlab_url)
                                                         for i in result.cited_incidents)]
    lines += [f"\n_Note: {quiet(n)}_" for n in (*result.investigation, *result.gap_lines(), *gaps)]
    return "\n".join(lines).strip()


class BambooAccumulateExecutor:
    """Learns the MR's last analysed failure with its discussion and fix (`/hummingbird learn`, learn-on-success)."""

    def __init__(self, loaded: LoadedConfig, gitlab: GitLabClient, accumulator: KnowledgeAccumulator,
                 questions: ThreadQuestions | None = None) -> None:
        self._loaded, self._gitlab, self._accumulator = loaded, gitlab, accumulator
        self._questions = questions

    async def run(self, order: WorkOrder, resume: StoredSession | None, publish: Publish, save: SaveSession) -> None:
        discussions = await self._gitlab.discussions(order.project_id, order.mr_iid)
        analysis = last_analysis(discussions, await self._gitlab.bot_user_id())
        if analysis is None:
            await publish(True, NOTHING_TO_LEARN)
            return
        tools = ReadTools.declared(self._loaded, order.workflow, order.project)
        analysed = analysis.sha or order.sha
        gathered = await gather_failure(tools, order, analysed)
        gathered.discussion = await trusted_discussion(self._gitlab, order.project_id, discussions)
        fix = await self._fix(order, analysed, gathered)
        verified = order.trigger == "pipeline"
        same = bool(analysed) and analysed == order.sha
        outcome = fix_section(fix, verified, same) if verified or fix is not None else ""
        incident = IncidentInput(learn_sources(order, analysis, gathered, outcome), gathered.task, {},
                                 gathered.logs, learned_incident_id(order.project, order.mr_iid, analysis.session_id),
                                 fix.to_json() if fix is not None else {}, gathered.tails)
        thread = Thread(order.project_id, order.mr_iid, analysis.discussion_id, analysis.internal)
        asking = self._questions.asking(incident.incident_id or "", thread) if self._questions else None
        with asking or contextlib.nullcontext():
            result = await self._accumulator.process(incident)
        log.info("learned incident %s (approved %s, attempts %d)", result.knowledge.incident_id, result.approved,
                 result.attempts)
        await publish(True, learned_note(result, self._loaded.config.gitlab.url, gathered.gaps, fix))

    async def _fix(self, order: WorkOrder, analysed: str | None, gathered: Gathered) -> Fix | None:
        """The changes from the analysed commit to the order's (the passing one, or the MR head for a
        command); None when they are the same commit or the compare cannot be read (a stated gap)."""
        if not analysed or not order.sha or analysed == order.sha:
            return None
        try:
            compare = await self._gitlab.compare(order.project_id, analysed, order.sha)
        except AgentError as exc:
            gathered.gaps.append(f"the fix (changes {analysed[:12]}..{order.sha[:12]}): {exc}")
            return None
        return read_fix(compare, analysed, order.sha, titles_trusted=gathered.author_trusted)


class BambooDiagnoseExecutor:
    """Diagnoses the failing jobs of the order's commit from the knowledge base (`/hummingbird bamboo-diagnose`)."""

    def __init__(self, loaded: LoadedConfig, navigator: ReasoningNavigator) -> None:
        self._loaded, self._navigator = loaded, navigator

    async def run(self, order: WorkOrder, resume: StoredSession | None, publish: Publish, save: SaveSession) -> None:
        tools = ReadTools.declared(self._loaded, order.workflow, order.project)
        gathered = await gather_failure(tools, order, order.sha)
        request = order.message if order.trigger == "command" and order.message else ""
        incident = IncidentInput(request, gathered.task, {}, gathered.logs,
                                 f"{order.project}!{order.mr_iid}:diagnose-{order.session_id[:8]}",
                                 full_logs=gathered.tails)
        scope = Scope.of(order.project, self._loaded.config.bamboo.share_groups)  # the order's, never the request's
        result = await self._navigator.scoped(scope).analyze(incident)
        await publish(True, diagnosis_note(result, self._loaded.config.gitlab.url, gathered.gaps))
