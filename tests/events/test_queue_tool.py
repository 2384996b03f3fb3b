"""`python -m hummingbird_agent queue stats|peek|redrive|purge` on the embedded queue and on SQS (moto, LocalStack):
counts, peeks that never show a body, redrive of one message and of the rest, purge with and without
confirmation, and one-line errors for a missing store or queue."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hummingbird_agent.cli import main
from hummingbird_agent.events import EmbeddedStore, OutgoingMessage, decode_sns_message, encode_envelope
from hummingbird_agent.events.admin import redrive_dedup_id, summarize
from hummingbird_agent.events.protocols import Queue, ReceivedMessage
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
    backend: str
    # Runs a coroutine function on (work, work-dlq) queue objects of the backend and returns its result.
    on_queues: Callable[[Callable[[Queue, Queue], Awaitable[Any]]], Any]

    def receive_work(self) -> list[tuple[int, int]]:
        """(n, receive count) of every message `work` holds (received, then made visible again)."""
        return self.on_queues(lambda work, _: _received(work))  # type: ignore[no-any-return]

    def cli(self, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
        code = main(["queue", *args, "--config", str(self.config)])
        out = capsys.readouterr()
        return code, out.out + out.err

    def stats(self, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple[int, int]]:
        code, out = self.cli(capsys, "stats", "--json")
        assert code == 0, out
        return {r["name"]: (r["depth"], r["in_flight"]) for r in json.loads(out)}


async def _received(work: Queue) -> list[tuple[int, int]]:
    got: list[ReceivedMessage] = []
    # No long poll: the embedded queue's wake-up event belongs to the first event loop that waited on it.
    while batch := await work.receive(10, 0, 30):
        got += batch
    await work.change_visibility_batch([m.receipt for m in got], 0)  # visible again for what follows
    return sorted((decode_sns_message(m.body).body["n"], m.receive_count) for m in got)


async def _dead_letter(work: Queue) -> None:
    """Receive twice what waits in `work` (max_receives 1): it ends in work-dlq."""
    for _ in range(2):
        await work.receive(10, 0, 0)


async def _fill_and_dead_letter(work: Queue, _: Queue | None = None) -> None:
    """Messages 0 and 1 end in work-dlq (received past max_receives 1), message 2 waits in work."""
    messages = [OutgoingMessage(encode_envelope("gitlab", "pipeline", _event(n)), f"g{n}", f"d{n}") for n in range(3)]
    await work.send_batch(messages[:2])
    await _dead_letter(work)
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
        dlq = store.queue("work-dlq", fifo=True)
        asyncio.run(_fill_and_dead_letter(work))
        config = _config(tmp_path, {"embedded_path": "queue.sqlite"})
        yield Setup(config, backend, lambda action: asyncio.run(action(work, dlq)))
        store.close()
        return
    aws: AwsServer = request.getfixturevalue(AWS_FIXTURES[backend])
    boto = aws.client("sqs")
    url = SqsSetup(aws, SqsClient(aws.region, aws.endpoint), boto).create("work", fifo=True, max_receives=1)

    def on_sqs(action: Callable[[Queue, Queue], Awaitable[Any]]) -> Any:
        async def run() -> Any:
            client = SqsClient(aws.region, aws.endpoint)
            await client.start()
            try:
                return await action(client.queue(url), client.queue(url.replace(".fifo", "-dlq.fifo")))
            finally:
                await client.aclose()

        return asyncio.run(run())

    on_sqs(_fill_and_dead_letter)
    queues = {"backend": "sqs", "work_url": url, "endpoint_url": aws.endpoint}
    yield Setup(_config(tmp_path, queues), backend, on_sqs)
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
    force = () if setup.backend == "embedded" else ("--force",)  # SQS: the work queue has a RedrivePolicy
    code = main(["queue", "peek", "work", "--json", *force, "--config", str(setup.config)])
    # Fresh receive counts (an SQS peek is itself a receive: one).
    assert code == 0 and [p["receive_count"] <= 1 for p in json.loads(capsys.readouterr().out)] == [True] * 3

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
    # Dead-lettered seconds after their first send: a re-send under the original deduplication id (what
    # StartMessageMoveTask does) would be dropped as a duplicate.
    code, out = setup.cli(capsys, "redrive")
    assert code == 0 and "moved 2 messages" in out, out
    assert setup.receive_work() == [(0, 1), (1, 1), (2, 1)]  # fresh receive counts
    # Dead-lettered again at once (received past max_receives 1), and redriven again: back once more.
    setup.on_queues(lambda work, _: _dead_letter(work))
    assert setup.stats(capsys)["work-dlq"] == (3, 0)
    code, out = setup.cli(capsys, "redrive")
    assert code == 0 and "moved 3 messages" in out, out
    assert setup.receive_work() == [(0, 1), (1, 1), (2, 1)]


def test_a_redrive_interrupted_between_send_and_delete_sends_no_second_copy(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    if setup.backend == "embedded":
        pytest.skip("the embedded redrive is one transaction: it cannot stop between send and delete")

    async def send_without_delete(work: Queue, dlq: Queue) -> None:
        [message] = await dlq.receive(1, 1, 30)
        await work.send_batch([OutgoingMessage(message.body, message.group_id, redrive_dedup_id(message))])
        await dlq.change_visibility_batch([message.receipt], 0)  # the crash: never deleted

    setup.on_queues(send_without_delete)
    code, out = setup.cli(capsys, "redrive")
    assert code == 0 and "moved 2 messages" in out, out
    assert [n for n, _ in setup.receive_work()] == [0, 1, 2]
    assert setup.stats(capsys)["work-dlq"] == (0, 0)


def test_a_peek_on_sqs_never_dead_letters_silently(setup: Setup, capsys: pytest.CaptureFixture[str]) -> None:
    if setup.backend == "embedded":
        pytest.skip("the embedded peek reads SQLite: it receives nothing")
    for _ in range(5):
        code, out = setup.cli(capsys, "peek", "work")
        assert code == 2 and out == ("error: a peek of work on SQS is a receive and counts toward its "
                                     "maxReceiveCount (1): pass --force to peek anyway\n")
    assert setup.stats(capsys)["work"] == (1, 0) and setup.stats(capsys)["work-dlq"] == (2, 0)
    assert setup.receive_work() == [(2, 1)]  # the worker's receive is the event's first
    # Forced, a peek past maxReceiveCount dead-letters the event: it says so.
    code, out = setup.cli(capsys, "peek", "work", "--force")
    assert code == 0 and "no messages seen" in out and "work-dlq gained 1 messages during the peek" in out, out
    assert setup.stats(capsys)["work-dlq"] == (3, 0)
    # Forced on fresh messages, it shows each one's receives left and names those it left with none.
    assert setup.cli(capsys, "redrive")[0] == 0
    code, out = setup.cli(capsys, "peek", "work", "--force")
    assert code == 0 and out.count("receives=1 (0 left)") == 3, out
    assert "warning: 3 peeked messages have no receive left: the next receive moves them to work-dlq" in out


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


def test_a_peeked_status_note_update_names_its_mr_and_group() -> None:
    body = encode_envelope("agent", "status_note", {"status_update": {"target": {"project_id": 1, "iid": 7}}})
    peeked = summarize("work", "m1", body, "status-note:1:7", 1)
    assert (peeked.source, peeked.kind, peeked.mr, peeked.group) == ("agent", "status_note", 7, "status-note:1:7")
