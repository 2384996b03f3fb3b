"""Prompt files of the knowledge base (Markdown under prompts/), rendered strictly."""

from __future__ import annotations

from importlib import resources
from string import Template

from hummingbird_agent.errors import ConfigError


def load_prompt(name: str) -> str:
    """The text of prompts/<name>.md."""
    return resources.files(__name__).joinpath(f"{name}.md").read_text(encoding="utf-8")


def render(name: str, **values: str) -> str:
    """prompts/<name>.md with its `$placeholders` filled; a missing value is an error, never blank."""
    try:
        return Template(load_prompt(name)).substitute(values)
    except KeyError as exc:
        raise ConfigError(f"prompt {name}: no value for ${exc.args[0]}") from None
