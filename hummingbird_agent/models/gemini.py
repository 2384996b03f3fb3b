"""Gemini adapter on the google-genai async client (AI Studio key or Vertex AI): the only module importing
google.genai for generation. Maps canonical contents to the SDK and SDK errors to the typed model errors;
answers are streamed (streamGenerateContent, watched by models/stream.py); retries are ours (models/retry.py)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import aiohttp
import httpx
import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from hummingbird_agent import budgets
from hummingbird_agent.errors import PermanentError
from hummingbird_agent.models.base import Content, ModelRequest, ModelResponse, Usage
from hummingbird_agent.models.contents import read_model_turn, wire_contents
from hummingbird_agent.models.errors import ModelUnavailable, classify_status, parse_retry_after
from hummingbird_agent.models.retry import RetryPolicy, with_retries
from hummingbird_agent.models.stream import StreamLimits, StreamWatch, cut_runaway
from hummingbird_agent.models.transport import tls_context

log = logging.getLogger(__name__)
PROVIDER = "gemini"
_TRANSPORT_ERRORS = (aiohttp.ClientError, httpx.TransportError, ConnectionError)
_MESSAGE_MAX_CHARS = 300
_CLOUD_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# Finish reasons in the ModelResponse vocabulary (Gemini says STOP after function calls too).
_FINISH = {"STOP": "stop", "MAX_TOKENS": "max_tokens", "SAFETY": "safety", "RECITATION": "safety",
           "BLOCKLIST": "safety", "PROHIBITED_CONTENT": "safety", "SPII": "safety"}
_TEXT_KEYS = frozenset({"text", "thought", "thoughtSignature"})


@dataclass(frozen=True, slots=True)
class GeminiSettings:
    """AI Studio (`api_key`) or Vertex AI (`vertex_project` + `vertex_location`, with Application Default
    Credentials or a service-account file)."""

    api_key: str | None = None
    base_url: str | None = None
    api_version: str = "v1beta"
    vertex_project: str | None = None
    vertex_location: str | None = None
    credentials_file: str | None = None
    ca_bundle: str | None = None
    max_output_tokens: int | None = None
    """None keeps the model's own output limit."""


def gemini_client(settings: GeminiSettings, timeout_s: float = budgets.MODEL_CALL_TIMEOUT_S,
                  ) -> tuple[genai.Client, httpx.AsyncClient | None]:
    """A google-genai client (and the httpx client it uses when a CA bundle is set; the caller closes it)."""
    # Vertex AI's version path is the SDK's own; the Gemini API one is configurable (v1, v1beta).
    version = None if settings.vertex_project else settings.api_version
    options = types.HttpOptions(base_url=settings.base_url, api_version=version,
                                timeout=int(timeout_s * 1000),
                                # One attempt per SDK call: retries are ours, so they are typed and bounded.
                                retry_options=types.HttpRetryOptions(attempts=1))
    http: httpx.AsyncClient | None = None
    context = tls_context(settings.ca_bundle)
    if context is not None:
        http = httpx.AsyncClient(verify=context)
        options.httpx_async_client = http
        options.httpx_client = httpx.Client(verify=context)
    if settings.vertex_project:
        credentials = None
        if settings.credentials_file:
            from google.oauth2 import service_account

            credentials = service_account.Credentials.from_service_account_file(
                settings.credentials_file, scopes=[_CLOUD_SCOPE])
        client = genai.Client(vertexai=True, project=settings.vertex_project,
                              location=settings.vertex_location or "global", credentials=credentials,
                              http_options=options)
        return client, http
    return genai.Client(api_key=settings.api_key, http_options=options), http


class GeminiModel:
    """The Model protocol over the Gemini API. Holds one SDK client; close it with `aclose()`."""

    def __init__(self, settings: GeminiSettings, retry: RetryPolicy | None = None,
                 limits: StreamLimits | None = None) -> None:
        self._retry = retry or RetryPolicy()
        self._limits = limits or StreamLimits()
        self._client, self._http = gemini_client(settings, self._retry.timeout_s)
        self._max_output_tokens = settings.max_output_tokens

    async def generate(self, request: ModelRequest) -> ModelResponse:
        # Wire dicts, not SDK objects: the SDK re-validates every message of `contents` on each call, and
        # SDK objects cost it about 4x more than dicts (its union types try each member from attributes).
        contents, config = wire_contents(request.contents), _config(request, self._max_output_tokens)

        async def call() -> _Answer:
            with mapped_errors():
                try:
                    return await self._stream(request.model, contents, config)
                except pydantic.ValidationError:
                    raise PermanentError(_invalid(contents)) from None

        return _from_stream(await with_retries(PROVIDER, self._retry, call), request.model)

    async def _stream(self, model: str, contents: list[Content], config: types.GenerateContentConfig) -> _Answer:
        answer, watch = _Answer(), StreamWatch(PROVIDER, self._limits)
        async with watch.running():
            chunks = await self._client.aio.models.generate_content_stream(model=model, contents=contents,
                                                                           config=config)
            # An async generator: closing it closes the HTTP response (a runaway stopped early frees the server).
            async with contextlib.aclosing(cast(AsyncGenerator[types.GenerateContentResponse, None], chunks)):
                async for chunk in chunks:
                    if (runaway := watch.heard(answer.add(chunk))) is not None:
                        answer.parts, answer.finish = cut_runaway(answer.parts, runaway, PROVIDER), "repetition"
                        break
        return answer

    async def count_tokens(self, request: ModelRequest) -> int:
        """Tokens of the request's prompt by the model's tokenizer (countTokens, one call, no retry: callers fall
        back to an estimate). The Gemini API counts contents only, so the system text is counted as a first user
        turn; tool declarations are not counted."""
        system = [{"role": "user", "parts": [{"text": request.full_system}]}] if request.full_system else []
        contents = system + wire_contents(request.contents)
        with mapped_errors():
            counted = await self._client.aio.models.count_tokens(model=request.model, contents=contents)
        return counted.total_tokens or 0

    async def embed(self, model: str, texts: list[str], dimensions: int | None) -> list[list[float]]:
        """Embedding vectors of `texts`, in order (the knowledge base's Gemini / Vertex AI embedder)."""
        config = types.EmbedContentConfig(output_dimensionality=dimensions)

        async def call() -> types.EmbedContentResponse:
            with mapped_errors():
                return await self._client.aio.models.embed_content(model=model, contents=texts, config=config)

        response = await with_retries(PROVIDER, self._retry, call)
        return [list(e.values or []) for e in response.embeddings or []]

    async def aclose(self) -> None:
        await self._client.aio.aclose()
        if self._http is not None:
            await self._http.aclose()


@contextlib.contextmanager
def mapped_errors() -> Iterator[None]:
    """SDK and transport exceptions become the typed model errors."""
    try:
        yield
    except genai_errors.APIError as exc:
        message = f"Gemini API error {exc.code} {exc.status or ''}: {(exc.message or '')[:_MESSAGE_MAX_CHARS]}"
        headers = getattr(exc.response, "headers", None) or {}
        retry_after = parse_retry_after(headers.get("retry-after")) or _retry_info(exc.details)
        raise classify_status(exc.code, message, retry_after) from exc
    except _TRANSPORT_ERRORS as exc:
        raise ModelUnavailable(f"Gemini API unreachable: {type(exc).__name__}") from exc


def _invalid(contents: list[Content]) -> str:
    """Which message the SDK refuses and why, without its input (history holds untrusted text)."""
    prefix = "conversation history is not valid Gemini contents"
    for index, content in enumerate(contents):
        try:
            types.Content.model_validate(content)
        except pydantic.ValidationError as exc:
            error = exc.errors(include_url=False, include_input=False)[0]
            return f"{prefix}: message {index} at {'.'.join(map(str, error['loc']))}: {error['msg']}"
    return f"{prefix}: the SDK refused the request"


def _retry_info(details: Any) -> float | None:
    """The delay of a google.rpc.RetryInfo detail ("retryDelay": "37s"): how Gemini says when to retry a 429."""
    error = details.get("error") if isinstance(details, dict) else None
    for detail in (error or {}).get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            return parse_retry_after(str(detail.get("retryDelay", "")).removesuffix("s") or None)
    return None


def _config(request: ModelRequest, max_output_tokens: int | None = None) -> types.GenerateContentConfig:
    config = types.GenerateContentConfig(
        system_instruction=request.full_system,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        temperature=request.temperature,
        max_output_tokens=max_output_tokens,
    )
    if request.tools:
        declarations = [
            types.FunctionDeclaration(name=t.name, description=t.description, parameters_json_schema=dict(t.parameters))
            for t in request.tools
        ]
        mode = types.FunctionCallingConfigMode.AUTO if request.tools_enabled else types.FunctionCallingConfigMode.NONE
        config.tools = [types.Tool(function_declarations=declarations)]
        config.tool_config = types.ToolConfig(function_calling_config=types.FunctionCallingConfig(mode=mode))
    if request.json_output or request.response_schema is not None:
        config.response_mime_type = "application/json"
    if request.response_schema is not None:
        config.response_json_schema = dict(request.response_schema)
    if request.max_output_tokens is not None:  # this call's own cap, never above the endpoint's
        config.max_output_tokens = min(config.max_output_tokens or request.max_output_tokens, request.max_output_tokens)
    return config


@dataclass(slots=True)
class _Answer:
    """The streamed chunks gathered: parts merged, the last usage, finish reason and model version."""

    parts: list[dict[str, Any]] = field(default_factory=list)
    finish: str = ""
    usage: types.GenerateContentResponseUsageMetadata | None = None
    model: str = ""

    def add(self, chunk: types.GenerateContentResponse) -> str:
        """Take one chunk; returns its visible text."""
        self.usage = chunk.usage_metadata or self.usage
        self.model = chunk.model_version or self.model
        candidate = chunk.candidates[0] if chunk.candidates else None
        if candidate is None:
            return ""
        if candidate.finish_reason is not None:
            self.finish = _FINISH.get(candidate.finish_reason.value, candidate.finish_reason.value.lower())
        visible = ""
        for part in candidate.content.parts or [] if candidate.content is not None else []:
            dumped = part.model_dump(mode="json", by_alias=True, exclude_none=True)
            _merge(self.parts, dumped)
            if isinstance(dumped.get("text"), str) and not dumped.get("thought"):
                visible += dumped["text"]
        return visible


def _merge(parts: list[dict[str, Any]], part: dict[str, Any]) -> None:
    """Append a streamed part: text pieces join the text part before them (same `thought` flag; a thought
    signature, which comes with a part's last piece, ends it); empty pieces without a signature are dropped."""
    if not isinstance(part.get("text"), str) or not set(part) <= _TEXT_KEYS:
        parts.append(part)
        return
    last = parts[-1] if parts else None
    if (last is not None and isinstance(last.get("text"), str) and set(last) <= _TEXT_KEYS
            and "thoughtSignature" not in last and bool(last.get("thought")) == bool(part.get("thought"))):
        last["text"] += part["text"]
        if "thoughtSignature" in part:
            last["thoughtSignature"] = part["thoughtSignature"]
    elif part["text"] or "thoughtSignature" in part:
        parts.append(part)


def _from_stream(raw: _Answer, requested: str) -> ModelResponse:
    content = {"role": "model", "parts": raw.parts} if raw.parts else None
    calls, text = read_model_turn(content)
    meta = raw.usage
    usage = Usage(
        prompt_tokens=(meta.prompt_token_count or 0) if meta else 0,
        candidate_tokens=(meta.candidates_token_count or 0) if meta else 0,
        cached_tokens=(meta.cached_content_token_count or 0) if meta else 0,
    )
    log.info(
        "model call done provider=%s prompt_tokens=%d candidate_tokens=%d cached_tokens=%d calls=%d",
        PROVIDER, usage.prompt_tokens, usage.candidate_tokens, usage.cached_tokens, len(calls),
    )
    finish = "tool_calls" if calls and raw.finish == "stop" else raw.finish
    return ModelResponse(content, calls, text, usage, PROVIDER, raw.model or requested, finish)
