"""Streamed answers, on every adapter against its fake speaking the provider's streaming format: a slow but steady
stream is never cut however long it takes; a silent one is cut (retried on a hosted API, not on a self-hosted
server, and the error says so); a runaway repetition is stopped early with what came before kept."""

from __future__ import annotations

import pytest

from hummingbird_agent.models import ModelRequest, ToolDeclaration, user_text
from hummingbird_agent.models.errors import ModelOverloaded, ModelTimedOut
from hummingbird_agent.models.retry import RetryPolicy
from hummingbird_agent.models.runaway import RepeatLimits
from hummingbird_agent.models.stream import StreamLimits
from tests.models.conftest import Provider, make_adapter
from tests.servers.gemini import function_call_part, model_turn, text_part, text_turn
from tests.servers.model_common import Pace, sse

# Small injected limits: one second of silence cuts a stream; the fakes pace their events well inside it.
LIMITS = StreamLimits(first_event_s=1.0, silence_s=1.0)
STEADY = Pace(delay_s=0.2)
STALLED = Pace(stall_after=2, stall_s=4.0)
REQUEST = ModelRequest("test-model", "SYSTEM", [user_text("explain the failure")])
TOOL = ToolDeclaration("get_job_log", "log of a job", {"type": "object", "properties": {"job": {"type": "integer"}}})
ANSWER = " ".join(f"word{i}" for i in range(60))  # 20 streamed pieces of 3 words


async def test_a_slow_steady_stream_is_not_cut(provider: Provider) -> None:
    model = make_adapter(provider.name, provider.server.url, limits=LIMITS)
    provider.server.pace = STEADY
    provider.server.script(model_turn(text_part(ANSWER), function_call_part("get_job_log", {"job": 7})))
    response = await model.generate(ModelRequest("test-model", "SYSTEM", [user_text("go")], (TOOL,)))
    await model.aclose()
    [stream] = provider.server.streams
    # The whole stream lasted longer than the silence limit (at least events x delay), yet nothing was cut.
    assert (stream.total - 1) * STEADY.delay_s > 3 * LIMITS.silence_s and stream.sent == stream.total
    assert response.text == ANSWER and response.finish_reason == "tool_calls"
    [call] = response.calls
    assert call.name == "get_job_log" and call.args == {"job": 7} and call.call_id != ""
    assert len(provider.calls) == 1


async def test_finish_reasons_are_read_from_the_stream(provider: Provider) -> None:
    model = make_adapter(provider.name, provider.server.url, limits=LIMITS)
    provider.server.script(text_turn("done"), text_turn("cut short", finish_reason="MAX_TOKENS"))
    reasons = [(await model.generate(REQUEST)).finish_reason for _ in range(2)]
    await model.aclose()
    assert reasons == ["stop", "max_tokens"]


async def test_a_silent_stream_is_cut_and_retried_on_a_hosted_api(provider: Provider) -> None:
    model = make_adapter(provider.name, provider.server.url, RetryPolicy(retries=1, base_s=0.01), LIMITS)
    provider.server.pace = STALLED
    provider.server.script(text_turn(ANSWER), text_turn(ANSWER))
    with pytest.raises(ModelTimedOut) as raised:
        await model.generate(REQUEST)
    await model.aclose()
    assert len(provider.calls) == 2  # retried once: a hosted API serves a new attempt elsewhere
    assert "the model went silent: no output for 1 s after" in str(raised.value)


@pytest.mark.parametrize("provider", ["openai"], indirect=True)
async def test_a_silent_self_hosted_generation_is_not_retried_and_says_so(provider: Provider) -> None:
    model = make_adapter("openai", provider.server.url, RetryPolicy(retries=3, base_s=0.01), LIMITS, self_hosted=True)
    provider.server.pace = STALLED
    provider.server.script(text_turn(ANSWER), text_turn(ANSWER))
    with pytest.raises(ModelTimedOut) as raised:
        await model.generate(REQUEST)
    await model.aclose()
    assert len(provider.calls) == 1
    assert str(raised.value) == ("openai: the model went silent: no output for 1 s after 18 characters; stopped and "
                                 "not retried: a self-hosted server would start the generation again from zero")


@pytest.mark.parametrize("provider", ["openai"], indirect=True)
async def test_a_server_silent_before_its_first_token_is_cut(provider: Provider) -> None:
    model = make_adapter("openai", provider.server.url, RetryPolicy(retries=3, base_s=0.01), LIMITS, self_hosted=True)
    provider.server.latency_s = 4.0  # no headers, no event: reading a long prompt, or hung
    provider.server.script(text_turn(ANSWER))
    with pytest.raises(ModelTimedOut, match=r"^openai: the model went silent: no output within 1 s; stopped and not "):
        await model.generate(REQUEST)
    await model.aclose()
    assert len(provider.calls) == 1


LOOP = "Intro: the job failed.\n\n" + "The build failed because of a missing header file.\n" * 300 + "The end.\n"


async def test_a_runaway_repetition_is_stopped_early(provider: Provider) -> None:
    model = make_adapter(provider.name, provider.server.url, limits=StreamLimits(repeat=RepeatLimits(min_times=4)))
    provider.server.pace = Pace(delay_s=0.01)
    provider.server.script(text_turn(LOOP))
    response = await model.generate(REQUEST)
    await model.aclose()
    kept = "Intro: the job failed.\n\nThe build failed because of a missing header file.\n"
    assert response.text.startswith(kept) and response.finish_reason == "repetition"
    assert response.text[len(kept):].strip() == ("[Hummingbird stopped this answer: the model wrote the same line 4 "
                                                  "times in a row; what came before the repeats is kept.]")
    [stream] = provider.server.streams
    assert stream.sent < stream.total // 4  # the stream was closed, not read to its end


# An error inside a stream that had started with HTTP 200, in each API's shape.
STREAM_ERRORS = {
    "anthropic": sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error"),
    "openai": sse({"error": {"message": "the server is overloaded", "type": "server_error", "code": 503}}),
    "gemini": sse({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
}


async def test_an_error_inside_a_stream_is_typed_and_retried(provider: Provider) -> None:
    model = make_adapter(provider.name, provider.server.url, RetryPolicy(retries=1, base_s=0.01), LIMITS)
    provider.server.pace = Pace(fail_after=3, failure=STREAM_ERRORS[provider.name])
    provider.server.script(text_turn(ANSWER), text_turn(ANSWER))
    with pytest.raises(ModelOverloaded, match="^model unavailable after 2 attempts"):
        await model.generate(REQUEST)
    await model.aclose()
    assert len(provider.calls) == 2
