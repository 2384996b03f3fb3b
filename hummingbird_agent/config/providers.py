"""The config.yaml sections that say where a model is served: the `model` section, a workflow's own model and
the connection keys they share (composed into `Config` by schema.py, whose field docstring rules apply)."""

from __future__ import annotations

from typing import Annotated, Literal

from hummingbird_agent import budgets
from hummingbird_agent.config.fields import Provider, StrictModel, whole


class ModelConnection(StrictModel):
    """Where a model is served; every key unset here falls back to the top-level `model` section."""

    provider: Provider | None = None
    """`gemini` (AI Studio or Vertex AI), `anthropic` (Claude API or Claude on Vertex AI) or `openai` (any
    OpenAI-compatible Chat Completions endpoint: OpenAI, Azure OpenAI, vLLM, Ollama)."""
    api_key_env: str | None = None
    """Env var holding the API key; default GEMINI_API_KEY / ANTHROPIC_API_KEY / OPENAI_API_KEY. An
    `openai` endpoint with a `base_url` (a local server) may run without one."""
    base_url: str | None = None
    """Override of the API base URL (a gateway, a local server, or a fake in tests)."""
    vertex_project: str | None = None
    """Google Cloud project: serve `gemini` or `anthropic` through Vertex AI instead of an API key."""
    vertex_location: str | None = None
    """Vertex AI region (`us-east5`, `europe-west1`, ...); default `global`."""
    credentials_file: str | None = None
    """Vertex AI: service-account JSON file, relative to the config file; unset uses Application Default
    Credentials (GOOGLE_APPLICATION_CREDENTIALS, workload identity, gcloud)."""
    max_output_tokens: Annotated[int | None, whole(1, 1_000_000, "tokens", optional=True)] = None
    """Output tokens one call may produce. Unset: 2048 on a self-hosted `openai` endpoint (a `base_url` other
    than api.openai.com or Azure OpenAI), 8192 on `anthropic`, the provider's own limit on hosted `gemini` and
    `openai`."""
    recover_text_tool_calls: bool | None = None
    """Read a tool call the model wrote as JSON text (no native tool call) as a call (`openai` only). Unset: on
    for a self-hosted endpoint, off for hosted APIs."""


class WorkflowModel(ModelConnection):
    """A workflow's own model: a name, and optionally another provider or endpoint."""

    name: str
    """Model name passed to the provider."""


class ModelConfig(StrictModel):
    provider: Literal["gemini", "anthropic", "openai", "scripted"] = "gemini"
    """`gemini`, `anthropic` or `openai` (see ModelConnection); `scripted` replays turns from `script` (demos,
    replays, tests)."""
    name: str | None = None
    """Model of workflows that name none; default gemini-2.5-pro / claude-sonnet-5 / gpt-4.1."""
    api_key_env: str | None = None
    """Env var holding the API key; default GEMINI_API_KEY / ANTHROPIC_API_KEY / OPENAI_API_KEY."""
    base_url: str | None = None
    """Override of the API base URL (a proxy, a local OpenAI-compatible server, or a fake in tests)."""
    api_version: str = "v1beta"
    """Gemini API (not Vertex AI) REST version path segment."""
    vertex_project: str | None = None
    """Google Cloud project: serve `gemini` or `anthropic` through Vertex AI instead of an API key."""
    vertex_location: str | None = None
    """Vertex AI region; default `global`."""
    credentials_file: str | None = None
    """Vertex AI: service-account JSON file, relative to the config file; unset uses Application Default
    Credentials."""
    max_output_tokens: Annotated[int | None, whole(1, 1_000_000, "tokens", optional=True)] = None
    """Output tokens one call may produce. Unset: 2048 on a self-hosted `openai` endpoint (a `base_url` other
    than api.openai.com or Azure OpenAI), 8192 on `anthropic`, the provider's own limit on hosted `gemini` and
    `openai`."""
    recover_text_tool_calls: bool | None = None
    """Read a tool call the model wrote as JSON text (no native tool call) as a call (`openai` only). Unset: on
    for a self-hosted endpoint, off for hosted APIs."""
    script: str | None = None
    """For provider `scripted`: path of the turns file, relative to the config file."""
    context_limit_tokens: Annotated[int, whole(1000, 2_000_000, "tokens")] = budgets.CONTEXT_LIMIT_TOKENS
    """Prompt tokens per call before the final turn is forced."""
