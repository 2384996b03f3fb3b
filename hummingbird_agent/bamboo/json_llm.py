"""The LLM calls of the knowledge base: one system prompt plus one user text in, one JSON object out.

`TextModel` is the narrow seam; `JsonLLM` asks for structured output (a JSON Schema, temperature 0), strips
fences, parses, asks once more when the answer is not a JSON object, then raises a typed error.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hummingbird_agent.errors import PermanentError
from hummingbird_agent.models import Model, ModelRequest, user_text

log = logging.getLogger(__name__)
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)


class TextModel(Protocol):
    """What the knowledge base needs from a model: a system prompt and a user text, a text answer.
    `json_output` asks the provider for one JSON object (JSON mode), `response_schema` constrains it,
    `max_output_tokens` caps the answer (None: the endpoint's default)."""

    async def complete(self, system: str, user: str, *, json_output: bool = False,
                       response_schema: Mapping[str, Any] | None = None,
                       max_output_tokens: int | None = None) -> str: ...


class ModelReplyError(PermanentError):
    """The model answered, but not with the JSON object the prompt asked for."""


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model answer (optionally fenced, optionally with prose around it)."""
    match = _FENCE.match(text)
    body = match.group(1) if match else text.strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            raise ModelReplyError("model answer is not JSON") from None
        try:
            value = json.loads(body[start : end + 1])
        except json.JSONDecodeError as exc:
            raise ModelReplyError(f"model answer is not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ModelReplyError("model answer is JSON but not an object")
    return value


@dataclass(frozen=True, slots=True)
class JsonLLM:
    """Sends one system + user message and parses the answer as a JSON object."""

    model: TextModel

    async def complete_json(self, system: str, user: str,
                            response_schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The parsed answer, asked for in the provider's JSON mode (constrained by `response_schema` when
        given); typed adapter errors propagate. A malformed answer is asked for once more (a model call is a
        read), a second one raises ModelReplyError."""
        try:
            return parse_json_object(await self.model.complete(system, user, json_output=True,
                                                               response_schema=response_schema))
        except ModelReplyError as exc:
            log.warning("model answer malformed, asking once more: %s", exc)
        return parse_json_object(await self.model.complete(system, user, json_output=True,
                                                           response_schema=response_schema))

    async def complete_text(self, system: str, user: str, max_output_tokens: int | None = None) -> str:
        return (await self.model.complete(system, user, max_output_tokens=max_output_tokens)).strip()

    async def context_window(self) -> int | None:
        """The model's served context window when its server reports one (Ollama), else None."""
        probe = getattr(self.model, "context_window", None)
        return await probe() if probe is not None else None

    async def count_tokens(self, system: str, user: str) -> int | None:
        """Tokens of this system + user prompt by the provider's counter (a network call); None when it has none."""
        counter = getattr(self.model, "count_tokens", None)
        return await counter(system, user) if counter is not None else None


@dataclass(frozen=True, slots=True)
class ModelText:
    """TextModel over the project's Model protocol (Gemini adapter or ScriptedModel), tools disabled."""

    model: Model
    model_name: str

    async def complete(self, system: str, user: str, *, json_output: bool = False,
                       response_schema: Mapping[str, Any] | None = None,
                       max_output_tokens: int | None = None) -> str:
        # Temperature 0: the knowledge base wants the same names for the same incident, not variety.
        request = ModelRequest(model=self.model_name, system=system, contents=[user_text(user)], tools_enabled=False,
                               json_output=json_output, response_schema=response_schema, temperature=0.0,
                               max_output_tokens=max_output_tokens)
        return (await self.model.generate(request)).text

    async def context_window(self) -> int | None:
        probe = getattr(self.model, "context_window", None)
        return await probe(self.model_name) if probe is not None else None

    async def count_tokens(self, system: str, user: str) -> int | None:
        counter = getattr(self.model, "count_tokens", None)
        if counter is None:
            return None
        request = ModelRequest(model=self.model_name, system=system, contents=[user_text(user)], tools_enabled=False,
                               json_output=True)
        counted = await counter(request)
        return None if counted is None else int(counted)
