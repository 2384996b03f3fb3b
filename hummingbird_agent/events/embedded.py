"""Embedded durable queue on SQLite with SQS semantics: FIFO groups with one in-flight message per group,
visibility timeouts, receive counts, a dedup window that survives deletion, and dead-lettering."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from hummingbird_agent import budgets
from hummingbird_agent.errors import TransientError
from hummingbird_agent.events.envelope import fifo_problem
from hummingbird_agent.events.protocols import BatchResult, OutgoingMessage, ReceivedMessage
from hummingbird_agent.events.store_database import open_database
from hummingbird_agent.events.store_file import (
    REPLACED,
    SQLITE_HEADER,
    file_problem,
    header_problem,
    replacement_problem,
)
from hummingbird_agent.lifecycle import ClientState

# Oldest visible messages whose group has nothing in flight (visible_at in the future = in flight).
_SELECT_AVAILABLE = """
SELECT seq, message_id, body, group_id, receive_count FROM messages
WHERE queue = :q AND visible_at <= :now AND (group_id IS NULL OR group_id NOT IN (
    SELECT group_id FROM messages WHERE queue = :q AND visible_at > :now AND group_id IS NOT NULL))
ORDER BY seq LIMIT :n
"""


class EmbeddedStore:
    """One SQLite file holding any number of named queues; several processes may share it."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self.state = ClientState.UNOPENED
        self._db: sqlite3.Connection | None = None
        self._identity: tuple[int, int] = (0, 0)
        self._fd: int | None = None  # the file the connection writes, for header checks without open()
        self._wakeups: dict[str, asyncio.Event] = {}

    def open(self, *, create: bool = True) -> None:
        """Open (creating the file when `create`); OSError when the file cannot be opened or created,
        TransientError when it is no SQLite database."""
        if not create and not self.path.exists():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(self.path))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._connect()
        except sqlite3.Error as exc:
            raise TransientError(f"embedded queue store {self.path}: SQLite error: {exc}") from exc
        self.state = ClientState.OPEN

    def _connect(self) -> None:
        db = open_database(self.path)
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except BaseException:
            db.close()
            raise
        # WAL mode and the schema have written the header of a new file; one without it now was
        # emptied under another connection, and is refused rather than used.
        problem = header_problem(os.pread(fd, len(SQLITE_HEADER), 0))
        if problem is not None:
            db.close()
            os.close(fd)
            raise TransientError(f"embedded queue store {self.path}: {problem}")
        stat = os.fstat(fd)
        self._db, self._fd, self._identity = db, fd, (stat.st_dev, stat.st_ino)

    def _disconnect(self) -> None:
        if self._db is not None:
            self._db.close()
        if self._fd is not None:
            os.close(self._fd)
        self._db = self._fd = None

    def close(self) -> None:
        self._disconnect()
        self.state = ClientState.CLOSED

    def _usable(self, *, reopen: bool = True) -> sqlite3.Connection:
        """The connection, after checking the file is still the one it writes to; with `reopen`, a
        restored file is opened here, so the store recovers without a restart."""
        if self.state is not ClientState.OPEN:
            raise TransientError(f"embedded queue store {self.path} is not open")
        problem = file_problem(self.path, self._fd, self._identity)
        if reopen and problem == REPLACED:
            problem = self._adopt_replacement()
        if problem is not None or self._db is None:
            raise TransientError(f"embedded queue store {self.path}: {problem}")
        return self._db

    def _adopt_replacement(self) -> str | None:
        """Restored (or recreated) by the operator: drop the stale connection, use the new file, if it
        is a database (an empty one is refused: adopting it would start an empty store)."""
        problem = replacement_problem(self.path)
        if problem is not None:
            return problem
        self._disconnect()
        with contextlib.suppress(OSError, sqlite3.Error, TransientError):
            self._connect()
        return None if self._db is not None else "cannot open the restored file"

    def queue(self, name: str, *, fifo: bool, dead_letter: str | None = None, max_receives: int = 0) -> EmbeddedQueue:
        return EmbeddedQueue(self, name, fifo=fifo, dead_letter=dead_letter, max_receives=max_receives)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT: receives of several processes never hand out the same message.
        The file is checked before and after: a commit into a deleted or replaced file raises, so
        nothing is acknowledged that a restart would not find."""
        db = self._usable()
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise TransientError(f"embedded queue store {self.path}: SQLite error: {exc}") from exc
        self._usable(reopen=False)

    def wakeup(self, queue: str) -> asyncio.Event:
        return self._wakeups.setdefault(queue, asyncio.Event())

    def notify(self, queue: str) -> None:
        event = self._wakeups.get(queue)
        if event is not None:
            event.set()


class EmbeddedQueue:
    """One named queue in an EmbeddedStore (a standard queue when fifo=False)."""

    def __init__(self, store: EmbeddedStore, name: str, *, fifo: bool, dead_letter: str | None, max_receives: int):
        self.name = name
        self.fifo = fifo
        self._store = store
        self._dead_letter = dead_letter
        self._max_receives = max_receives

    async def receive(self, max_messages: int, wait_s: float, visibility_timeout_s: int) -> list[ReceivedMessage]:
        deadline = time.monotonic() + wait_s
        wakeup = self._store.wakeup(self.name)
        while True:
            wakeup.clear()
            messages = self._receive_now(max_messages, visibility_timeout_s)
            remaining = deadline - time.monotonic()
            if messages or remaining <= 0:
                return messages
            # Same-process sends wake us at once; other processes are seen at the next poll.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wakeup.wait(), min(remaining, budgets.EMBEDDED_POLL_INTERVAL_S))

    def _receive_now(self, max_messages: int, visibility_timeout_s: int) -> list[ReceivedMessage]:
        now = self._store.clock()
        out: list[ReceivedMessage] = []
        with self._store.transaction() as db:
            rows = db.execute(_SELECT_AVAILABLE, {"q": self.name, "now": now, "n": max_messages}).fetchall()
            for seq, message_id, body, group_id, count in rows:
                if self._max_receives and self._dead_letter and count >= self._max_receives:
                    # The receive count moves along (as on SQS): the operator sees how often it was tried.
                    db.execute(
                        "UPDATE messages SET queue = ?, receipt = NULL, visible_at = ? WHERE seq = ?",
                        (self._dead_letter, now, seq),
                    )
                    continue
                receipt = uuid.uuid4().hex
                db.execute(
                    "UPDATE messages SET receive_count = ?, visible_at = ?, receipt = ? WHERE seq = ?",
                    (count + 1, now + visibility_timeout_s, receipt, seq),
                )
                out.append(ReceivedMessage(message_id, receipt, body, group_id, count + 1))
        return out

    async def send_batch(self, messages: Sequence[OutgoingMessage]) -> BatchResult:
        now = self._store.clock()
        ok: list[int] = []
        failed: list[tuple[int, str]] = []
        ids: dict[int, str] = {}
        with self._store.transaction() as db:
            db.execute("DELETE FROM dedup WHERE queue = ? AND expires_at <= ?", (self.name, now))
            for index, message in enumerate(messages):
                problem = self._check(message)
                if problem:
                    failed.append((index, problem))
                    continue
                ids[index] = self._insert(db, message, now)
                ok.append(index)
        if ok:
            self._store.notify(self.name)
        return BatchResult(tuple(ok), tuple(failed), ids)

    def _check(self, message: OutgoingMessage) -> str | None:
        return fifo_problem(message.group_id, message.dedup_id) if self.fifo else None

    def _insert(self, db: sqlite3.Connection, message: OutgoingMessage, now: float) -> str:
        if self.fifo and message.dedup_id:
            seen = db.execute(
                "SELECT message_id FROM dedup WHERE queue = ? AND dedup_id = ?", (self.name, message.dedup_id)
            ).fetchone()
            if seen:  # accepted but not delivered, as SQS does within the window
                return str(seen[0])
        message_id = str(uuid.uuid4())
        group = message.group_id if self.fifo else None
        db.execute(
            "INSERT INTO messages (queue, message_id, body, group_id, visible_at, sent_at) VALUES (?, ?, ?, ?, ?, ?)",
            (self.name, message_id, message.body, group, now, now),
        )
        if self.fifo and message.dedup_id:
            db.execute(
                "INSERT OR REPLACE INTO dedup VALUES (?, ?, ?, ?)",
                (self.name, message.dedup_id, message_id, now + budgets.DEDUP_WINDOW_S),
            )
        return message_id

    async def delete_batch(self, receipts: Sequence[str]) -> BatchResult:
        return self._by_receipt(receipts, "DELETE FROM messages WHERE queue = ? AND receipt = ?", ())

    async def change_visibility_batch(self, receipts: Sequence[str], timeout_s: int) -> BatchResult:
        visible_at = self._store.clock() + timeout_s
        sql = "UPDATE messages SET visible_at = ? WHERE queue = ? AND receipt = ?"
        return self._by_receipt(receipts, sql, (visible_at,))

    def _by_receipt(self, receipts: Sequence[str], sql: str, head: tuple[float, ...]) -> BatchResult:
        ok: list[int] = []
        failed: list[tuple[int, str]] = []
        with self._store.transaction() as db:
            for index, receipt in enumerate(receipts):
                if db.execute(sql, (*head, self.name, receipt)).rowcount:
                    ok.append(index)
                else:
                    failed.append((index, "receipt handle is stale or the message is gone"))
        # A delete or release may unblock a group a local receive is waiting for.
        self._store.notify(self.name)
        return BatchResult(tuple(ok), tuple(failed))

    async def ping(self) -> None:
        with self._store.transaction() as db:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()

    async def depth(self) -> dict[str, int]:
        """Visible / in-flight counts and the dead-letter queue's depth (for metrics)."""
        visible, in_flight = self.counts()
        counts = {"visible": visible, "in_flight": in_flight}
        if self._dead_letter:
            counts["dead_lettered"] = sum(EmbeddedQueue(self._store, self._dead_letter, fifo=self.fifo,
                                                        dead_letter=None, max_receives=0).counts())
        return counts

    def counts(self) -> tuple[int, int]:
        """(visible, in flight) message counts, for tests, benchmarks and operators."""
        now = self._store.clock()
        with self._store.transaction() as db:
            visible = db.execute(
                "SELECT count(*) FROM messages WHERE queue = ? AND visible_at <= ?", (self.name, now)
            ).fetchone()[0]
            total = db.execute("SELECT count(*) FROM messages WHERE queue = ?", (self.name,)).fetchone()[0]
        return int(visible), int(total - visible)
