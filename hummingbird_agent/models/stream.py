"""What every adapter does with a streamed answer: a watchdog that cuts a stream on silence (no event for a
while), not on its length, and the runaway check over its visible text. Provider-blind: adapters feed them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.models.errors import ModelTimedOut
from hummingbird_agent.models.runaway import RepeatLimits, RepetitionGuard, Runaway

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """Seconds a stream may stay silent before its first event and between two events, and when its text loops."""

    first_event_s: float = budgets.MODEL_FIRST_EVENT_TIMEOUT_S
    silence_s: float = budgets.MODEL_SILENCE_TIMEOUT_S
    repeat: RepeatLimits = field(default_factory=RepeatLimits)


class StreamWatch:
    """One streamed call: `async with watch.running():` around opening and reading the stream, `heard(text)` on
    every event. Silence past the limit raises ModelTimedOut; `heard` returns a Runaway once the text loops."""

    def __init__(self, provider: str, limits: StreamLimits) -> None:
        self.provider, self.limits = provider, limits
        self.events = 0
        self.chars = 0
        self._guard = RepetitionGuard(limits.repeat)
        self._timeout: asyncio.Timeout | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[StreamWatch]:
        try:
            async with asyncio.timeout(self.limits.first_event_s) as timeout:
                self._timeout = timeout
                yield self
        except TimeoutError:
            if self._timeout is None or not self._timeout.expired():
                raise
            raise ModelTimedOut(self.silence_message()) from None

    def heard(self, text: str = "") -> Runaway | None:
        """An event arrived (with `text`, its visible text): the silence limit starts again."""
        self.events += 1
        if self._timeout is not None:
            self._timeout.reschedule(asyncio.get_running_loop().time() + self.limits.silence_s)
        if not text:
            return None
        self.chars += len(text)
        return self._guard.feed(text)

    def silence_message(self) -> str:
        if not self.events:
            return f"{self.provider}: the model went silent: no output within {self.limits.first_event_s:.0f} s"
        return (f"{self.provider}: the model went silent: no output for {self.limits.silence_s:.0f} s after "
                f"{self.chars:,} characters")


def cut_runaway(parts: list[dict[str, Any]], found: Runaway, provider: str) -> list[dict[str, Any]]:
    """The canonical parts of a stopped runaway answer: its visible text up to `found.keep_chars` and the notice;
    the calls and text after it dropped (a call cannot follow a half-written answer)."""
    kept: list[dict[str, Any]] = []
    left = found.keep_chars
    for part in parts:
        text = part.get("text")
        if not isinstance(text, str) or part.get("thought") or left <= 0:
            continue
        kept.append({**part, "text": text[:left]})
        left -= len(text)
    log.warning("model answer stopped as a runaway provider=%s block_lines=%d kept_chars=%d", provider,
                found.block_lines, found.keep_chars)
    notice = {"text": f"\n\n{found.notice()}"}
    return [*kept, notice]
