"""Typed errors of the service. The branch says who must act.

    AgentError
    ├── ConfigError          the operator: config.yaml or the environment is wrong
    ├── TransientError       nobody: retry later (throttling, 5xx, timeouts, unreachable services)
    │   ├── RetryLater       a handler asks the worker to retry after `delay_s`
    │   └── OutcomeUnknown   no answer (timeout, gateway timeout): the far end may still carry it out
    ├── PermanentError       nobody can: a bad event, a forbidden project, a missing object
    │   └── EnvelopeError    a queue message that cannot be decoded
    ├── BudgetExceeded       the run hit an iteration or context budget
    └── SandboxError         the sandbox backend failed (not the command inside it)
"""

from __future__ import annotations


class AgentError(Exception):
    """Root of every error this service raises on purpose."""


class ConfigError(AgentError):
    """Invalid configuration; the message is one line naming the key path and the problem."""


class TransientError(AgentError):
    """A failure that may succeed when retried."""


class RetryLater(TransientError):
    """Raised by a handler to have its message redelivered after `delay_s` seconds."""

    def __init__(self, reason: str, delay_s: float) -> None:
        super().__init__(reason)
        self.delay_s = delay_s


class OutcomeUnknown(TransientError):
    """A request that got no answer from the service itself (the client timed out, or a gateway did): the
    service may still be carrying it out, so the effect of a write can appear later."""


class PermanentError(AgentError):
    """A failure that retrying cannot fix."""


class EnvelopeError(PermanentError):
    """A queue message whose envelope is malformed; carries the reason."""


class BudgetExceeded(AgentError):
    """The agent loop ran out of iterations or context."""


class SandboxError(AgentError):
    """The sandbox backend itself failed (start, exec transport, cleanup)."""
