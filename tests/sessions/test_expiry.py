"""Sessions expire `sessions.max_age_days` after their last save: the local store's sweep (run by `serve` at
start-up and hourly) and, for S3, the bucket lifecycle rule the deployment ships."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import uuid
from pathlib import Path

import pytest

from hummingbird_agent.cli import main
from hummingbird_agent.config.loading import load_config
from hummingbird_agent.runner.service import open_sessions
from hummingbird_agent.sessions import LocalSessionStore
from hummingbird_agent.sessions.local import sweep_periodically
from tests.deploy.manifests import KUBE_DIR, by_kind
from tests.servers import AwsServer

CONTEXT = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
DAY_S = 86400.0


async def saved(store: LocalSessionStore, age_days: float) -> str:
    """A session saved `age_days` ago."""
    sid = str(uuid.uuid4())
    await store.save(sid, CONTEXT, "# t\n", None)
    then = time.time() - age_days * DAY_S
    os.utime(store.path(sid) / "context.json", (then, then))
    return sid


async def test_the_sweep_removes_sessions_last_saved_before_the_age_and_nothing_else(tmp_path: Path) -> None:
    store = LocalSessionStore(tmp_path / "sessions")
    assert store.expire(30 * DAY_S) == 0  # no directory yet
    old, fresh, resumed = await saved(store, 31), await saved(store, 29), await saved(store, 40)
    await store.save(resumed, CONTEXT, "# t\n", None)  # a reply resumed it today: its age restarts
    cut_short = tmp_path / "sessions" / str(uuid.uuid4())  # a save that never wrote context.json
    cut_short.mkdir()
    os.utime(cut_short, (time.time() - 31 * DAY_S,) * 2)
    foreign = tmp_path / "sessions" / "notes-of-the-operator"
    foreign.mkdir()
    os.utime(foreign, (time.time() - 400 * DAY_S,) * 2)
    assert store.expire(30 * DAY_S) == 2
    assert not await store.exists(old) and not cut_short.exists()
    assert await store.exists(fresh) and await store.exists(resumed) and foreign.exists()
    assert (await store.load(fresh)).context == CONTEXT


@pytest.mark.parametrize("days", [30, 0])
async def test_serve_sweeps_the_local_store_when_it_opens_it(tmp_path: Path, days: int) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"sessions": {"directory": "sessions", "max_age_days": days}, "workflows": {}}))
    loaded = load_config(config, environ={})
    store = LocalSessionStore(tmp_path / "sessions")
    old, fresh = await saved(store, 31), await saved(store, 1)
    async with open_sessions(loaded) as sessions:
        assert await sessions.exists(old) is (days == 0)  # 0 keeps sessions forever
        assert await sessions.exists(fresh)


async def test_the_periodic_sweep_removes_what_ages_while_the_service_runs(tmp_path: Path) -> None:
    store = LocalSessionStore(tmp_path / "sessions")
    fresh = await saved(store, 1)
    sweeper = asyncio.create_task(sweep_periodically(store, 30 * DAY_S, 0.01))
    try:
        aged = await saved(store, 31)  # saved (and aged) after the service started
        for _ in range(3000):
            if not await store.exists(aged):
                break
            await asyncio.sleep(0.01)
        assert not await store.exists(aged) and await store.exists(fresh)
    finally:
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper


def test_the_s3_lifecycle_rule_matches_the_cluster_config_and_s3_accepts_it(aws_server: AwsServer) -> None:
    rule_file = json.loads((KUBE_DIR / "s3-sessions-lifecycle.json").read_text())
    cluster = by_kind("service/deployment.yaml", "ConfigMap")["data"]["config.yaml"]
    import yaml

    sessions = yaml.safe_load(cluster)["sessions"]
    [expire] = rule_file["Rules"]
    assert expire["Filter"] == {"Prefix": sessions["s3_prefix"]} and expire["Status"] == "Enabled"
    assert expire["Expiration"] == {"Days": sessions["max_age_days"]}
    assert expire["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    s3 = aws_server.client("s3")
    bucket = f"sessions-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration=rule_file)
    stored = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    s3.close()
    assert [(r["ID"], r["Filter"], r["Expiration"]["Days"]) for r in stored] == [
        (expire["ID"], {"Prefix": sessions["s3_prefix"]}, sessions["max_age_days"])]


@pytest.mark.parametrize(("sessions", "line"), [
    ({}, "sessions expire: 30 days after their last save (swept by serve)"),
    ({"backend": "s3", "s3_bucket": "b", "max_age_days": 7},
     "sessions expire: 7 days after their last save (by the bucket's lifecycle rule, not by the service)"),
    ({"max_age_days": 0}, "sessions expire: never (sessions.max_age_days 0)")])
def test_check_config_states_the_expiry(tmp_path: Path, sessions: dict[str, object], line: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"sessions": sessions, "workflows": {}}))
    assert main(["check-config", "--config", str(config)]) == 0
    assert line in capsys.readouterr().out.splitlines()


def test_check_config_refuses_a_negative_age(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"sessions": {"max_age_days": -1}, "workflows": {}}))
    assert main(["check-config", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: config.yaml: sessions.max_age_days") and len(err.splitlines()) == 1
