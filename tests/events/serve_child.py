"""Child process of the crash and shutdown tests: `serve` with a handler that journals its work.

usage: serve_child.py CONFIG JOURNAL DELAY_S [thread]   (JOURNAL "-" runs the default log-only handler;
"thread" waits DELAY_S in a worker thread, as a blocking SDK call does, which cancellation cannot stop)
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from pathlib import Path

from hummingbird_agent.config.loading import load_config
from hummingbird_agent.events import Continuations, Event, log_only_handler, serve


def _journal(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def main() -> int:
    config, journal, delay_s = sys.argv[1], sys.argv[2], float(sys.argv[3])
    in_thread = sys.argv[4:] == ["thread"]
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

    async def handler(event: Event, _: Continuations) -> None:
        _journal(Path(journal), f"start {event.body['n']} {event.receive_count}")
        if in_thread:
            await asyncio.to_thread(time.sleep, delay_s)
        else:
            await asyncio.sleep(delay_s)
        _journal(Path(journal), f"done {event.body['n']}")

    return serve(load_config(config), "all", log_only_handler if journal == "-" else handler)


if __name__ == "__main__":
    raise SystemExit(main())
