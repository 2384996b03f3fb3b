"""A job's definition from a GitLab CI config (the `gitlab_ci` strategy's prefetch hint): the job's own
keys with `extends` and `default:` applied, as short YAML, and the pieces for merging a config with the
files it includes from its own repository. Pure; anything unparsable gives None."""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.strategies.causal import clip

log = logging.getLogger(__name__)
CI_CONFIG_PATH = ".gitlab-ci.yml"
# What explains how a job ran: where, with what, which commands, and when it runs.
JOB_KEYS = ("stage", "image", "services", "tags", "before_script", "script", "after_script", "rules", "only",
            "except", "allow_failure", "timeout")
_DEFAULTS = ("image", "services", "tags", "before_script", "after_script", "timeout")
_PARALLEL = re.compile(r"(?:\s+\d+/\d+|:\s*\[.*\])$")  # `test 2/4`, `test: [py3.12, linux]`
_MAX_EXTENDS = 11  # GitLab's nesting limit for `extends`
# `include` entries naming another project, a template, a component or a URL: not read (no network, and
# another project needs other permissions). Wildcards and variables in a path cannot be expanded here.
_ELSEWHERE = ("remote", "project", "template", "component")
_UNEXPANDED = re.compile(r"[*?$\[]|^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
# A project's `ci_config_path` naming another project's file (`path@group/project[:ref]`) or a URL.
_OUTSIDE = re.compile(r"@|^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


class _Loader(yaml.SafeLoader):
    """Safe YAML that keeps GitLab's custom tags (`!reference [.setup, script]`) as plain values."""


def _tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.SequenceNode):
        return [f"!{suffix}", *loader.construct_sequence(node, deep=True)]
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]  # the stubs cannot say the rest is a ScalarNode


_Loader.add_multi_constructor("!", _tagged)


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """GitLab's deep merge (`extends`, `include`): hashes merge at any depth, anything else is replaced by
    the value from `over`."""
    out = dict(base)
    for key, value in over.items():
        seen = out.get(key)
        out[key] = _merge(seen, value) if isinstance(seen, Mapping) and isinstance(value, Mapping) else value
    return out


def _resolved(config: Mapping[str, Any], name: str, depth: int = 0) -> dict[str, Any] | None:
    job = config.get(name)
    if not isinstance(job, Mapping) or depth > _MAX_EXTENDS:
        return None
    parents = job.get("extends") or []
    merged: dict[str, Any] = {}
    for parent in [parents] if isinstance(parents, str) else parents if isinstance(parents, list) else []:
        found = _resolved(config, str(parent), depth + 1)
        merged = _merge(merged, found) if found else merged
    return _merge(merged, {k: v for k, v in job.items() if k != "extends"})


def own_config_path(setting: str | None) -> str | None:
    """The file a project's `ci_config_path` setting names in its own repository: `.gitlab-ci.yml` when the
    setting is empty or unknown, None when it names another project's file or a URL (not read)."""
    value = (setting or "").strip()
    if not value:
        return CI_CONFIG_PATH
    return None if _OUTSIDE.search(value) or not value.strip("/") else value.lstrip("/")


def _content(documents: Sequence[Any]) -> Any:
    """A file's config as GitLab reads it: after a `spec:` header document (CI/CD inputs) the second document,
    else the first; `$[[ inputs.x ]]` placeholders stay text. More than two documents: not a config (GitLab
    versions disagree on which one counts)."""
    if not documents or len(documents) > 2:
        return None
    header = len(documents) == 2 and isinstance(documents[0], Mapping) and "spec" in documents[0]
    return documents[1] if header else documents[0]


def parse_config(text: str) -> dict[str, Any] | None:
    """A CI config file as a mapping, or None (logged) when it is too large, not YAML or not a mapping."""
    if len(text) > budgets.BAMBOO_CI_CONFIG_MAX_CHARS:
        log.info("CI config of %d characters not parsed", len(text))
        return None
    try:  # a third document is enough to know the file is not a config
        documents = list(itertools.islice(yaml.load_all(text, Loader=_Loader), 3))  # noqa: S506 - SafeLoader
    except (yaml.YAMLError, RecursionError) as exc:
        log.info("CI config not parsed: %s", str(exc).splitlines()[0][:200])
        return None
    config = _content(documents)
    return dict(config) if isinstance(config, Mapping) else None


def local_includes(config: Mapping[str, Any]) -> list[str]:
    """Paths (from the repository's root) of the files `config` includes from its own repository, in order:
    `include: path`, a list of paths, `{local: path}` entries; other kinds of include are left out."""
    entries = config.get("include")
    paths: list[str] = []
    for entry in entries if isinstance(entries, list) else [entries]:
        if isinstance(entry, Mapping) and not any(k in entry for k in _ELSEWHERE):
            entry = entry.get("local")
        if isinstance(entry, str) and entry.strip("/ ") and not _UNEXPANDED.search(entry):
            paths.append(entry.strip().lstrip("/"))
    return paths


def with_includes(config: Mapping[str, Any], included: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """GitLab's `include` merge: the included configs (each already merged with its own includes) merge in
    order, a later one winning, then `config` merges over them; its `include` key is dropped."""
    own = {k: v for k, v in config.items() if k != "include"}
    merged: dict[str, Any] = {}
    try:
        for part in included:
            merged = _merge(merged, part)
        return _merge(merged, own)
    except RecursionError:  # YAML aliases can make a mapping contain itself
        log.info("CI config's includes not merged: a mapping contains itself")
        return own


def job_definition(config: Mapping[str, Any] | None, job: str) -> str | None:
    """The definition of `job` (parallel suffixes ignored) in a parsed CI config, or None when there is no
    config or it does not define the job (it may come from an include that was not read)."""
    if config is None:
        return None
    definition = _resolved(config, _PARALLEL.sub("", job).strip())
    if definition is None:
        return None
    default = config.get("default")
    defaults = default if isinstance(default, Mapping) else {}
    for key in _DEFAULTS:
        fallback = defaults.get(key, config.get(key) if key == "image" else None)
        if key not in definition and fallback is not None:
            definition[key] = fallback
    shown = {k: definition[k] for k in JOB_KEYS if k in definition}
    if not shown:
        return None
    return clip(yaml.safe_dump(shown, sort_keys=False, width=120, allow_unicode=True).strip(),
                budgets.BAMBOO_CI_HINT_CHARS)
