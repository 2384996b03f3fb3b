"""ScriptedModel: replays model turns from a file (demos, replays, loop tests); no network.

Turns file (YAML or JSON): `turns: [{text: ..., calls: [{name, args}], prompt_tokens: N}, ...]` and an
optional `latency_s` every turn waits, like a provider's response time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hummingbird_agent.errors import ConfigError, PermanentError
from hummingbird_agent.models.base import ModelRequest, ModelResponse, Usage
from hummingbird_agent.models.contents import read_model_turn, wire_size_bytes

# Rough bytes per token of JSON-heavy prompts; used only when a turn gives no prompt_tokens.
_BYTES_PER_TOKEN = 4


class ScriptedCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    args: Any = Field(default_factory=dict)


class ScriptedTurn(BaseModel):
    """One model turn: text, function calls, or neither (an empty response)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    text: str = ""
    calls: tuple[ScriptedCall, ...] = ()
    prompt_tokens: int | None = Field(None, ge=0)
    """Reported prompt tokens; default: an estimate from the request size."""


class _Script(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    turns: tuple[ScriptedTurn, ...]
    latency_s: float = Field(0.0, ge=0, le=600)
    """Seconds each turn takes, like a provider's response time (demos, benchmarks)."""
    per_conversation: bool = False
    """Replay the same turns in every conversation (turn N answers a request holding N model turns) instead
    of one shared sequence; for many concurrent runs (benchmarks) each run then gets the whole script."""


class ScriptedModel:
    """The Model protocol over a fixed list of turns. Records every request in `requests`."""

    def __init__(self, turns: Sequence[ScriptedTurn], latency_s: float = 0.0, per_conversation: bool = False) -> None:
        self._turns = list(turns)
        self._next = 0
        self._latency_s = latency_s
        self._per_conversation = per_conversation
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_file(cls, path: Path) -> ScriptedModel:
        """Load a turns file; ConfigError (one line) when it is unreadable or malformed."""
        try:
            script = _Script.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
            return cls(script.turns, script.latency_s, script.per_conversation)
        except OSError as exc:
            raise ConfigError(f"model.script: cannot read {path.name} ({exc.strerror})") from None
        except yaml.YAMLError:
            raise ConfigError(f"model.script: {path.name} is not valid YAML or JSON") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"model.script: {path.name}: {where}: {first['msg']}") from None

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        index = self._turn_index(request)
        if index >= len(self._turns):
            raise PermanentError(f"scripted model: no turns left ({len(self._turns)} played)")
        turn = self._turns[index]
        if self._latency_s:
            await asyncio.sleep(self._latency_s)
        parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
        allowed = turn.calls if request.tools_enabled else ()
        parts += [{"functionCall": {"name": c.name, "args": c.args}} for c in allowed]
        content = {"role": "model", "parts": parts} if parts else None
        calls, text = read_model_turn(content)
        prompt = turn.prompt_tokens
        if prompt is None:
            prompt = wire_size_bytes(request) // _BYTES_PER_TOKEN
        usage = Usage(prompt_tokens=prompt, candidate_tokens=len(str(parts)) // _BYTES_PER_TOKEN)
        return ModelResponse(content=content, calls=calls, text=text, usage=usage, provider="scripted",
                             model=request.model)

    def _turn_index(self, request: ModelRequest) -> int:
        if self._per_conversation:
            return sum(1 for content in request.contents if content.get("role") == "model")
        self._next += 1
        return self._next - 1

    async def aclose(self) -> None:
        return None
