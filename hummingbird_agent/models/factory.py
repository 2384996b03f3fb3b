"""Build the configured Model: the Gemini adapter or the scripted replay."""

from __future__ import annotations

from hummingbird_agent.config import LoadedConfig
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.models.base import Model
from hummingbird_agent.models.gemini import GeminiModel
from hummingbird_agent.models.scripted import ScriptedModel


def build_model(loaded: LoadedConfig) -> Model:
    """The model named by `model.provider`; ConfigError when its key or script is missing."""
    cfg = loaded.config.model
    if cfg.provider == "scripted":
        if not cfg.script:
            raise ConfigError("model.script: a scripted model needs a turns file")
        return ScriptedModel.from_file(loaded.resolve(cfg.script))
    api_key = loaded.secret(cfg.api_key_env)
    if not api_key:
        raise ConfigError(f"model.api_key_env: environment variable {cfg.api_key_env} is not set")
    return GeminiModel(api_key, base_url=cfg.base_url, api_version=cfg.api_version)
