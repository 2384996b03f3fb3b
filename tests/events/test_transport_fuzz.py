"""Fuzz (hypothesis): arbitrary bytes and mutated envelopes never raise anything but EnvelopeError from
the codec, and never stop the router or the worker."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hummingbird_agent.errors import EnvelopeError
from hummingbird_agent.events import EmbeddedStore, OutgoingMessage, WorkerSettings, decode_sns_message, encode_envelope
from tests.events.support import Recorder, running_loops, wait_for

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def mutated_envelopes(draw: st.DrawFn) -> str:
    compress = draw(st.booleans())
    outer = json.loads(
        encode_envelope("gitlab", "note", {"object_attributes": {"discussion_id": "d1"}}, compress=compress)
    )
    target = draw(st.sampled_from(["Type", "Message", "MessageAttributes", "MessageId", "extra"]))
    action = draw(st.sampled_from(["drop", "replace", "truncate", "attr"]))
    if action == "drop":
        outer.pop(target, None)
    elif action == "replace":
        outer[target] = draw(JSON)
    elif action == "attr":
        name = draw(st.sampled_from(["source", "event_type", "content_encoding"]))
        outer["MessageAttributes"][name] = draw(JSON)
    else:
        text = json.dumps(outer)
        return text[: draw(st.integers(0, len(text)))]
    return json.dumps(outer)


BODIES = st.one_of(
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")), st.text(max_size=200), mutated_envelopes()
)


@settings(max_examples=80, deadline=None, database=None)
@given(raw=st.one_of(st.binary(max_size=300), BODIES))
def test_codec_raises_only_envelope_error(raw: str | bytes) -> None:
    try:
        decode_sns_message(raw)
    except EnvelopeError as exc:
        assert str(exc)


FAST = WorkerSettings(max_concurrent=4, visibility_timeout_s=30, heartbeat_interval_s=5, wait_s=0.2, shutdown_grace_s=2)


async def _scenario(directory: Path, bodies: list[str]) -> None:
    store = EmbeddedStore(directory / "fuzz.sqlite")
    store.open()
    ingress = store.queue("ingress", fifo=False, dead_letter="ingress-dlq", max_receives=2)
    work = store.queue("work", fifo=True, dead_letter="work-dlq", max_receives=2)
    await ingress.send_batch([OutgoingMessage(b) for b in bodies])
    await work.send_batch([OutgoingMessage(b, f"g{i}", f"d{i}") for i, b in enumerate(bodies)])
    sentinel = {"sentinel": True}
    recorder = Recorder()
    async with running_loops(ingress, work, recorder, FAST) as tasks:
        await ingress.send_batch([OutgoingMessage(encode_envelope("gitlab", "pipeline", sentinel))])
        await wait_for(lambda: any(e.body == sentinel for e in recorder.events), 10, "the sentinel")
        assert not any(t.done() for t in tasks)  # both loops still running
    store.close()


@settings(max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=st.lists(BODIES, min_size=1, max_size=6))
def test_garbage_never_stops_the_router_or_the_worker(bodies: list[str]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(_scenario(Path(directory), bodies))


def test_mutations_cover_both_valid_and_invalid() -> None:
    outcomes: set[str] = set()

    @settings(max_examples=60, deadline=None, database=None)
    @given(raw=mutated_envelopes())
    def probe(raw: Any) -> None:
        try:
            decode_sns_message(raw)
            outcomes.add("ok")
        except EnvelopeError:
            outcomes.add("error")

    probe()
    assert outcomes == {"ok", "error"}
