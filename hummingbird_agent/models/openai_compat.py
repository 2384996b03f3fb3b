"""Adapter for any OpenAI-compatible Chat Completions endpoint (OpenAI, Azure OpenAI's v1 endpoint, vLLM,
Ollama, llama.cpp) on the official `openai` SDK: the only module importing openai. Streams answers (`stream:
true`, gathered by models/openai_chunks.py, watched by models/stream.py). Converts canonical contents
to chat messages (one `tool` message per result, matched by `tool_call_id`), caps the output, supports JSON
mode / JSON schema, reads tool calls written as JSON text where configured, and maps SDK errors to the typed
model errors."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from hummingbird_agent import budgets
from hummingbird_agent.models.base import Content, ModelRequest, ModelResponse, Usage
from hummingbird_agent.models.contents import read_model_turn, with_call_ids
from hummingbird_agent.models.errors import ModelUnavailable, classify_status, parse_retry_after
from hummingbird_agent.models.openai_chunks import ChatStream
from hummingbird_agent.models.refusals import ParameterRefusals
from hummingbird_agent.models.retry import RetryPolicy, with_retries
from hummingbird_agent.models.stream import StreamLimits, StreamWatch, cut_runaway
from hummingbird_agent.models.text_calls import recover_calls
from hummingbird_agent.models.transport import tls_context

log = logging.getLogger(__name__)
PROVIDER = "openai"
# The SDK refuses to start without a key; local servers (Ollama, vLLM) ignore the header.
NO_KEY = "no-key"
_MESSAGE_MAX_CHARS = 300


@dataclass(frozen=True, slots=True)
class OpenAISettings:
    api_key: str | None = None
    base_url: str | None = None
    ca_bundle: str | None = None
    max_output_tokens: int | None = None
    """None sends no cap (the model's own limit)."""
    self_hosted: bool = False
    """A server other than OpenAI's or Azure's: the cap goes as `max_tokens`, which every OpenAI-compatible
    server knows (an older one ignores `max_completion_tokens` silently, leaving the output uncapped); hosted
    APIs get `max_completion_tokens`, the only name OpenAI's reasoning models accept."""
    recover_text_tool_calls: bool = False
    """Read a reply that is a tool call written as JSON text as that call (models/text_calls.py)."""


class OpenAIModel:
    """The Model protocol over Chat Completions. Holds one SDK client; close it with `aclose()`."""

    def __init__(self, settings: OpenAISettings, retry: RetryPolicy | None = None,
                 limits: StreamLimits | None = None) -> None:
        context = tls_context(settings.ca_bundle)
        http = openai.DefaultAsyncHttpxClient(verify=context) if context else None
        self._retry = retry or RetryPolicy()
        # A self-hosted server generates a timed-out answer again from zero: never retried there.
        if settings.self_hosted:
            self._retry = dataclasses.replace(self._retry, retry_timeouts=False)
        self._client = openai.AsyncOpenAI(api_key=settings.api_key or NO_KEY, base_url=settings.base_url,
                                          max_retries=0, timeout=self._retry.timeout_s, http_client=http)
        # A self-hosted server reads the prompt on CPU before its first token: it may stay silent longer then.
        first = (budgets.LOCAL_MODEL_FIRST_EVENT_TIMEOUT_S if settings.self_hosted
                 else budgets.MODEL_FIRST_EVENT_TIMEOUT_S)
        self._limits = limits or StreamLimits(first_event_s=first)
        self._settings = settings
        self._windows: dict[str, int | None] = {}
        self._temperature = ParameterRefusals(PROVIDER, "temperature")
        # A server that refuses `max_tokens` (a reasoning model behind a gateway or Azure) gets the successor.
        self._max_tokens = ParameterRefusals(PROVIDER, "max_tokens", "max_completion_tokens")

    async def generate(self, request: ModelRequest) -> ModelResponse:
        cap_field = "max_tokens" if self._settings.self_hosted else "max_completion_tokens"
        body = wire_request(request, self._settings.max_output_tokens, cap_field)

        async def capped(fields: dict[str, Any]) -> Any:
            return await self._max_tokens.send(request.model, fields, self._post, _refuses("max_tokens"))

        async def call() -> Any:
            with mapped_errors():
                return await self._temperature.send(request.model, body, capped, _refuses("temperature"))

        declared = {t.name for t in request.tools} if self._settings.recover_text_tool_calls else set()
        return _from_stream(await with_retries(PROVIDER, self._retry, call), request.model,
                            declared if request.tools_enabled else set())

    async def _post(self, body: dict[str, Any]) -> ChatStream:
        # The SDK's low-level post: `create()` re-walks every message through its TypedDict transform on each
        # call (most of this adapter's CPU on a long history); the body is already wire-shaped.
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        answer, watch = ChatStream(), StreamWatch(PROVIDER, self._limits)
        async with watch.running():
            stream = await self._client.post("/chat/completions", body=body, cast_to=ChatCompletion, stream=True,
                                             stream_cls=openai.AsyncStream[ChatCompletionChunk])
            async with stream:
                async for chunk in stream:
                    if (runaway := watch.heard(answer.add(chunk))) is not None:
                        answer.text = [part["text"] for part in cut_runaway(answer.parts(), runaway, PROVIDER)]
                        answer.calls, answer.finish = {}, "repetition"
                        break
        return answer

    async def embed(self, model: str, texts: list[str], dimensions: int | None) -> list[list[float]]:
        """Embedding vectors of `texts`, in order (the knowledge base's OpenAI-compatible embedder)."""
        extra: dict[str, Any] = {"dimensions": dimensions} if dimensions else {}

        async def call() -> Any:
            with mapped_errors():
                return await self._client.embeddings.create(model=model, input=texts, **extra)

        raw = await with_retries(PROVIDER, self._retry, call)
        return [list(item.embedding) for item in sorted(raw.data, key=lambda d: d.index)]

    async def context_window(self, model: str) -> int | None:
        """The context window an Ollama server serves `model` with (/api/ps, else /api/show's num_ctx), or
        None when the server does not say (OpenAI, vLLM, an unloaded model): callers keep their default."""
        if model not in self._windows and self._settings.base_url:
            self._windows[model] = await ollama_context_window(self._settings.base_url, model,
                                                               tls_context(self._settings.ca_bundle))
        return self._windows.get(model)

    async def aclose(self) -> None:
        await self._client.close()


def _refuses(parameter: str) -> Callable[[Exception], bool]:
    """A 400 naming `parameter` as its `param` (OpenAI's reasoning models: "unsupported_value" for a
    temperature, "unsupported_parameter" for `max_tokens`)."""

    def refused(exc: Exception) -> bool:
        body = exc.body if isinstance(exc, openai.BadRequestError) else None
        return isinstance(body, dict) and body.get("param") == parameter

    return refused


@contextlib.contextmanager
def mapped_errors() -> Iterator[None]:
    try:
        yield
    except openai.APIStatusError as exc:
        code = (exc.body or {}).get("code") if isinstance(exc.body, dict) else None
        detail = f"{code or ''} {exc.message}".strip()
        message = f"OpenAI-compatible API error {exc.status_code}: {detail[:_MESSAGE_MAX_CHARS]}"
        headers = exc.response.headers
        retry_after = parse_retry_after(headers.get("retry-after"))
        if retry_after is None and headers.get("retry-after-ms"):
            retry_after = parse_retry_after(f"{headers.get('retry-after-ms')}ms")
        raise classify_status(exc.status_code, message, retry_after) from exc
    except (openai.APIConnectionError, openai.APITimeoutError) as exc:
        raise ModelUnavailable(f"OpenAI-compatible API unreachable: {type(exc).__name__}") from exc
    except openai.APIError as exc:  # an error event inside a stream (the HTTP status was 200)
        body = exc.body if isinstance(exc.body, dict) else {}
        code = body.get("code")
        message = f"OpenAI-compatible API error in the stream: {str(exc.message)[:_MESSAGE_MAX_CHARS]}"
        raise classify_status(code if isinstance(code, int) else 500, message) from exc


def wire_request(request: ModelRequest, max_output_tokens: int | None = None,
                 cap_field: str = "max_completion_tokens") -> dict[str, Any]:
    """The Chat Completions body of a request; the output cap (when set) under `cap_field`."""
    messages = [{"role": "system", "content": request.full_system}, *wire_messages(request.contents)]
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    if max_output_tokens is not None:
        body[cap_field] = max_output_tokens
    if request.tools:
        body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                           "parameters": dict(t.parameters)}} for t in request.tools]
        body["tool_choice"] = "auto" if request.tools_enabled else "none"
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.response_schema is not None:
        schema = {"name": "answer", "schema": dict(request.response_schema)}
        body["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif request.json_output:
        body["response_format"] = {"type": "json_object"}
    if request.max_output_tokens is not None:
        # This call's own cap, never above the endpoint's, under the endpoint's field; else the current name
        # (hosted reasoning models take no other; a server that does not know it leaves the answer uncapped).
        field = next((f for f in ("max_tokens", "max_completion_tokens") if f in body), "max_completion_tokens")
        body[field] = min(body.get(field) or request.max_output_tokens, request.max_output_tokens)
    return body


def wire_messages(contents: Sequence[Content]) -> list[dict[str, Any]]:
    """Canonical contents as chat messages: model -> assistant (text + tool_calls), each functionResponse
    -> a `tool` message, user text -> user."""
    messages: list[dict[str, Any]] = []
    for content in with_call_ids(contents):
        parts = content.get("parts") or []
        role = content.get("role")
        if role == "model":
            messages.append(_assistant(parts))
            continue
        for part in parts:
            if "functionResponse" in part:
                response = part["functionResponse"]
                messages.append({"role": "tool", "tool_call_id": response["id"],
                                 "content": json.dumps(response.get("response") or {}, ensure_ascii=False)})
        text = "".join(p["text"] for p in parts if isinstance(p.get("text"), str))
        if text:
            messages.append({"role": "user", "content": text})
    return messages


def _assistant(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    text = "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    if calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c.get("name", ""), "arguments": json.dumps(c.get("args") or {})}}
            for c in calls]
    return message


def _from_stream(raw: ChatStream, requested: str, declared: Collection[str] = ()) -> ModelResponse:
    parts = raw.parts()
    if len(parts) == 1 and "text" in parts[0] and (recovered := recover_calls(parts[0]["text"], declared)):
        text_calls, left = recovered
        log.info("model call wrote its tool calls as text provider=%s calls=%d", PROVIDER, len(text_calls))
        parts = [{"text": left}, *text_calls] if left else text_calls
    content = {"role": "model", "parts": parts} if parts else None
    calls, text = read_model_turn(content)
    usage = _usage(raw.usage)
    log.info("model call done provider=%s prompt_tokens=%d candidate_tokens=%d cached_tokens=%d calls=%d",
             PROVIDER, usage.prompt_tokens, usage.candidate_tokens, usage.cached_tokens, len(calls))
    return ModelResponse(content, calls, text, usage, PROVIDER, raw.model or requested, raw.finish)


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    details = getattr(raw, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    return Usage(prompt_tokens=raw.prompt_tokens or 0, candidate_tokens=raw.completion_tokens or 0,
                 cached_tokens=cached)


async def ollama_context_window(base_url: str, model: str, context: Any) -> int | None:
    root = re.sub(r"/v1/?$", "", base_url.rstrip("/"))
    try:
        async with httpx.AsyncClient(timeout=budgets.MODEL_CONTEXT_PROBE_TIMEOUT_S, verify=context or True) as http:
            running = await http.get(f"{root}/api/ps")
            if running.status_code == 200:
                for entry in running.json().get("models") or []:
                    if model in (entry.get("name"), entry.get("model")) and entry.get("context_length"):
                        return int(entry["context_length"])
            shown = await http.post(f"{root}/api/show", json={"model": model})
            if shown.status_code == 200:
                return _num_ctx(shown.json())
    except (httpx.HTTPError, ValueError, TypeError) as exc:
        log.info("no context window from %s: %s", root, type(exc).__name__)
    return None


def _num_ctx(show: dict[str, Any]) -> int | None:
    """num_ctx from the model's parameters (what Ollama serves), else the trained context length."""
    match = re.search(r"^num_ctx\s+(\d+)", str(show.get("parameters") or ""), re.MULTILINE)
    if match:
        return int(match.group(1))
    lengths = [v for k, v in (show.get("model_info") or {}).items() if k.endswith(".context_length")]
    return int(lengths[0]) if lengths else None
