"""A workflow's `triage` section: the verdicts on each failed check computed before the model runs."""

from __future__ import annotations

from typing import Annotated, Literal

from hummingbird_agent import budgets
from hummingbird_agent.config.fields import StrictModel, whole


class OutageConfig(StrictModel):
    enabled: bool = True
    """Point later MRs failing the same way to the first diagnosis instead of running the model again."""
    min_mrs: Annotated[int, whole(2, 1000, "MRs")] = budgets.TRIAGE_OUTAGE_MIN_MRS
    """MRs of one project with the same failure fingerprint (within the window) from which the guard answers."""
    window_minutes: Annotated[int, whole(1, 7 * 24 * 60, "minutes")] = budgets.TRIAGE_OUTAGE_WINDOW_S // 60
    """How long a diagnosed fingerprint stays the one later MRs are pointed to."""


class TriageConfig(StrictModel):
    enabled: bool = False
    """Classify each failed check (pre-existing, flaky, infrastructure, known, new, unclassified) before the
    model runs; the note starts with the verdicts. Needs the GitLab data source."""
    lookback_pipelines: Annotated[int, whole(0, 100, "pipelines")] = budgets.TRIAGE_LOOKBACK_PIPELINES
    """Recent target-branch pipelines searched for the same failure when the merge base's pipeline does not
    decide."""
    lookback_days: Annotated[int, whole(1, 90, "days")] = budgets.TRIAGE_LOOKBACK_DAYS
    """Age of the oldest target-branch pipeline searched."""
    commit_status: str | None = None
    """Name of a commit status set on the analysed commit (success when every failure is pre-existing, flaky or
    infrastructure; failed otherwise), for merge rules; unset: no status."""
    culprit: bool = True
    """Search the target branch's pipelines, by bisection, for the change that broke each pre-existing failure (and
    where each flaky one failed and passed on one commit); the note and the commit status name it."""
    culprit_issue: bool = False
    """Open one GitLab issue in the project for each distinct pre-existing failure of the target branch (labelled
    `hummingbird-broken-branch`, never twice), naming its culprit and listing the open MRs it blocks; closed when the
    branch passes the job again. Needs `culprit` and a bot token that may write issues."""
    outage: OutageConfig = OutageConfig()
    """The outage guard: many MRs failing the same way get one model run."""
    status_note: bool = True
    """Keep one status note per MR (a plain note, edited in place as its pipelines finish): the newest pipeline's
    verdicts first, earlier commits' collapsed, "all green" when one passes."""
    model_when: Literal["news", "always"] = "news"
    """When an automatic run asks the model: `news` only when a failure is new, known or unclassified (every failure
    pre-existing, flaky or infrastructure: the status note says so and no model is called); `always` on every
    failed pipeline. A `/hummingbird` command always runs it."""
