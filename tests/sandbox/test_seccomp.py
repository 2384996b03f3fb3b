"""The Podman sandbox's seccomp profile: no new (user) namespaces, everything else as the runtime default.

The behaviour tests run real commands in a real sandbox; the profile tests read the shipped JSON.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.sandbox.seccomp import NAMESPACE_FLAGS, block_new_namespaces, profile_path
from hummingbird_agent.sandbox.seccomp import main as seccomp_main
from tests.podman_box import podman_box

PODMAN_DEFAULT = Path("/usr/share/containers/seccomp.json")
GUARDED = {"clone", "clone3", "unshare"}


def shipped() -> dict[str, Any]:
    return json.loads(Path(profile_path()).read_text())


def allowed_unconditionally(profile: dict[str, Any]) -> set[str]:
    return {name for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("args")
            and not rule.get("includes") for name in rule["names"]}


def test_profile_allows_clone_and_unshare_only_without_namespace_flags() -> None:
    profile = shipped()
    assert not GUARDED & allowed_unconditionally(profile)
    conditional = [r for r in profile["syscalls"] if GUARDED & set(r["names"]) and r["action"] == "SCMP_ACT_ALLOW"]
    assert {n for r in conditional for n in r["names"]} == {"clone", "unshare"}
    for rule in conditional:
        assert rule["args"] == [{"index": rule["args"][0]["index"], "value": NAMESPACE_FLAGS, "valueTwo": 0,
                                 "op": "SCMP_CMP_MASKED_EQ"}]
    [clone3] = [r for r in profile["syscalls"] if "clone3" in r["names"]]
    assert (clone3["action"], clone3["errnoRet"]) == ("SCMP_ACT_ERRNO", 38)  # ENOSYS: libc falls back to clone
    assert block_new_namespaces(profile) == profile  # regenerating is stable


@pytest.mark.skipif(not PODMAN_DEFAULT.exists(), reason="no Podman default profile on this host")
def test_profile_is_the_podman_default_with_only_the_namespace_rules_changed() -> None:
    default = json.loads(PODMAN_DEFAULT.read_text())
    assert shipped() == block_new_namespaces(default), "regenerate: python -m hummingbird_agent.sandbox.seccomp"
    assert allowed_unconditionally(shipped()) == allowed_unconditionally(default) - GUARDED


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def box() -> AsyncIterator[PodmanSandbox]:
    async with podman_box("seccomptest") as sandbox:
        yield sandbox


@pytest.mark.podman
@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("command", ["unshare -U true", "unshare -Urm true", "unshare -r true", "unshare -n true"])
async def test_no_new_namespaces_inside_the_sandbox(box: PodmanSandbox, command: str) -> None:
    result = await box.exec(command, 30)
    assert result.exit_code != 0, result
    assert b"Operation not permitted" in result.stderr


@pytest.mark.podman
@pytest.mark.asyncio(loop_scope="module")
async def test_ordinary_tools_still_work(box: PodmanSandbox) -> None:
    threads = ("import threading, subprocess; "
               "t = threading.Thread(target=print, args=('thread',), kwargs={'flush': True}); t.start(); t.join(); "
               "subprocess.run(['echo', 'child'], check=True)")
    script = (
        f'set -e; python3 -c "{threads}"; '
        "mkdir d && echo hi > d/f && tar czf d.tgz d && rm -r d && tar xzf d.tgz && cat d/f; "
        "echo '{\"a\": [1, 2]}' | jq -c '.a | length'; "
        "sleep 0.1 & wait; echo waited"
    )
    result = await box.exec(script, 60)
    assert result.exit_code == 0, result
    assert result.stdout.decode().split() == ["thread", "child", "hi", "2", "waited"]


@pytest.mark.parametrize("content", [None, "{not json", '{"defaultAction": "SCMP_ACT_ERRNO"}'])
def test_regenerating_from_a_bad_profile_is_one_line_and_leaves_the_shipped_one(
        content: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "seccomp.json"
    if content is not None:
        source.write_text(content)
    shipped = Path(profile_path()).read_bytes()
    assert seccomp_main([str(source)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {source}: ") and err.count("\n") == 1, err
    assert Path(profile_path()).read_bytes() == shipped
