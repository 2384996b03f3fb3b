"""The embedded queue's SQLite database: its schema, and how a process opens it (WAL mode, the schema created or
brought up to date), also while other processes open the same new file."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from hummingbird_agent import budgets

SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    queue TEXT NOT NULL,
    message_id TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    group_id TEXT,
    receive_count INTEGER NOT NULL DEFAULT 0,
    visible_at REAL NOT NULL,
    receipt TEXT UNIQUE,
    sent_at REAL
);
CREATE INDEX IF NOT EXISTS messages_by_queue ON messages (queue, visible_at);
CREATE TABLE IF NOT EXISTS dedup (
    queue TEXT NOT NULL,
    dedup_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (queue, dedup_id)
);
"""


def open_database(path: Path) -> sqlite3.Connection:
    """A connection to the store at `path`, in WAL mode with the schema. Processes opening one new store at once (a
    router and a worker starting together) may get SQLITE_BUSY at once while one switches it to WAL: SQLite does not
    wait where waiting could deadlock. Such an open is tried again within the busy timeout."""
    deadline = time.monotonic() + budgets.EMBEDDED_BUSY_TIMEOUT_S
    while True:
        try:
            return _open(path)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(budgets.EMBEDDED_POLL_INTERVAL_S)


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=budgets.EMBEDDED_BUSY_TIMEOUT_S, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL survives a process crash (kill -9); only an OS crash may lose the last commits.
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(SCHEMA)
        if "sent_at" not in {row[1] for row in db.execute("PRAGMA table_info(messages)")}:
            db.execute("ALTER TABLE messages ADD COLUMN sent_at REAL")  # stores created before it existed
    except BaseException:
        db.close()
        raise
    return db
