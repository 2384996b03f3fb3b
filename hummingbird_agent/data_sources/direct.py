"""Data-source tools called directly by code (not by a model): the tools a workflow declares, with
their read tokens bound in, and the repository-file reader the extraction strategies use."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, cast

from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.data_sources import register_selected
from hummingbird_agent.tools.base import ToolDef, ToolResult
from hummingbird_agent.tools.registry import ToolRegistry, argument_problem

log = logging.getLogger(__name__)


class ReadTools:
    """The data-source tools a workflow declares, called directly by code (their read token is bound in)."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolDef] = {}
        self.gaps: list[str] = []
        self.last_problem = ""
        """Why the last call that returned None failed (its gap is said once, this every time)."""

    def register_data_source(self, source: str, tools: Sequence[ToolDef], tool_notes: str = "",
                             response_metadata: Mapping[str, Any] | None = None) -> None:
        self._tools.update({t.name: t for t in tools})

    @staticmethod
    def declared(loaded: LoadedConfig, workflow: str, project: str) -> ReadTools:
        tools = ReadTools()
        tools.gaps += register_selected(cast(ToolRegistry, tools), loaded, workflow, project)
        return tools

    async def call(self, name: str, **args: Any) -> Any:
        """The tool's output (a stream is returned unread), or None with the reason kept in `gaps`."""
        tool = self._tools.get(name)
        problem = f"{name} is not available" if tool is None else argument_problem(tool.parameters, args)
        if tool is None or problem:
            self.last_problem = problem or f"{name} is not available"
            self.gaps.append(problem or name)
            return None
        output = await asyncio.to_thread(tool.handler, **args)
        if isinstance(output, ToolResult) and not output.ok:
            self.last_problem = str(output.content)
            if str(output.content) not in self.gaps:  # a token that cannot read the project: stated once
                self.gaps.append(str(output.content))
            return None
        return output


class WorkflowFiles:
    """Repository files through the GitLab data source a workflow declares (RepoFiles of the strategies).
    Each read registers the tools afresh (no request is made by that), so no state outlives a read."""

    def __init__(self, loaded: LoadedConfig, workflow: str) -> None:
        self._loaded, self._workflow = loaded, workflow

    async def read(self, project: str, path: str, ref: str) -> str | None:
        """The file's text, or None (logged) when it or the data source is unavailable."""
        text = await self._call(project, f"{path} at {ref[:12]}", "gitlab_get_file_at_ref", path=path, ref=ref)
        return text if isinstance(text, str) else None

    async def ci_config_path(self, project: str) -> str | None:
        """The project's `ci_config_path` setting ("" when unset), or None (logged) when it cannot be read."""
        settings = await self._call(project, "the settings", "gitlab_get_project")
        return str(settings.get("ci_config_path") or "") if isinstance(settings, Mapping) else None

    async def _call(self, project: str, what: str, tool: str, **args: Any) -> Any:
        if self._workflow not in self._loaded.config.workflows:
            return None
        tools = ReadTools.declared(self._loaded, self._workflow, project)
        output = await tools.call(tool, project=project, **args)
        if output is None:
            log.info("%s of %s not read: %s", what, project, "; ".join(tools.gaps))
        return output
