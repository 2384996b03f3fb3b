"""A job's definition from a GitLab CI config (the `gitlab_ci` strategy's prefetch hint): the job's own
keys with `extends` and `default:` applied, as short YAML. Pure; anything unparsable gives None."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
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


class _Loader(yaml.SafeLoader):
    """Safe YAML that keeps GitLab's custom tags (`!reference [.setup, script]`) as plain values."""


def _tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.SequenceNode):
        return [f"!{suffix}", *loader.construct_sequence(node, deep=True)]
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_Loader.add_multi_constructor("!", _tagged)


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """GitLab's `extends` merge: hashes merge deeply, anything else is replaced by the extending job."""
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


def job_definition(text: str, job: str) -> str | None:
    """The definition of `job` (parallel suffixes ignored) in a CI config, or None when the config cannot
    be parsed or does not define it (it may come from an `include`)."""
    if len(text) > budgets.BAMBOO_CI_CONFIG_MAX_CHARS:
        log.info("CI config of %d characters not parsed", len(text))
        return None
    try:
        config = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except (yaml.YAMLError, RecursionError) as exc:
        log.info("CI config not parsed: %s", str(exc).splitlines()[0][:200])
        return None
    if not isinstance(config, Mapping):
        return None
    definition = _resolved(config, _PARALLEL.sub("", job).strip())
    if definition is None:
        return None
    defaults = config.get("default") if isinstance(config.get("default"), Mapping) else {}
    for key in _DEFAULTS:
        fallback = defaults.get(key, config.get(key) if key == "image" else None)
        if key not in definition and fallback is not None:
            definition[key] = fallback
    shown = {k: definition[k] for k in JOB_KEYS if k in definition}
    if not shown:
        return None
    return clip(yaml.safe_dump(shown, sort_keys=False, width=120, allow_unicode=True).strip(),
                budgets.BAMBOO_CI_HINT_CHARS)
