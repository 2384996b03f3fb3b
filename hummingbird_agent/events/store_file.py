"""Checks that the embedded queue's SQLite file is still the one its connection commits to: present,
writable, the same file, and carrying the SQLite header. Plain system calls, no SQLite."""

from __future__ import annotations

import os
from pathlib import Path

SQLITE_HEADER = b"SQLite format 3\x00"
REPLACED = "the file was replaced"


def header_problem(header: bytes) -> str | None:
    """Why a file starting with `header` holds no database. Opening a store forces the header (WAL mode
    and the schema are written at once), so an open store without one was truncated or emptied: in WAL
    mode SQLite keeps committing into the log, and the next checkpoint writes the pages into a file
    with no schema, so every stored message is gone. Empty is refused like corrupt."""
    if header == SQLITE_HEADER:
        return None
    if not header:
        return "the file is empty (truncated while serving?)"
    return "the file is not an SQLite database (corrupt)"


def file_problem(path: Path, fd: int | None, identity: tuple[int, int]) -> str | None:
    """Why the file at `path` cannot hold the commits of the connection that opened `fd` (the file
    whose (st_dev, st_ino) is `identity`): missing, read-only, replaced, emptied or not an SQLite file.
    A few system calls, no open(): it runs around every transaction."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return "the file is missing (deleted while serving?)"
    except OSError as exc:
        return f"cannot read it ({exc.strerror})"
    # Mode bits as well as access(): root may write a read-only file, but an operator who made it
    # read-only means it not to change.
    if not os.access(path, os.W_OK) or not stat.st_mode & 0o222:
        return "the file is read-only"
    if (stat.st_dev, stat.st_ino) != identity or fd is None:
        return REPLACED
    return header_problem(os.pread(fd, len(SQLITE_HEADER), 0))


def replacement_problem(path: Path) -> str | None:
    """Why the file now at `path`, in place of the one the connection opened, cannot be adopted. Only
    a restored database is: connecting to an empty file would create a new, empty store and accept
    webhooks into it while every stored message is gone."""
    try:
        with open(path, "rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError as exc:
        return f"{REPLACED} and the new one cannot be read ({exc.strerror})"
    problem = header_problem(header)
    if problem is None:
        return None
    return f"{REPLACED} by an empty one" if not header else f"{REPLACED} by one that is not an SQLite database"
