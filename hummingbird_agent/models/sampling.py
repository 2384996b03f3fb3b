"""A requested temperature, sent only to models that take one. OpenAI's reasoning models accept only their
default and Claude's newer models none at all; both refuse the request (HTTP 400 naming `temperature`) before
generating anything, so the same request without it is sent once, and that model gets none from then on."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class TemperatureRefusals:
    """The models (by name) that refused a temperature on one adapter; as many as the config names."""

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._models: set[str] = set()

    async def send(self, model: str, body: dict[str, Any], send: Callable[[dict[str, Any]], Awaitable[T]],
                   refused: Callable[[Exception], bool]) -> T:
        """`send(body)`; when the model refuses the body's `temperature` (`refused(exc)`), once more without it."""
        if model in self._models:
            body.pop("temperature", None)
        try:
            return await send(body)
        except Exception as exc:
            if "temperature" not in body or not refused(exc):
                raise
        log.info("model takes no temperature, sending none provider=%s model=%s", self._provider, model)
        self._models.add(model)
        del body["temperature"]
        return await send(body)
