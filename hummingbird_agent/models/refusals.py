"""A request parameter sent only to models that take it. OpenAI's reasoning models accept only their default
temperature and Claude's newer models none at all; older Claude models (and Claude on Vertex AI where the
organisation has not enabled it) refuse structured output. Each refuses the request (HTTP 400 naming the
parameter) before generating anything, so the same request without it is sent once, and that model gets none
from then on. A parameter with a successor (OpenAI's reasoning models refuse `max_tokens` and take
`max_completion_tokens`) is renamed instead of dropped."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class ParameterRefusals:
    """The models (by name) that refused one body field on one adapter; as many as the config names."""

    def __init__(self, provider: str, parameter: str, successor: str | None = None) -> None:
        self._provider = provider
        self._parameter = parameter
        self._successor = successor
        self._models: set[str] = set()

    async def send(self, model: str, body: dict[str, Any], send: Callable[[dict[str, Any]], Awaitable[T]],
                   refused: Callable[[Exception], bool]) -> T:
        """`send(body)`; when the model refuses the body's parameter (`refused(exc)`), once more without it."""
        if model in self._models and self._parameter in body:
            self._drop(body)
        try:
            return await send(body)
        except Exception as exc:
            if self._parameter not in body or not refused(exc):
                raise
        log.info("model refused a parameter, sending %s provider=%s model=%s parameter=%s",
                 self._successor or "none", self._provider, model, self._parameter)
        self._models.add(model)
        self._drop(body)
        return await send(body)

    def _drop(self, body: dict[str, Any]) -> None:
        value = body.pop(self._parameter)
        if self._successor:
            body[self._successor] = value
