"""What the fake model servers share: scripted turns written once in Gemini's shape (tests/servers/gemini.py
builders) and replayed by every fake in its own wire format, and each request recorded in a Gemini-shaped
view (`contents`, `systemInstruction`, `toolConfig`) so one assertion reads every provider's requests."""

from __future__ import annotations

import json
import math
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.servers.base import FakeHTTPServer, HTTPError

Turn = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]
Rule = Callable[[str, str], str]
"""`rule(system_text, user_text) -> answer text`: a model answering from the prompt alone, in any order."""


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One generation request: `body` is its Gemini-shaped view, `wire` what the SDK sent."""

    model: str
    body: dict[str, Any]
    wire: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Pace:
    """How a fake streams an answer: `delay_s` before every event after the first (a model writing slowly but
    steadily); after `stall_after` events, `stall_s` of silence (a stalled server) before the rest."""

    delay_s: float = 0.0
    stall_after: int | None = None
    stall_s: float = 0.0
    fail_after: int | None = None
    """After this many events, `failure` (the API's error event) ends the stream instead of the rest."""
    failure: bytes = b""


@dataclass(slots=True)
class StreamLog:
    """One streamed answer: events the fake had and events it wrote before the client went away."""

    total: int
    sent: int = 0


def paced(events: list[bytes], pace: Pace, record: list[StreamLog]) -> Iterator[bytes]:
    """The events of one streamed answer, written at `pace`; the count written lands in `record`."""
    log = StreamLog(len(events))
    record.append(log)
    for index, event in enumerate(events):
        if index and pace.delay_s:
            time.sleep(pace.delay_s)
        if pace.stall_after is not None and index == pace.stall_after:
            time.sleep(pace.stall_s)
        if pace.fail_after is not None and index == pace.fail_after:
            yield pace.failure
            return
        yield event
        log.sent += 1


_WORDS = re.compile(r"\S+\s*|\s+")


def text_pieces(text: str, words: int = 3) -> list[str]:
    """`text` in pieces of a few words, as a model streams it (joined, they are `text` again)."""
    found = _WORDS.findall(text)
    return ["".join(found[i:i + words]) for i in range(0, len(found), words)] or [text]


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event (JSON data)."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def tokens(value: Any) -> int:
    """A rough token count (4 bytes a token) of a JSON value, at least 1."""
    return max(1, len(json.dumps(value, separators=(",", ":"))) // 4)


_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_text_tokens(text: str) -> int:
    """The fakes' tokenizer for count endpoints: each punctuation character one token, each word one token per 4
    characters; unlike bytes / 4, JSON-heavy text counts high, as real tokenizers count it."""
    return sum(math.ceil(len(piece) / 4) if piece[0].isalnum() or piece[0] == "_" else 1
               for piece in _TOKEN.findall(text))


def turn_parts(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of a Gemini-shaped scripted turn (none for an empty candidate)."""
    candidates = turn.get("candidates") or [{}]
    return list((candidates[0].get("content") or {}).get("parts") or [])


def turn_usage(turn: dict[str, Any]) -> dict[str, int] | None:
    """(prompt, output, cached) of a scripted turn's usageMetadata, None when the fake should estimate."""
    meta = turn.get("usageMetadata")
    if meta is None:
        return None
    return {"prompt": meta.get("promptTokenCount", 0), "output": meta.get("candidatesTokenCount", 0),
            "cached": meta.get("cachedContentTokenCount", 0)}


def parse_response(text: Any) -> Any:
    """A tool result's content back as the object the agent sent (JSON text), else the raw value."""
    if isinstance(text, list):
        text = "".join(b.get("text", "") for b in text if isinstance(b, dict))
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def prompt_texts(body: dict[str, Any]) -> tuple[str, str]:
    """(system text, user text) of a Gemini-shaped generation request."""
    system = "".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts", []))
    user = "".join(str(p.get("text", "")) for c in body.get("contents") or [] for p in c.get("parts", []))
    return system, user


def rule_turn(rule: Rule) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A scripted turn answering any request with the text `rule` gives for its prompt."""
    def turn(body: dict[str, Any]) -> dict[str, Any]:
        text = rule(*prompt_texts(body))
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP",
                                "index": 0}]}
    return turn


class ScriptedModelServer(FakeHTTPServer):
    """Base of the Anthropic and OpenAI fakes: a queue of turns, a record of generation calls."""

    def __init__(self, *, api_key: str | None = "test-key", latency_s: float = 0.0) -> None:
        super().__init__()
        self.api_key = api_key
        self.latency_s = latency_s
        self.turns: deque[Turn] = deque()
        self.generate_calls: list[ModelCall] = []
        self.responder: Turn | None = None  # answers every call once the scripted turns are used up
        self.served = 0
        self.refuses_temperature: frozenset[str] = frozenset()
        """Models that refuse a temperature with a 400, as this provider's newer models do."""
        self.pace = Pace()
        """How streamed answers are written (slowly, with a stall)."""
        self.streams: list[StreamLog] = []

    def script(self, *turns: Turn) -> None:
        """Append model turns: Gemini-shaped responses (tests/servers/gemini.py builders), the provider's
        own response dicts, or callables(gemini_view_of_the_request) -> either."""
        self.turns.extend(turns)

    def respond_with(self, rule: Rule) -> None:
        """Answer every call the scripted turns do not cover from its prompt: `rule(system, user)`."""
        self.responder = rule_turn(rule)

    @property
    def prompts(self) -> list[tuple[str, str]]:
        """(system, user) of every generation call, in the order received."""
        return [prompt_texts(c.body) for c in self.generate_calls]

    def next_turn(self, view: dict[str, Any]) -> dict[str, Any]:
        turn = next_turn_of(self.turns, self.responder)
        if turn is None:
            message = f"scripted {self.name} server: no model turns left ({self.served} served)"
            self.errors.append(message)
            raise HTTPError(500, message)
        self.served += 1
        return turn(view) if callable(turn) else json.loads(json.dumps(turn))


def next_turn_of(turns: deque[Turn], responder: Turn | None) -> Turn | None:
    """The next scripted turn, else the responder; safe when the server's threads ask at once."""
    try:
        return turns.popleft()
    except IndexError:
        return responder


PROVIDERS = ("gemini", "anthropic", "openai")


def model_section(provider: str, server: FakeHTTPServer, key_env: str = "MODEL_API_KEY") -> dict[str, Any]:
    """The config.yaml `model` section that points `provider` at its fake."""
    return {"provider": provider, "api_key_env": key_env, "base_url": server.url}
