"""One writer per MR's status note: two service processes on one queue (the embedded queue's SQLite file, and
LocalStack's SQS), 20 failed pipelines of one MR queued at once. Each process reads, merges and writes the note; the
MR's own queue group lets one update run at a time, so none overwrites another it did not read: one note, the
pipelines, newest first."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.events import EmbeddedStore, OutgoingMessage, encode_envelope
from hummingbird_agent.gitlab.seal import Seal
from hummingbird_agent.triage.status_note import parse
from tests.runner.conftest import triage_on
from tests.runner.harness import IID, MEMBER, PROJECT_ID, REPO, SECRETS, pipeline_event, seed_gitlab, service_config
from tests.servers import GeminiServer, GitLabServer
from tests.servers.localstack import LocalStackServer
from tests.triage.conftest import failing_log
from tests.triage.world import Attempt, CiWorld, sha_of

pytestmark = [pytest.mark.podman, pytest.mark.timeout(600)]

PIPELINES = list(range(701, 721))
PARSE = "AssertionError: parse('1.2') returned None"
READY = re.compile(r"serve ready: ")
SEAL = Seal.from_secrets(None, SECRETS["HB_BOT_TOKEN"]).within(f"{PROJECT_ID}!{IID}")


class Backend:
    """The queue both processes share: its config section, how the test feeds it and whether it is empty."""

    def __init__(self, queues: dict[str, Any], feed: Callable[[list[str]], None], idle: Callable[[], bool]) -> None:
        self.queues, self.feed, self.idle = queues, feed, idle


def _embedded(tmp_path: Path) -> Backend:
    path = tmp_path / "queue.sqlite"

    def feed(bodies: list[str]) -> None:
        store = EmbeddedStore(path)
        store.open()
        try:
            ingress = store.queue("ingress", fifo=False)
            for start in range(0, len(bodies), budgets.QUEUE_BATCH_MAX):
                batch = [OutgoingMessage(b) for b in bodies[start:start + budgets.QUEUE_BATCH_MAX]]
                assert not asyncio.run(ingress.send_batch(batch)).failed
        finally:
            store.close()

    def idle() -> bool:
        store = EmbeddedStore(path)
        store.open()
        try:
            return all(store.queue(n, fifo=False).counts() == (0, 0) for n in ("ingress", "work"))
        finally:
            store.close()

    return Backend({"backend": "embedded", "embedded_path": str(path)}, feed, idle)


def _sqs(server: LocalStackServer) -> Backend:
    sqs = server.client("sqs")
    name = uuid.uuid4().hex[:12]
    ingress = sqs.create_queue(QueueName=f"in-{name}")["QueueUrl"]
    work = sqs.create_queue(QueueName=f"work-{name}.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    counts = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]

    def feed(bodies: list[str]) -> None:
        for start in range(0, len(bodies), 10):
            entries = [{"Id": str(i), "MessageBody": b} for i, b in enumerate(bodies[start:start + 10])]
            assert not sqs.send_message_batch(QueueUrl=ingress, Entries=entries).get("Failed")

    def idle() -> bool:
        held = (sqs.get_queue_attributes(QueueUrl=u, AttributeNames=counts)["Attributes"] for u in (ingress, work))
        return not any(int(a[n]) for a in held for n in counts)

    section = {"backend": "sqs", "ingress_url": ingress, "work_url": work, "endpoint_url": server.endpoint,
               "region": server.region}
    return Backend(section, feed, idle)


@pytest.fixture(params=["embedded", "sqs-localstack"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "embedded":
        return _embedded(tmp_path)
    return _sqs(request.getfixturevalue("localstack_server"))


def _config(tmp_path: Path, gitlab: GitLabServer, model: GeminiServer, backend: Backend) -> Path:
    no_aws: Any = SimpleNamespace(endpoint="", region="us-east-1")  # the queues section is replaced below
    config = service_config(gitlab, model, no_aws, {"ingress": "", "work": ""})
    triage_on(config)
    config["queues"] = {**backend.queues, "visibility_timeout_s": 30, "heartbeat_interval_s": 5, "wait_time_s": 1,
                        "shutdown_grace_s": 10, "max_concurrent_agents": 4}
    config["sessions"] = {"backend": "local", "directory": str(tmp_path / "sessions")}
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
def processes(tmp_path: Path, gitlab_server: GitLabServer, backend: Backend) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two `serve` processes of one config, each with its own log file."""
    seed_gitlab(gitlab_server)
    with GeminiServer() as model:
        config = _config(tmp_path, gitlab_server, model, backend)
        env = {**os.environ, **SECRETS, "PYTHONPATH": str(REPO)}
        logs = [tmp_path / f"serve-{n}.log" for n in (1, 2)]
        children = [_serve(config, log, env) for log in logs]
        try:
            for child, log in zip(children, logs, strict=True):
                _wait(lambda log=log: bool(READY.search(log.read_text())), f"{log.name} ready", child)
            yield children
        finally:
            for child in children:
                child.terminate()
            assert [c.wait(60) for c in children] == [0, 0], [log.read_text()[-2000:] for log in logs]
        assert not model.generate_calls  # every failure is pre-existing: no model run


def _serve(config: Path, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as err:
        return subprocess.Popen([sys.executable, "-m", "hummingbird_agent", "serve", "--config", str(config)],
                                stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=config.parent)


def _wait(done: Callable[[], bool], what: str, child: subprocess.Popen[bytes] | None = None,
          timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert child is None or child.poll() is None, f"{what}: the process exited"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _status_notes(gitlab: GitLabServer) -> list[dict[str, Any]]:
    bot = gitlab.bot_user["id"]
    return [n for d in gitlab.discussions.get((PROJECT_ID, IID), []) for n in d["notes"]
            if n["author"]["id"] == bot and n["body"].startswith("<!-- hummingbird-status ")]


def test_two_processes_and_twenty_pipelines_make_one_note_with_the_newest_first(
        gitlab_server: GitLabServer, backend: Backend, processes: list[subprocess.Popen[bytes]]) -> None:
    world = CiWorld(gitlab_server)
    base = sha_of("base")
    world.pipeline(base, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=1))])
    world.mr(IID, base_sha=base, sha=sha_of("commit", PIPELINES[-1]), author_id=MEMBER)
    for pipeline_id in PIPELINES:  # one push each: a version of the MR shows each commit on the same base
        world.gl.add_version(world.project_id, IID, head_sha=sha_of("commit", pipeline_id), base_sha=base)
        world.pipeline(sha_of("commit", pipeline_id), [Attempt("unit-tests", trace=failing_log(
            "test_parse", PARSE, run=pipeline_id))], ref="feature", pipeline_id=pipeline_id)
    order = random.Random(7).sample(PIPELINES, len(PIPELINES))
    backend.feed([encode_envelope("gitlab", "pipeline", pipeline_event(pipeline_id=p, sha=sha_of("commit", p)))
                  for p in order])
    assert len(PIPELINES) <= budgets.STATUS_NOTE_MAX_COMMITS  # every pipeline fits in the note
    newest = sorted(PIPELINES, reverse=True)

    _wait(lambda: backend.idle() and gitlab_server.in_progress == 0, "every update handled", timeout_s=400)
    [note] = _status_notes(gitlab_server)
    assert [e.pipeline_id for e in parse(note["body"], SEAL)] == newest
    assert not [n for n in gitlab_server.discussions[(PROJECT_ID, IID)] if n["notes"][0]["author"]["id"] !=
                gitlab_server.bot_user["id"]]  # the bot wrote every note there is
