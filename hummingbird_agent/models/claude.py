"""Claude adapter on the official `anthropic` SDK (direct API or Claude on Vertex AI): the only module
importing anthropic. Streams answers (the SDK's message stream, watched by models/stream.py). Converts canonical
contents to Messages (tool results as `user` turns, consecutive user turns merged), puts prompt-cache breakpoints
on the tools, the stable system text and the last message (this call's warning after it, uncached), sends a
response schema as structured output (`output_config.format`, in the JSON Schema subset Claude takes), and maps
SDK errors to the typed model errors."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anthropic

from hummingbird_agent import budgets
from hummingbird_agent.models.base import Content, ModelRequest, ModelResponse, Usage
from hummingbird_agent.models.contents import read_model_turn, with_call_ids
from hummingbird_agent.models.errors import ModelUnavailable, classify_status, parse_retry_after
from hummingbird_agent.models.refusals import ParameterRefusals
from hummingbird_agent.models.retry import RetryPolicy, with_retries
from hummingbird_agent.models.stream import StreamLimits, StreamWatch, cut_runaway
from hummingbird_agent.models.transport import tls_context

log = logging.getLogger(__name__)
PROVIDER = "anthropic"
_CACHE = {"type": "ephemeral"}
_MESSAGE_MAX_CHARS = 300
# Structured outputs' JSON Schema subset: constraints it does not enforce go into the description (as the SDK's
# own transform_schema does), string formats other than these likewise.
_UNENFORCED = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
                         "maxLength", "maxItems", "uniqueItems", "minProperties", "maxProperties"})
_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"})
# Messages' stop reasons in the ModelResponse vocabulary; an error event inside a stream (HTTP 200) by its type.
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "refusal": "safety",
           "model_context_window_exceeded": "max_tokens"}
_STREAM_ERRORS = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500,
                  "invalid_request_error": 400, "request_too_large": 413}


@dataclass(frozen=True, slots=True)
class ClaudeSettings:
    """Where Claude is: the direct API (`api_key`) or Vertex AI (`vertex_project` + `vertex_region`)."""

    api_key: str | None = None
    base_url: str | None = None
    vertex_project: str | None = None
    vertex_region: str | None = None
    credentials_file: str | None = None
    ca_bundle: str | None = None
    max_output_tokens: int = budgets.MODEL_MAX_OUTPUT_TOKENS


class ClaudeModel:
    """The Model protocol over Anthropic Messages. Holds one SDK client; close it with `aclose()`."""

    def __init__(self, settings: ClaudeSettings, retry: RetryPolicy | None = None,
                 limits: StreamLimits | None = None) -> None:
        context = tls_context(settings.ca_bundle)
        http = anthropic.DefaultAsyncHttpxClient(verify=context) if context else None
        self._retry = retry or RetryPolicy()
        self._limits = limits or StreamLimits()
        common: dict[str, Any] = {"base_url": settings.base_url, "max_retries": 0, "http_client": http,
                                  "timeout": self._retry.timeout_s}
        if settings.vertex_project:
            self._client: Any = anthropic.AsyncAnthropicVertex(
                project_id=settings.vertex_project, region=settings.vertex_region or "global",
                credentials=_vertex_credentials(settings.credentials_file), **common)
        else:
            self._client = anthropic.AsyncAnthropic(api_key=settings.api_key, **common)
        self._max_output_tokens = settings.max_output_tokens
        self._temperature = ParameterRefusals(PROVIDER, "temperature")
        self._output_format = ParameterRefusals(PROVIDER, "output_config")

    async def generate(self, request: ModelRequest) -> ModelResponse:
        body = wire_request(request, self._max_output_tokens)

        async def send(fields: dict[str, Any]) -> Any:
            return await self._output_format.send(request.model, fields, self._create, _refuses_output_format)

        async def call() -> Any:
            with _mapped_errors():
                return await self._temperature.send(request.model, body, send, _refuses_temperature)

        raw, runaway = await with_retries(PROVIDER, self._retry, call)
        return _response(raw, runaway, request.model)

    async def count_tokens(self, request: ModelRequest) -> int:
        """Input tokens of the request by the model's tokenizer (Messages count_tokens, one call, no retry:
        callers fall back to an estimate)."""
        body = wire_request(request, self._max_output_tokens)
        fields = {k: body[k] for k in ("model", "system", "messages", "tools") if k in body}
        with _mapped_errors():
            counted = await self._client.messages.count_tokens(**fields)
        return int(counted.input_tokens)

    async def _create(self, body: dict[str, Any]) -> tuple[Any, list[dict[str, Any]] | None]:
        """The streamed Message as the SDK gathers it, and the parts kept when it was stopped as a runaway."""
        # SDK 1.x dropped the sampling parameters from create() (current models take none); the API still
        # honours them for older models, through extra_body.
        sampling = {"temperature": body["temperature"]} if "temperature" in body else None
        fields = {k: v for k, v in body.items() if k != "temperature"}
        watch = StreamWatch(PROVIDER, self._limits)
        async with watch.running(), self._client.messages.stream(**fields, extra_body=sampling) as stream:
            async for event in stream:
                if (runaway := watch.heard(event.text if event.type == "text" else "")) is not None:
                    snapshot = stream.current_message_snapshot
                    return snapshot, cut_runaway(_parts(snapshot), runaway, PROVIDER)
            return await stream.get_final_message(), None

    async def aclose(self) -> None:
        await self._client.close()


def _vertex_credentials(path: str | None) -> Any:
    """A service-account file's credentials; None lets the SDK use Application Default Credentials."""
    if not path:
        return None
    from google.oauth2 import service_account

    return service_account.Credentials.from_service_account_file(
        path, scopes=["https://www.googleapis.com/auth/cloud-platform"])


def _refuses_temperature(exc: Exception) -> bool:
    """A 400 about `temperature` ("`temperature` is deprecated for this model": Claude's newer models)."""
    return isinstance(exc, anthropic.BadRequestError) and "temperature" in str(exc.message)


def _refuses_output_format(exc: Exception) -> bool:
    """A 400 about structured output or its schema (only asked of requests that carry one): a model or deployment
    without it ("output_config: Extra inputs are not permitted", as Claude on Vertex AI answers where the
    organisation has not enabled it) or a schema it cannot compile ("The compiled grammar is too large")."""
    message = str(exc.message).lower() if isinstance(exc, anthropic.BadRequestError) else ""
    return any(word in message for word in ("output_config", "output_format", "grammar", "schema"))


@contextlib.contextmanager
def _mapped_errors() -> Iterator[None]:
    try:
        yield
    except anthropic.APIStatusError as exc:
        status = exc.status_code
        if status < 400:  # an error event inside a stream: its type says what it is
            error = exc.body.get("error") if isinstance(exc.body, dict) else None
            status = _STREAM_ERRORS.get(str((error or {}).get("type")), 500) if isinstance(error, dict) else 500
        message = f"Anthropic API error {status}: {str(exc.message)[:_MESSAGE_MAX_CHARS]}"
        retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
        raise classify_status(status, message, retry_after) from exc
    except (anthropic.APIConnectionError, anthropic.APITimeoutError) as exc:
        raise ModelUnavailable(f"Anthropic API unreachable: {type(exc).__name__}") from exc


def wire_request(request: ModelRequest, max_output_tokens: int = budgets.MODEL_MAX_OUTPUT_TOKENS) -> dict[str, Any]:
    """The Messages API body of a request (what the SDK sends, minus its defaults)."""
    system = request.system
    if request.json_output or request.response_schema is not None:
        # Messages has no JSON mode; a schema goes as structured output, and the prompt still asks for JSON
        # (the only ask of models that refuse structured output, same cached prefix either way).
        system += "\n\nAnswer with one JSON object only."
    body: dict[str, Any] = {"model": request.model, "max_tokens": max_output_tokens,
                            "system": [{"type": "text", "text": system, "cache_control": _CACHE}],
                            "messages": wire_messages(request.contents, request.system_suffix)}
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.tools:
        tools = [{"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                 for t in request.tools]
        tools[-1]["cache_control"] = _CACHE
        body["tools"] = tools
        body["tool_choice"] = {"type": "auto" if request.tools_enabled else "none"}
    if request.response_schema is not None:
        body["output_config"] = {"format": {"type": "json_schema", "schema": output_schema(request.response_schema)}}
    if request.max_output_tokens is not None:  # this call's own cap, never above the endpoint's
        body["max_tokens"] = min(body["max_tokens"], request.max_output_tokens)
    return body


def output_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `schema` in the JSON Schema subset of Claude's structured outputs (other providers get the
    original): every object closed with `additionalProperties: false`, which Claude requires (so a property the
    schema does not name cannot be produced), `oneOf` as `anyOf`, and what it does not enforce (numeric and
    length bounds, `minItems` above 1, other string formats) moved into the description."""
    out: dict[str, Any] = {}
    unenforced: dict[str, Any] = {}
    for key, value in schema.items():
        if _unenforced(key, value):
            unenforced[key] = value
        elif key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            out[key] = {name: _subschema(sub) for name, sub in value.items()}
        elif key in ("anyOf", "allOf", "oneOf", "items"):
            out["anyOf" if key == "oneOf" else key] = _subschema(value)
        else:
            out[key] = value
    kinds = schema.get("type")
    if "properties" in schema or kinds == "object" or (isinstance(kinds, list) and "object" in kinds):
        out["additionalProperties"] = False
    if unenforced:
        note = "{" + ", ".join(f"{key}: {value}" for key, value in unenforced.items()) + "}"
        out["description"] = f"{out['description']}\n\n{note}" if out.get("description") else note
    return out


def _unenforced(key: str, value: Any) -> bool:
    return (key in _UNENFORCED or (key == "minItems" and value not in (0, 1))
            or (key == "format" and value not in _FORMATS))


def _subschema(value: Any) -> Any:
    if isinstance(value, list):
        return [_subschema(sub) for sub in value]
    return output_schema(value) if isinstance(value, Mapping) else value


def wire_messages(contents: Sequence[Content], warning: str = "") -> list[dict[str, Any]]:
    """Canonical contents as Messages: model -> assistant; user and tool -> user, consecutive ones merged.
    The last block carries the cache breakpoint; this call's warning follows it as a last user text block.
    (The cache prefix runs tools -> system -> messages, so a warning in `system` would void the cached
    conversation on every warning turn.)"""
    messages: list[dict[str, Any]] = []
    for content in with_call_ids(contents):
        role = "assistant" if content.get("role") == "model" else "user"
        blocks = [b for part in content.get("parts") or [] if (b := _block(part)) is not None]
        if blocks and messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        elif blocks:
            messages.append({"role": role, "content": blocks})
    if messages:
        last = messages[-1]["content"]
        last[-1] = {**last[-1], "cache_control": _CACHE}
    if warning:
        if not messages or messages[-1]["role"] != "user":
            messages.append({"role": "user", "content": []})
        messages[-1]["content"].append({"type": "text", "text": warning})
    return messages


def _block(part: dict[str, Any]) -> dict[str, Any] | None:
    if "functionCall" in part:
        call = part["functionCall"]
        args = call.get("args")
        return {"type": "tool_use", "id": call["id"], "name": call.get("name", ""),
                "input": args if isinstance(args, dict) else {"value": args}}
    if "functionResponse" in part:
        response = part["functionResponse"]
        body = response.get("response") or {}
        return {"type": "tool_result", "tool_use_id": response["id"], "is_error": "error" in body,
                "content": json.dumps(body, ensure_ascii=False)}
    text = part.get("text")
    # Messages refuses a blank text block; other providers answer "\n" beside a call, saved with the turn.
    if isinstance(text, str) and text.strip() and not part.get("thought"):
        return {"type": "text", "text": text}
    return None


def _parts(raw: Any) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in raw.content or []:
        if block.type == "text" and block.text:
            parts.append({"text": block.text})
        elif block.type == "tool_use":
            parts.append({"functionCall": {"name": block.name, "args": block.input, "id": block.id}})
    return parts


def _response(raw: Any, runaway: list[dict[str, Any]] | None, requested: str) -> ModelResponse:
    """The canonical turn of a gathered Message (`runaway`: the parts kept of one stopped as a runaway)."""
    parts = _parts(raw) if runaway is None else runaway
    content = {"role": "model", "parts": parts} if parts else None
    calls, text = read_model_turn(content)
    usage = _usage(raw.usage)
    log.info("model call done provider=%s prompt_tokens=%d candidate_tokens=%d cached_tokens=%d "
             "cache_write_tokens=%d calls=%d", PROVIDER, usage.prompt_tokens, usage.candidate_tokens,
             usage.cached_tokens, usage.cache_write_tokens, len(calls))
    stop = raw.stop_reason or ""
    finish = "repetition" if runaway is not None else _FINISH.get(stop, stop)
    return ModelResponse(content, calls, text, usage, PROVIDER, getattr(raw, "model", "") or requested, finish)


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    read = raw.cache_read_input_tokens or 0
    written = raw.cache_creation_input_tokens or 0
    return Usage(prompt_tokens=(raw.input_tokens or 0) + read + written, candidate_tokens=raw.output_tokens or 0,
                 cached_tokens=read, cache_write_tokens=written)
