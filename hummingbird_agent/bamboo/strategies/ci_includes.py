"""A project's CI config (the file its settings name) at a ref, merged with the files it includes from its own
repository (nested includes followed, each file read once, so a cycle ends), read through the strategies'
RepoFiles within the files and characters budgets. Files that are missing, too large or unparsable are left
out of the merge."""

from __future__ import annotations

import logging
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.strategies.base import RepoFiles
from hummingbird_agent.bamboo.strategies.ci_config import (
    CI_CONFIG_PATH,
    local_includes,
    own_config_path,
    parse_config,
    with_includes,
)
from hummingbird_agent.errors import AgentError

log = logging.getLogger(__name__)


class _Reader:
    def __init__(self, files: RepoFiles, project: str, ref: str) -> None:
        self._files, self._project, self._ref = files, project, ref
        self._read: set[str] = set()
        self._chars = 0

    async def merged(self, path: str) -> dict[str, Any] | None:
        if path in self._read:
            return None
        if len(self._read) >= budgets.BAMBOO_CI_CONFIG_MAX_FILES:
            log.info("%s of %s not read: %d CI config files read already", path, self._project, len(self._read))
            return None
        self._read.add(path)
        text = await self._files.read(self._project, path, self._ref)
        if text is None:
            return None
        if self._chars + len(text) > budgets.BAMBOO_CI_CONFIG_TOTAL_CHARS:
            log.info("%s of %s not parsed: CI config files over %d characters together", path, self._project,
                     budgets.BAMBOO_CI_CONFIG_TOTAL_CHARS)
            return None
        self._chars += len(text)
        config = parse_config(text)
        if config is None:
            return None
        included = [part for child in local_includes(config) if (part := await self.merged(child)) is not None]
        return with_includes(config, included)


async def ci_config_file(files: RepoFiles, project: str) -> str | None:
    """The project's CI config file in its own repository (its `ci_config_path` setting, `.gitlab-ci.yml` when
    unset or unreadable), or None when the setting names another project's file or a URL. Never raises."""
    try:
        setting = await files.ci_config_path(project)
    except AgentError as exc:
        log.warning("CI config path of %s not read: %s", project, exc)
        setting = None
    if setting is None:
        log.info("CI config path of %s unknown; reading %s", project, CI_CONFIG_PATH)
    path = own_config_path(setting)
    if path is None:
        log.info("CI config of %s is outside its repository (%s); not read", project, setting)
    return path


async def read_ci_config(files: RepoFiles, project: str, ref: str, path: str = CI_CONFIG_PATH,
                         ) -> dict[str, Any] | None:
    """The CI config file `path` at `ref` merged with its same-repository includes as GitLab merges them, or
    None when it cannot be read or parsed. Raises what `files.read` raises."""
    return await _Reader(files, project, ref).merged(path)
