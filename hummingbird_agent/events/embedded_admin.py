"""Operator tools on the embedded queue: read-only stats and peeks straight from SQLite (no receive,
so receive counts do not change), and redrive/purge as single transactions (nothing half-moved)."""

from __future__ import annotations

from hummingbird_agent.events.admin import NAMES, Peek, QueueStats, Redriven, summarize
from hummingbird_agent.events.embedded import EmbeddedStore

# Rows whose visibility lies ahead are in flight when received (they have a receipt), delayed otherwise.
_STATS = """
SELECT
    sum(visible_at <= :now),
    sum(visible_at > :now AND receipt IS NOT NULL),
    sum(visible_at > :now AND receipt IS NULL),
    min(sent_at)
FROM messages WHERE queue = :q
"""


class EmbeddedAdmin:
    """QueueAdmin over one EmbeddedStore (opened by the caller, without creating the file)."""

    def __init__(self, store: EmbeddedStore) -> None:
        self._store = store

    async def stats(self) -> list[QueueStats]:
        now = self._store.clock()
        out = []
        with self._store.transaction() as db:
            for name in NAMES:
                depth, in_flight, delayed, oldest = db.execute(_STATS, {"now": now, "q": name}).fetchone()
                age = None if oldest is None else max(0.0, now - oldest)
                out.append(QueueStats(name, str(self._store.path), depth or 0, in_flight or 0, delayed or 0, age))
        return out

    async def peek(self, queue: str, limit: int, force: bool = False) -> Peek:
        with self._store.transaction() as db:
            rows = db.execute(
                "SELECT message_id, body, group_id, receive_count FROM messages WHERE queue = ? ORDER BY seq LIMIT ?",
                (queue, limit),
            ).fetchall()
        return Peek(tuple(summarize(queue, mid, body, group, count) for mid, body, group, count in rows))

    async def redrive(self, source: str, ids: frozenset[str]) -> Redriven:
        dead = f"{source}-dlq"
        sql = "UPDATE messages SET queue = ?, receive_count = 0, receipt = NULL, visible_at = ? WHERE queue = ?"
        found: set[str] = set()
        with self._store.transaction() as db:
            if ids:
                marks = ",".join("?" * len(ids))
                query = f"SELECT message_id FROM messages WHERE queue = ? AND message_id IN ({marks})"
                found = {row[0] for row in db.execute(query, (dead, *ids))}
                moved = db.execute(f"{sql} AND message_id IN ({marks})", (source, self._store.clock(), dead, *ids))
            else:
                moved = db.execute(sql, (source, self._store.clock(), dead))
            count = moved.rowcount
        self._store.notify(source)
        return Redriven(f"moved {count} messages from {dead} to {source}", ids - found)

    async def purge(self, queue: str) -> int | None:
        with self._store.transaction() as db:
            return int(db.execute("DELETE FROM messages WHERE queue = ?", (queue,)).rowcount)
