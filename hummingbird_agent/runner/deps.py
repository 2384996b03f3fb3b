"""Everything the handlers need, built once at start-up and passed down (no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hummingbird_agent.config.loading import Config, LoadedConfig
from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.gitlab.seal import Seal
from hummingbird_agent.metrics import Metrics
from hummingbird_agent.runner.executor import Executor
from hummingbird_agent.runner.triage_step import TriageService
from hummingbird_agent.sessions import SessionStore


@dataclass(frozen=True, slots=True)
class Deps:
    loaded: LoadedConfig
    gitlab: GitLabClient
    """The bot's client (write token): notes, discussions, member checks."""
    sessions: SessionStore
    executor: Executor
    """Runs one workflow in a sandbox and returns its outcome."""
    seal: Seal
    """Signs the markers of the notes the service keeps (the status note) and recognises them."""
    metrics: Metrics = field(default_factory=Metrics)
    """Where the runner records placeholders and runs that could not start (the service's registry)."""
    triage: TriageService | None = None
    """Verdicts on the failed checks before the model (workflows with `triage.enabled`), the outage guard and
    the commit status; the agent engine reads the same triage for its first message."""

    @property
    def config(self) -> Config:
        return self.loaded.config
