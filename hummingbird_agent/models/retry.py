"""The retry every adapter shares: typed transient errors are retried with capped exponential backoff, a
rate limit waits the provider's Retry-After instead, permanent errors pass through at once. A timed-out
generation is retried only where the policy allows it (not on a self-hosted server, which would start it again
from zero): the error then says so."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from hummingbird_agent import budgets
from hummingbird_agent.errors import TransientError
from hummingbird_agent.models.errors import ModelRateLimited, ModelTimedOut

log = logging.getLogger(__name__)
T = TypeVar("T")
NOT_RETRIED = "stopped and not retried: a self-hosted server would start the generation again from zero"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    retries: int = budgets.MODEL_MAX_RETRIES
    base_s: float = budgets.MODEL_RETRY_BASE_S
    max_delay_s: float = budgets.MODEL_RETRY_MAX_DELAY_S
    max_retry_after_s: float = budgets.MODEL_RETRY_AFTER_MAX_S
    timeout_s: float = budgets.MODEL_CALL_TIMEOUT_S
    """Ceiling of one whole attempt (a backstop: streams are cut on silence first)."""
    retry_timeouts: bool = True
    """False on a self-hosted server: a generation that timed out is not started again."""

    def delay(self, attempt: int, exc: TransientError) -> float | None:
        """Seconds before attempt `attempt + 1`, or None to give up."""
        if attempt >= self.retries:
            return None
        if isinstance(exc, ModelRateLimited) and exc.retry_after_s is not None:
            return exc.retry_after_s if exc.retry_after_s <= self.max_retry_after_s else None
        return min(self.base_s * 2.0**attempt, self.max_delay_s)


async def with_retries(provider: str, policy: RetryPolicy, call: Callable[[], Awaitable[T]]) -> T:
    """`call()` until it succeeds; the last TransientError is re-raised with the attempt count."""
    attempt = 0
    while True:
        try:
            async with asyncio.timeout(policy.timeout_s):
                return await call()
        except TimeoutError as exc:
            error: TransientError = ModelTimedOut(f"{provider}: no complete answer within {policy.timeout_s:.0f} s")
            error.__cause__ = exc
        except TransientError as exc:
            error = exc
        if isinstance(error, ModelTimedOut) and not policy.retry_timeouts:
            log.warning("model call timed out, not retried provider=%s attempt=%d error=%s", provider, attempt + 1,
                        error)
            raise ModelTimedOut(f"{error}; {NOT_RETRIED}") from error
        delay = policy.delay(attempt, error)
        if delay is None:
            raise _exhausted(error, attempt + 1) from error
        log.warning("model call failed, retrying provider=%s attempt=%d delay_s=%.1f error=%s",
                    provider, attempt + 1, delay, error)
        attempt += 1
        await asyncio.sleep(delay)


def _exhausted(error: TransientError, attempts: int) -> TransientError:
    """The same error kind, saying how many attempts were made (a rate limit keeps its Retry-After)."""
    message = f"model unavailable after {attempts} attempts: {error}"
    if isinstance(error, ModelRateLimited):
        return ModelRateLimited(message, error.retry_after_s)
    return type(error)(message)
