"""The frames between the host and a sandbox's command server (`sandbox-image/sandbox-init`), pure.

A frame is a 9-byte header (kind, command id, payload length) and its payload. What the box sends is untrusted:
a frame of an unknown kind, too long, or with a payload that does not parse ends the channel (ChannelBroken).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from hummingbird_agent import budgets
from hummingbird_agent.errors import SandboxError

HEADER = struct.Struct("!BII")
# host -> box
SPAWN, KILL, SWEEP, DATA, EOF = 1, 2, 3, 4, 5
# box -> host: an exit code, a sweep done, a command's stdout / stderr bytes (relayed only; b"" ends the
# stream), the box refusing a request (it then closes the channel), the server ready (its first frame).
EXIT, SWEPT, OUT, ERR, FAIL, HELLO = 16, 17, 18, 19, 20, 21
BOX_KINDS = frozenset({EXIT, SWEPT, OUT, ERR, FAIL, HELLO})


class ChannelBroken(SandboxError):
    """The channel to a box ended or carried something no command server sends; every command on it failed."""


@dataclass(frozen=True, slots=True)
class Frame:
    kind: int
    ident: int
    payload: bytes


def encode(kind: int, ident: int, payload: bytes = b"") -> bytes:
    return HEADER.pack(kind, ident, len(payload)) + payload


def spawn(ident: int, argv: list[str], stdin: bool, sweep_s: float) -> bytes:
    """Start `argv` (after a sweep bounded by `sweep_s` when > 0); with `stdin`, the command reads one."""
    request = {"argv": argv, "stdin": stdin, "sweep_s": sweep_s, "stdin_max": budgets.SANDBOX_STDIN_PENDING_BYTES}
    return encode(SPAWN, ident, json.dumps(request).encode())


def sweep(ident: int) -> bytes:
    return encode(SWEEP, ident, json.dumps({"sweep_s": budgets.SANDBOX_SWEEP_REAP_S}).encode())


class FrameReader:
    """Splits the box's byte stream into frames, refusing what no command server sends."""

    def __init__(self, kinds: frozenset[int] = BOX_KINDS) -> None:
        self._buffer = bytearray()
        self._kinds = kinds

    def feed(self, data: bytes) -> Iterator[Frame]:
        self._buffer += data
        while len(self._buffer) >= HEADER.size:
            kind, ident, size = HEADER.unpack_from(self._buffer)
            if kind not in self._kinds:
                raise ChannelBroken(f"malformed message from the box (kind {kind})")
            if size > budgets.SANDBOX_FRAME_MAX_BYTES:
                raise ChannelBroken(f"malformed message from the box ({size} bytes in one frame)")
            if len(self._buffer) < HEADER.size + size:
                return
            payload = bytes(self._buffer[HEADER.size : HEADER.size + size])
            del self._buffer[: HEADER.size + size]
            yield Frame(kind, ident, payload)


def exit_code(payload: bytes) -> int:
    """The code of an EXIT frame; ChannelBroken if it is not {"code": int}."""
    code = _json(payload).get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        raise ChannelBroken("malformed message from the box (an exit without a code)")
    return code


def failure(payload: bytes) -> str:
    return str(_json(payload).get("error", "no reason given"))[:200]


def _json(payload: bytes) -> dict[str, object]:
    try:
        value = json.loads(payload)
    except ValueError:
        raise ChannelBroken("malformed message from the box (not JSON)") from None
    if not isinstance(value, dict):
        raise ChannelBroken("malformed message from the box (not an object)")
    return value
