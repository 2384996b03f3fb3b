"""The explicit state every long-lived client carries: constructed (no I/O yet), open, or closed."""

from __future__ import annotations

import enum


class ClientState(enum.Enum):
    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"
