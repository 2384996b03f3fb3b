"""The python-gitlab calls every GitLab read tool shares: errors as one-line results, lazy projects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import gitlab

from hummingbird_agent.errors import AgentError, TransientError
from hummingbird_agent.gitlab.error_map import map_gitlab_errors
from hummingbird_agent.tools.base import ToolResult

T = TypeVar("T")


def call(context: str, fn: Callable[[], T]) -> T | ToolResult:
    """Run a python-gitlab call; its errors become a one-line error result (typed by map_gitlab_errors)."""
    try:
        with map_gitlab_errors(context):
            return fn()
    except TransientError as exc:
        return ToolResult.error("unavailable", str(exc))
    except AgentError as exc:
        return ToolResult.error("not_found" if "HTTP 404" in str(exc) else "gitlab_error", str(exc))


def project_of(gl: gitlab.Gitlab, project: str | int) -> Any:
    return gl.projects.get(project, lazy=True)
