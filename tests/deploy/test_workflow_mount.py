"""A workflow ConfigMap mounted over /app/workflows (seed §13.4): prompts resolve through the kubelet's
symlink layout, an update of the ConfigMap is seen by the next run, and the mount is all-or-nothing."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from hummingbird_agent.agent import load_workflow
from hummingbird_agent.config.loading import load_config
from hummingbird_agent.errors import ConfigError
from tests.deploy.manifests import ROOT

PROMPTS = sorted((ROOT / "workflows").glob("*.md"))


def write_configmap_volume(mount: Path, files: dict[str, str], version: str) -> None:
    """What the kubelet does for a ConfigMap volume: the files in a timestamped directory, `..data`
    pointing at it (swapped atomically on update), and one `key -> ..data/key` symlink per key."""
    mount.mkdir(parents=True, exist_ok=True)
    stamp = f"..2025_01_01_00_00_00.{version}"
    (mount / stamp).mkdir()
    for key, text in files.items():
        (mount / stamp / key).write_text(text, encoding="utf-8")
    tmp_link = mount / "..data_tmp"
    tmp_link.symlink_to(stamp)
    old = os.readlink(mount / "..data") if (mount / "..data").is_symlink() else None
    os.replace(tmp_link, mount / "..data")
    for key in files:
        if not (mount / key).is_symlink():
            (mount / key).symlink_to(f"..data/{key}")
    if old:
        shutil.rmtree(mount / old)


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """/app with the repository's config.yaml and an empty directory where the ConfigMap is mounted."""
    root = tmp_path / "app"
    root.mkdir()
    shutil.copy(ROOT / "config.yaml", root / "config.yaml")
    return root


def prompt_files() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in PROMPTS}


def test_prompts_resolve_through_the_configmap_layout(app: Path) -> None:
    write_configmap_volume(app / "workflows", prompt_files(), "1")
    loaded = load_config(app / "config.yaml", environ={})
    for name in loaded.config.workflows:
        _, body = load_workflow(loaded, name)
        assert body == (ROOT / loaded.config.workflows[name].prompt).read_text(encoding="utf-8")
        assert loaded.prompt_path(name).is_relative_to(app / "workflows")


def test_configmap_update_reaches_the_next_run(app: Path) -> None:
    files = prompt_files()
    write_configmap_volume(app / "workflows", files, "1")
    loaded = load_config(app / "config.yaml", environ={})
    name = next(iter(loaded.config.workflows))
    key = Path(loaded.config.workflows[name].prompt).name
    updated = dict(files, **{key: "# staged prompt\nLook only at the first failed job.\n"})
    write_configmap_volume(app / "workflows", updated, "2")
    assert load_workflow(loaded, name)[1] == updated[key]


def test_mount_replaces_the_directory_whole(app: Path) -> None:
    files = prompt_files()
    dropped = files.popitem()[0]
    write_configmap_volume(app / "workflows", files, "1")
    with pytest.raises(ConfigError) as caught:
        load_config(app / "config.yaml", environ={})
    message = str(caught.value)
    assert "\n" not in message
    assert f"file not found: workflows/{dropped}" in message


def test_every_prompt_is_a_flat_file_a_configmap_can_carry() -> None:
    # `kubectl create configmap --from-file=workflows/` takes the directory's regular files only, and
    # ConfigMap keys must match [-._a-zA-Z0-9]+.
    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    for name, workflow in config["workflows"].items():
        folder, _, key = workflow["prompt"].partition("/")
        assert folder == "workflows" and "/" not in key, f"{name}: {workflow['prompt']}"
        assert re.fullmatch(r"[-._a-zA-Z0-9]+", key)
        assert (ROOT / "workflows" / key).is_file()
