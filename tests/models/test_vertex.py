"""Gemini and Claude on Vertex AI against the fakes: a service-account file's token (from a fake Google
token endpoint) reaches the Vertex AI paths of the project and region the config names; Claude there without
structured output is answered prompt-only."""

from __future__ import annotations

from pathlib import Path

from hummingbird_agent.models import ModelRequest, user_text
from hummingbird_agent.models.claude import ClaudeModel, ClaudeSettings
from hummingbird_agent.models.gemini import GeminiModel, GeminiSettings
from tests.servers.anthropic import AnthropicServer
from tests.servers.gemini import GeminiServer, text_turn
from tests.servers.google_oauth import ACCESS_TOKEN, GoogleTokenServer

REQUEST = ModelRequest("vertex-model", "SYSTEM", [user_text("hi")])


async def test_gemini_on_vertex_ai_with_a_service_account(tmp_path: Path, gemini_server: GeminiServer) -> None:
    gemini_server.bearer = ACCESS_TOKEN
    gemini_server.script(text_turn("from vertex"))
    with GoogleTokenServer() as oauth:
        credentials = str(oauth.service_account_file(tmp_path))
        model = GeminiModel(GeminiSettings(base_url=gemini_server.url, vertex_project="proj-1",
                                           vertex_location="europe-west4", credentials_file=credentials))
        response = await model.generate(REQUEST)
        await model.aclose()
        assert len(oauth.assertions) == 1
    assert response.text == "from vertex"
    [request] = gemini_server.requests
    assert "/projects/proj-1/locations/europe-west4/publishers/google/models/vertex-model:streamGenerateContent" \
        in request.path


async def test_claude_on_vertex_ai_with_a_service_account(tmp_path: Path, anthropic_server: AnthropicServer) -> None:
    anthropic_server.bearer = ACCESS_TOKEN
    anthropic_server.script(text_turn("claude via vertex"))
    with GoogleTokenServer() as oauth:
        credentials = str(oauth.service_account_file(tmp_path))
        model = ClaudeModel(ClaudeSettings(base_url=anthropic_server.url, vertex_project="proj-2",
                                           vertex_region="us-east5", credentials_file=credentials))
        response = await model.generate(REQUEST)
        await model.aclose()
        assert len(oauth.assertions) == 1
    assert response.text == "claude via vertex"
    [call] = anthropic_server.generate_calls
    assert call.model == "vertex-model" and "model" not in call.wire  # Vertex AI takes the model from the path
    assert "/projects/proj-2/locations/us-east5/publishers/anthropic/models/vertex-model:streamRawPredict" \
        in anthropic_server.requests[0].path


async def test_claude_on_vertex_ai_without_structured_output_answers_prompt_only(
        tmp_path: Path, anthropic_server: AnthropicServer) -> None:
    # Vertex AI disables structured output for partner models unless the organisation policy allows it.
    anthropic_server.bearer = ACCESS_TOKEN
    anthropic_server.refuses_output_config = frozenset({"vertex-model"})
    anthropic_server.script(text_turn('{"cause": "a"}'), text_turn('{"cause": "b"}'))
    schema = {"type": "object", "properties": {"cause": {"type": "string"}}}
    asked = ModelRequest("vertex-model", "Extract.", [user_text("log")], json_output=True, response_schema=schema)
    with GoogleTokenServer() as oauth:
        model = ClaudeModel(ClaudeSettings(base_url=anthropic_server.url, vertex_project="proj-2",
                                           vertex_region="us-east5",
                                           credentials_file=str(oauth.service_account_file(tmp_path))))
        answers = [(await model.generate(asked)).text for _ in range(2)]
        await model.aclose()
    assert answers == ['{"cause": "a"}', '{"cause": "b"}']
    assert ["output_config" in r.json() for r in anthropic_server.requests] == [True, False, False]
    assert all(":streamRawPredict" in r.path for r in anthropic_server.requests)
