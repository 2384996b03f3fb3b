"""Gemini adapter on the google-genai async client: the only module importing google.genai.

Maps canonical contents to the SDK, retries 429/5xx and transport failures with backoff, and maps
SDK errors to TransientError (stays unavailable) or PermanentError (request refused).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import aiohttp
import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from hummingbird_agent import budgets
from hummingbird_agent.errors import PermanentError, TransientError
from hummingbird_agent.models.base import ModelRequest, ModelResponse, Usage
from hummingbird_agent.models.contents import read_model_turn, wire_contents

log = logging.getLogger(__name__)

_TRANSPORT_ERRORS = (aiohttp.ClientError, httpx.TransportError, TimeoutError, ConnectionError)
_MESSAGE_MAX_CHARS = 300


class GeminiModel:
    """The Model protocol over the Gemini API. Holds one SDK client; close it with `aclose()`."""

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str | None = None,
        api_version: str = "v1beta",
        retries: int = budgets.MODEL_MAX_RETRIES,
        retry_base_s: float = budgets.MODEL_RETRY_BASE_S,
    ) -> None:
        options = types.HttpOptions(
            base_url=base_url,
            api_version=api_version,
            timeout=int(budgets.MODEL_CALL_TIMEOUT_S * 1000),
            # One attempt per SDK call: retries are ours, so they are typed, logged and bounded by budgets.
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self._client = genai.Client(api_key=api_key, http_options=options)
        self._retries = retries
        self._retry_base_s = retry_base_s

    async def generate(self, request: ModelRequest) -> ModelResponse:
        contents, config = _to_sdk(request)
        attempt = 0
        while True:
            try:
                with _mapped_errors():
                    async with asyncio.timeout(budgets.MODEL_CALL_TIMEOUT_S):
                        raw = await self._client.aio.models.generate_content(
                            model=request.model, contents=contents, config=config
                        )
                return _from_sdk(raw)
            except TransientError as exc:
                if attempt >= self._retries:
                    raise TransientError(f"model unavailable after {attempt + 1} attempts: {exc}") from exc
                delay = min(self._retry_base_s * 2**attempt, budgets.MODEL_RETRY_MAX_DELAY_S)
                log.warning("model call failed, retrying attempt=%d delay_s=%.1f error=%s", attempt + 1, delay, exc)
                attempt += 1
                await asyncio.sleep(delay)

    async def aclose(self) -> None:
        await self._client.aio.aclose()


@contextlib.contextmanager
def _mapped_errors() -> Iterator[None]:
    """SDK and transport exceptions become TransientError (retry) or PermanentError (give up)."""
    try:
        yield
    except genai_errors.APIError as exc:
        message = f"Gemini API error {exc.code} {exc.status or ''}: {(exc.message or '')[:_MESSAGE_MAX_CHARS]}"
        if exc.code == 429 or exc.code >= 500:
            raise TransientError(message) from exc
        raise PermanentError(message) from exc
    except _TRANSPORT_ERRORS as exc:
        raise TransientError(f"Gemini API unreachable: {type(exc).__name__}") from exc


def _to_sdk(request: ModelRequest) -> tuple[list[types.Content], types.GenerateContentConfig]:
    try:
        contents = [types.Content.model_validate(c) for c in wire_contents(request.contents)]
    except ValueError as exc:
        raise PermanentError(f"conversation history is not valid Gemini contents: {exc}") from None
    config = types.GenerateContentConfig(
        system_instruction=request.system,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        temperature=request.temperature,
    )
    if request.response_schema is not None:
        config.response_mime_type = "application/json"
        config.response_json_schema = dict(request.response_schema)
    if request.tools:
        declarations = [
            types.FunctionDeclaration(name=t.name, description=t.description, parameters_json_schema=dict(t.parameters))
            for t in request.tools
        ]
        mode = types.FunctionCallingConfigMode.AUTO if request.tools_enabled else types.FunctionCallingConfigMode.NONE
        config.tools = [types.Tool(function_declarations=declarations)]
        config.tool_config = types.ToolConfig(function_calling_config=types.FunctionCallingConfig(mode=mode))
    return contents, config


def _from_sdk(raw: types.GenerateContentResponse) -> ModelResponse:
    content: dict[str, Any] | None = None
    candidate = raw.candidates[0] if raw.candidates else None
    if candidate is not None and candidate.content is not None and candidate.content.parts:
        content = candidate.content.model_dump(mode="json", by_alias=True, exclude_none=True)
        content["role"] = "model"
    calls, text = read_model_turn(content)
    meta = raw.usage_metadata
    usage = Usage(
        prompt_tokens=(meta.prompt_token_count or 0) if meta else 0,
        candidate_tokens=(meta.candidates_token_count or 0) if meta else 0,
        cached_tokens=(meta.cached_content_token_count or 0) if meta else 0,
    )
    log.info(
        "model call done prompt_tokens=%d candidate_tokens=%d cached_tokens=%d calls=%d",
        usage.prompt_tokens,
        usage.candidate_tokens,
        usage.cached_tokens,
        len(calls),
    )
    return ModelResponse(content=content, calls=calls, text=text, usage=usage)
