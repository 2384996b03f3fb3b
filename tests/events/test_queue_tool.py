"""`python -m hummingbird_agent queue stats|peek|redrive|purge` on the embedded queue and on SQS (moto, LocalStack):
counts, peeks that never show a body, redrive of one message and of the rest, purge with and without
confirmation, and one-line errors for a missing store or queue."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hummingbird_agent.cli import main
from hummingbird_agent.events import EmbeddedStore, OutgoingMessage, decode_sns_message, encode_envelope
from hummingbird_agent.events.protocols import Queue
from hummingbird_agent.events.sqs import SqsClient
from tests.events.support import AWS_FIXTURES, SqsSetup
from tests.servers import AwsServer

TOKEN = "glpat-not-for-your-eyes"


def _event(n: int) -> dict[str, Any]:
    return {"object_kind": "pipeline", "n": n, "object_attributes": {"id": n, "token": TOKEN},
            "project": {"path_with_namespace": "group/project"}, "merge_request": {"iid": 7}}


@dataclass
class Setup:
    config: Path
    receive_work: Callable[[], list[int]]  # the `n` of every message a receive from `work` gets

    def cli(self, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
        code = main(["queue", *args, "--config", str(self.config)])
        out = capsys.readouterr()
        return code, out.out + out.err

    def stats(self, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple[int, int]]:
        code, out = self.cli(capsys, "stats", "--json")
        assert code == 0, out
        return {r["name"]: (r["depth"], r["in_flight"]) for r in json.loads(out)}


async def _received(work: Queue) -> list[int]:
    return sorted(decode_sns_message(m.body).body["n"] for m in await work.receive(10, 1, 30))


async def _fill_and_dead_letter(work: Queue) -> None:
    """Messages 0 and 1 end in work-dlq (received past max_receives 1), message 2 waits in work."""
    messages = [OutgoingMessage(encode_envelope("gitlab", "pipeline", _event(n)), f"g{n}", f"d{n}") for n in range(3)]
    await work.send_batch(messages[:2])
    for _ in range(2):
        await work.receive(10, 0, 0)
    await work.send_batch(messages[2:])


def _config(tmp_path: Path, queues: dict[str, Any]) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"queues": queues, "workflows": {}}))
    return path


@pytest.fixture
def setup(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if backend == "embedded":
        store = EmbeddedStore(tmp_path / "queue.sqlite")
        store.open()
        work = store.queue("work", fifo=True, dead_letter="work-dlq", max_receives=1)
        asyncio.run(_fill_and_dead_letter(work))
        yield Setup(_config(tmp_path, {"embedded_path": "queue.sqlite"}), lambda: asyncio.run(_received(work)))
        store.close()
        return
    aws: AwsServer = request.getfixturevalue(AWS_FIXTURES[backend])
    boto = aws.client("sqs")
    url = SqsSetup(aws, SqsClient(aws.region, aws.endpoint), boto).create("work", fifo=True, max_receives=1)

    def on_sqs(action: Callable[[Queue], Any]) -> Any:
        async def run() -> Any:
            client = SqsClient(aws.region, aws.endpoint)
            await client.start()
            try:
                return await action(client.queue(url))
            finally:
                await client.aclose()

        return asyncio.run(run())

    on_sqs(_fill_and_dead_letter)
    queues = {"backend": "sqs", "work_url": url, "endpoint_url": aws.endpoint}
    yield Setup(_config(tmp_path, queues), lambda: on_sqs(_received))
    boto.close()


def test_stats_peek_redrive_and_purge(setup: Setup, capsys: pytest.CaptureFixture[str]) -> None:
    before = setup.stats(capsys)
    assert (before["work"], before["work-dlq"]) == ((1, 0), (2, 0))
    code, out = setup.cli(capsys, "peek", "work-dlq", "--json")
    assert code == 0, out
    peeked = json.loads(out)
    assert TOKEN not in out
    assert [(p["kind"], p["project"], p["mr"], p["queue"]) for p in peeked] == [("pipeline", "group/project", 7,
                                                                                  "work-dlq")] * 2
    assert all(p["receive_count"] >= 1 and p["group"] in ("g0", "g1") for p in peeked), peeked
    code, text = setup.cli(capsys, "peek", "work-dlq")
    assert code == 0 and "pipeline group/project !7" in text and TOKEN not in text

    code, out = setup.cli(capsys, "redrive", "--id", peeked[0]["message_id"])
    assert code == 0 and "moved 1 messages" in out, out
    assert setup.stats(capsys)["work-dlq"] == (1, 0) and setup.stats(capsys)["work"] == (2, 0)
    code, out = setup.cli(capsys, "redrive")
    assert code == 0 and "moved 1 messages" in out, out
    assert setup.stats(capsys)["work-dlq"] == (0, 0) and setup.stats(capsys)["work"] == (3, 0)
    assert setup.cli(capsys, "peek", "work-dlq") == (0, "no messages seen\n")
    code, out = setup.cli(capsys, "peek", "work", "--json")
    # Fresh receive counts (an SQS peek is itself a receive: one).
    assert code == 0 and [p["receive_count"] <= 1 for p in json.loads(out)] == [True] * 3, out

    code, out = setup.cli(capsys, "purge", "work")
    assert code == 2 and out.strip() == "error: purge needs confirmation: run it in a terminal or pass --yes"
    assert setup.stats(capsys)["work"] == (3, 0)
    code, out = setup.cli(capsys, "purge", "work", "--yes")
    assert code == 0 and "purged work" in out
    assert setup.stats(capsys)["work"] == (0, 0)


def test_redrive_of_ids_not_in_the_dead_letter_queue_names_them_and_fails(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = setup.cli(capsys, "peek", "work-dlq", "--json")
    present = json.loads(out)[0]["message_id"]
    code = main(["queue", "redrive", "work", "--id", present, "--id", "no-such-id", "--id", "gone-too",
                 "--config", str(setup.config)])
    captured = capsys.readouterr()
    # The id that exists is moved all the same; the others are named in one line, exit 2 as for bad input.
    assert code == 2 and "moved 1 messages" in captured.out, captured
    assert captured.err == "error: 2 of the given ids are not in work-dlq: gone-too, no-such-id\n"
    assert setup.stats(capsys)["work-dlq"] == (1, 0) and setup.stats(capsys)["work"] == (2, 0)
    code = main(["queue", "redrive", "--id", "no-such-id", "--config", str(setup.config)])
    captured = capsys.readouterr()
    assert code == 2 and "moved 0 messages" in captured.out
    assert captured.err == "error: 1 of the given ids are not in work-dlq: no-such-id\n"
    assert setup.stats(capsys)["work-dlq"] == (1, 0)


def test_redriven_messages_are_received_from_the_source_again(setup: Setup, capsys: pytest.CaptureFixture[str]) -> None:
    assert setup.cli(capsys, "redrive")[0] == 0
    assert setup.receive_work() == [0, 1, 2]


def test_missing_store_is_one_line_and_not_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, {"embedded_path": "nowhere/queue.sqlite"})
    code = main(["queue", "stats", "--config", str(config)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "nowhere/queue.sqlite" in err and "No such file" in err
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("limit", ["0", "-3", "ten"])
def test_a_peek_limit_below_one_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], limit: str) -> None:
    config = _config(tmp_path, {"embedded_path": "nowhere/queue.sqlite"})
    with pytest.raises(SystemExit) as exit_info:
        main(["queue", "peek", "work", "--max", limit, "--config", str(config)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "argument --max:" in err.splitlines()[-1]
    assert "at least 1" in err or "not a whole number" in err


def test_missing_sqs_queue_is_one_line(
    tmp_path: Path, aws_server: AwsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{aws_server.endpoint}/123456789012/absent.fifo"
    config = _config(tmp_path, {"backend": "sqs", "work_url": url, "endpoint_url": aws_server.endpoint})
    code = main(["queue", "peek", "work", "--config", str(config)])
    err = capsys.readouterr().err
    assert code == 2 and err == f"error: SQS queue {url} does not exist\n"
