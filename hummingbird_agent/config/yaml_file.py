"""Reading config.yaml into plain data: every decoding or YAML problem becomes one ConfigError line
`<file>:<line>:<column>: <problem>`, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hummingbird_agent.errors import ConfigError


def _where(text: str, index: int) -> str:
    """1-based `line:column` of character `index` in `text`."""
    line = text.count("\n", 0, index) + 1
    return f"{line}:{index - (text.rfind(chr(10), 0, index) + 1) + 1}"


def _mark(mark: Any) -> str:
    return f"{mark.line + 1}:{mark.column + 1}"


class _Loader(yaml.SafeLoader):
    """A safe loader that refuses duplicate and non-scalar mapping keys instead of overwriting or crashing."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise ConfigError(f"{_mark(key_node.start_mark)}: a key must be a plain value, not a list or mapping")
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(f"{_mark(key_node.start_mark)}: duplicate key {key!r}")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: Path) -> dict[str, Any]:
    """The top-level mapping of the YAML file at `path`; ConfigError (one line) for anything else."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file ({exc.strerror})") from None
    name = path.name
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start].decode("utf-8")  # valid up to the first bad byte
        where = _where(before, len(before))
        raise ConfigError(f"{name}:{where}: not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None
    data = _parse(text, name)
    if not isinstance(data, dict):
        raise ConfigError(f"{name}: the top level must be a mapping of settings")
    return data


def _parse(text: str, name: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except ConfigError as exc:
        raise ConfigError(f"{name}:{exc}") from None
    except yaml.reader.ReaderError as exc:
        raise ConfigError(f"{name}:{_where(text, exc.position)}: invalid YAML ({exc.reason})") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{_mark(mark)}: " if mark else " "
        problem = exc.problem or exc.context or "not valid YAML"
        raise ConfigError(f"{name}:{where}invalid YAML ({problem})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{name}: invalid YAML ({type(exc).__name__})") from None
    except RecursionError:
        raise ConfigError(f"{name}: invalid YAML (nested too deeply)") from None
