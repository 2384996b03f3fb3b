"""The Gemini adapter against the scripted Gemini server, through the real google-genai client."""

from __future__ import annotations

import base64
import json

import pytest

from hummingbird_agent.errors import PermanentError, TransientError
from hummingbird_agent.models import GeminiModel, ModelRequest, ToolCall, ToolDeclaration, Usage, tool_message
from hummingbird_agent.models.errors import ModelRateLimited
from hummingbird_agent.models.gemini import GeminiSettings
from hummingbird_agent.models.retry import RetryPolicy
from tests.servers.gemini import GeminiServer, function_call_turn, model_turn, text_turn, usage

TOOL = ToolDeclaration("sandbox_exec", "run", {"type": "object", "properties": {"command": {"type": "string"}}})


def make_model(server: GeminiServer, retries: int = 2) -> GeminiModel:
    return GeminiModel(GeminiSettings("test-key", server.url, "v1beta"), RetryPolicy(retries, 0.01))


def request(contents: list[dict], tools_enabled: bool = True) -> ModelRequest:
    return ModelRequest("gemini-2.5-pro", "SYSTEM", contents, (TOOL,), tools_enabled)


async def test_request_shape_and_function_call_response(gemini_server: GeminiServer) -> None:
    gemini_server.script(function_call_turn("sandbox_exec", {"command": "ls"}, usage_metadata=usage(120, 7, 100)))
    model = make_model(gemini_server)
    call = ToolCall("sandbox_exec", {"command": "pwd"})
    history = [
        {"role": "user", "parts": [{"text": "{}"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "sandbox_exec", "args": {"command": "pwd"}}}]},
        tool_message([call], [{"result": "/tmp/data"}]),
    ]
    response = await model.generate(request(history))
    await model.aclose()
    body = gemini_server.generate_calls[0].body
    assert gemini_server.generate_calls[0].model == "gemini-2.5-pro"
    assert body["systemInstruction"]["parts"] == [{"text": "SYSTEM"}]
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]  # the tool role goes as user
    assert body["contents"][2]["parts"][0]["functionResponse"]["response"] == {"result": "/tmp/data"}
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "sandbox_exec"
    assert body["toolConfig"]["functionCallingConfig"]["mode"] == "AUTO"
    assert response.calls == (ToolCall("sandbox_exec", {"command": "ls"}),)
    assert response.usage == Usage(prompt_tokens=120, candidate_tokens=7, cached_tokens=100)


async def test_final_turn_sends_mode_none(gemini_server: GeminiServer) -> None:
    gemini_server.script(text_turn("done"))
    model = make_model(gemini_server)
    response = await model.generate(request([{"role": "user", "parts": [{"text": "hi"}]}], tools_enabled=False))
    await model.aclose()
    assert gemini_server.generate_calls[0].body["toolConfig"]["functionCallingConfig"]["mode"] == "NONE"
    assert response.text == "done" and response.content == {"role": "model", "parts": [{"text": "done"}]}


async def test_model_content_round_trips_losslessly_through_json(gemini_server: GeminiServer) -> None:
    signature = base64.b64encode(b"\x00\x01opaque-signature\xff").decode()
    part = {"functionCall": {"name": "sandbox_exec", "args": {"command": "ls", "n": [1, {"a": None}]}, "id": "c1"},
            "thoughtSignature": signature}
    gemini_server.script(model_turn({"text": "Let me look."}, part), text_turn("ok"))
    model = make_model(gemini_server)
    first = await model.generate(request([{"role": "user", "parts": [{"text": "go"}]}]))
    stored = json.loads(json.dumps(first.content))  # what context.json keeps
    assert stored["parts"][1]["functionCall"] == part["functionCall"]
    assert signature_bytes(stored["parts"][1]) == b"\x00\x01opaque-signature\xff"
    await model.generate(request([{"role": "user", "parts": [{"text": "go"}]}, stored]))
    await model.aclose()
    resent = gemini_server.generate_calls[1].body["contents"][1]
    assert resent["parts"][0] == {"text": "Let me look."}
    assert resent["parts"][1]["functionCall"] == part["functionCall"]
    assert signature_bytes(resent["parts"][1]) == b"\x00\x01opaque-signature\xff"


def signature_bytes(part: dict) -> bytes:
    """Gemini accepts standard and URL-safe base64 for bytes fields; the bytes are what must survive."""
    return base64.urlsafe_b64decode(part["thoughtSignature"].replace("+", "-").replace("/", "_"))


def generate_requests(server: GeminiServer) -> int:
    return sum(1 for r in server.requests if r.path.endswith(":streamGenerateContent"))


async def test_empty_candidate_is_an_empty_response(gemini_server: GeminiServer) -> None:
    gemini_server.script(model_turn())
    model = make_model(gemini_server)
    response = await model.generate(request([{"role": "user", "parts": [{"text": "go"}]}]))
    await model.aclose()
    assert response.content is None and response.empty


async def test_429_and_503_are_retried(gemini_server: GeminiServer) -> None:
    gemini_server.fail_next(1, 429)
    gemini_server.fail_next(1, 503)
    gemini_server.script(text_turn("finally"))
    model = make_model(gemini_server)
    response = await model.generate(request([{"role": "user", "parts": [{"text": "go"}]}]))
    await model.aclose()
    assert response.text == "finally" and generate_requests(gemini_server) == 3


async def test_a_model_that_stays_unavailable_is_a_transient_error(gemini_server: GeminiServer) -> None:
    gemini_server.fail_next(10, 503)
    model = make_model(gemini_server, retries=2)
    try:
        with pytest.raises(TransientError, match="model unavailable after 3 attempts: Gemini API error 503"):
            await model.generate(request([{"role": "user", "parts": [{"text": "go"}]}]))
    finally:
        await model.aclose()
    assert generate_requests(gemini_server) == 3


async def test_a_refused_request_is_permanent_and_not_retried(gemini_server: GeminiServer) -> None:
    model = GeminiModel(GeminiSettings("wrong-key", gemini_server.url), RetryPolicy(base_s=0.01))
    try:
        with pytest.raises(PermanentError, match="Gemini API error 400 INVALID_ARGUMENT: API key not valid") as info:
            await model.generate(request([{"role": "user", "parts": [{"text": "go"}]}]))
    finally:
        await model.aclose()
    assert "wrong-key" not in str(info.value) and generate_requests(gemini_server) == 1


async def test_an_unreachable_server_is_transient(gemini_server: GeminiServer) -> None:
    url = gemini_server.url
    gemini_server.stop()
    model = GeminiModel(GeminiSettings("test-key", url), RetryPolicy(1, 0.01))
    try:
        with pytest.raises(TransientError, match="unreachable"):
            await model.generate(request([{"role": "user", "parts": [{"text": "go"}]}]))
    finally:
        await model.aclose()


async def test_a_429_waits_the_retry_info_delay_gemini_sends(gemini_server: GeminiServer) -> None:
    body = gemini_server.error_body(429, "Resource has been exhausted")
    body["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3600s"}]
    gemini_server.fail_next(1, 429, body=body)
    model = make_model(gemini_server)
    with pytest.raises(ModelRateLimited) as raised:
        await model.generate(request([{"role": "user", "parts": [{"text": "hi"}]}]))
    await model.aclose()
    assert raised.value.retry_after_s == 3600 and len(gemini_server.requests) == 1  # beyond the cap: not retried


async def test_a_history_gemini_cannot_carry_is_refused_before_sending_without_its_text(
        gemini_server: GeminiServer) -> None:
    model = make_model(gemini_server)
    bad = [{"role": "user", "parts": [{"text": "go"}]}, {"role": "user", "parts": [{"txet": "hostile secret"}]}]
    with pytest.raises(PermanentError, match=r"not valid Gemini contents: message 1 at parts\.0\.txet") as info:
        await model.generate(request(bad))
    await model.aclose()
    assert "hostile secret" not in str(info.value) and generate_requests(gemini_server) == 0
