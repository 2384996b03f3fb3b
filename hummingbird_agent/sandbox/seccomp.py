"""The Podman sandbox's seccomp profile: the container runtime's default plus no new namespaces.

Podman's default profile (containers/common) allows `unshare` and `clone` with any flags, so an unprivileged
process can still create a user namespace (`unshare -Urm`) and reach kernel code that needs namespace
capabilities. `seccomp.json` next to this module is that default with three rules changed, the same way
Docker's profile does it:

- `clone` and `unshare` are allowed only without namespace flags (any CLONE_NEW* bit → EPERM; on s390,
  where clone's flags are its second argument, the profile's default error instead);
- `clone3` fails with ENOSYS, so the C library falls back to `clone`, whose flags seccomp can read
  (clone3 passes them in memory, out of seccomp's reach).

Regenerate after a Podman upgrade: `python -m hummingbird_agent.sandbox.seccomp /usr/share/containers/seccomp.json`.
"""

from __future__ import annotations

import importlib.resources
import json
import sys
from typing import Any

# CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET.
_NAMESPACE_BITS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
NAMESPACE_FLAGS = sum(_NAMESPACE_BITS)
_EPERM, _ENOSYS = 1, 38
_GUARDED = ("clone", "clone3", "unshare")
# s390 passes clone's flags as the second argument.
_ARG_SWAPPED_ARCHES = ["s390", "s390x"]


def profile_path() -> str:
    """Filesystem path of the shipped profile (handed to `podman run --security-opt seccomp=`)."""
    return str(importlib.resources.files(__package__) / "seccomp.json")


def _no_namespace_flags(names: list[str], index: int, arches: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    flags = {"index": index, "value": NAMESPACE_FLAGS, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}
    return {"names": names, "action": "SCMP_ACT_ALLOW", "args": [flags], "comment": "no new namespaces",
            "includes": arches.get("includes", {}), "excludes": arches.get("excludes", {})}  # fmt: skip


def guarded_rules() -> list[dict[str, Any]]:
    """The rules that replace every mention of clone, clone3 and unshare in the base profile."""
    swapped = {"arches": _ARG_SWAPPED_ARCHES}
    # A clear "Operation not permitted" instead of the default error, one rule per flag (rule arguments AND).
    refusals = [{"names": ["clone", "unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": _EPERM,
                 "args": [{"index": 0, "value": bit, "valueTwo": bit, "op": "SCMP_CMP_MASKED_EQ"}],
                 "comment": "new namespace", "includes": {}, "excludes": swapped} for bit in _NAMESPACE_BITS]
    return [
        _no_namespace_flags(["unshare"], 0, {}),
        _no_namespace_flags(["clone"], 0, {"excludes": swapped}),
        _no_namespace_flags(["clone"], 1, {"includes": swapped}),
        *refusals,
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": _ENOSYS, "args": [],
         "comment": "ENOSYS: fall back to clone, whose flags are checked", "includes": {}, "excludes": {}},
    ]  # fmt: skip


def block_new_namespaces(profile: dict[str, Any]) -> dict[str, Any]:
    """`profile` with clone/clone3/unshare taken out of every rule and `guarded_rules()` added (idempotent)."""
    rules: list[dict[str, Any]] = []
    for rule in profile["syscalls"]:
        names = [name for name in rule["names"] if name not in _GUARDED]
        if names:
            rules.append({**rule, "names": names})
    return {**profile, "syscalls": rules + guarded_rules()}


def main(argv: list[str]) -> int:
    """Write the guarded version of the profile at argv[0] over the shipped one; a bad source is one line."""
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m hummingbird_agent.sandbox.seccomp /usr/share/containers/seccomp.json", file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as source:
            profile = block_new_namespaces(json.load(source))
    except (OSError, ValueError) as exc:
        print(f"error: {argv[0]}: {exc}", file=sys.stderr)
        return 2
    except (KeyError, TypeError, AttributeError):
        print(f"error: {argv[0]}: not a seccomp profile (no \"syscalls\" rules with \"names\")", file=sys.stderr)
        return 2
    with open(profile_path(), "w", encoding="utf-8") as target:
        json.dump(profile, target, indent=1)
        target.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
