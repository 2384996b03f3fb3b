"""The whole service in-process for end-to-end tests: SNS topic -> SQS ingress -> router -> FIFO -> worker
-> handlers -> agent run in a real Podman sandbox, against the fake GitLab, a scripted model server (Gemini,
Anthropic or OpenAI-compatible) and moto (SQS, SNS, S3). Webhook bodies are built from the real GitLab samples."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hummingbird_agent.config.loading import LoadedConfig, load_config
from hummingbird_agent.gitlab.markers import SessionMarker, parse_markers
from hummingbird_agent.observability import setup_logging
from hummingbird_agent.runner.service import serve_async
from tests.events.support import gzip_base64, sns_attributes
from tests.servers import FakeHTTPServer, GitLabServer, MotoServer, samples
from tests.servers.model_common import model_section

REPO = Path(__file__).resolve().parents[2]
PROJECT_ID, PROJECT, IID = 1, "group/project", 7
SHA = "a" * 40
MEMBER, OUTSIDER = 42, 77
DEVELOPER, REPORTER = 30, 20
SECRETS = {"HB_BOT_TOKEN": "bot-token", "GEMINI_API_KEY": "test-key", "GITLAB_READ_TOKEN": "read-token",
           "GITLAB_WEBHOOK_SECRET": "hook-secret-value"}


def service_config(gitlab: GitLabServer, model: FakeHTTPServer, moto: MotoServer, queues: dict[str, str],
                   project: dict[str, Any] | None = None, provider: str = "gemini") -> dict[str, Any]:
    settings = {"max_runs_per_mr": 2, **(project or {})}
    sources = {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}}

    def workflow(prompt: str, description: str, triggers: list[str]) -> dict[str, Any]:
        return {"description": description, "prompt": str(REPO / "workflows" / prompt), "triggers": triggers,
                "max_iterations": 6, "model": "gemini-test", "data_sources": sources,
                "projects": {PROJECT: settings}}

    return {
        "gitlab": {"url": gitlab.url, "token_env": "HB_BOT_TOKEN"},
        "model": model_section(provider, model, "GEMINI_API_KEY"),
        "queues": {"backend": "sqs", "ingress_url": queues["ingress"], "work_url": queues["work"],
                   "endpoint_url": moto.endpoint, "region": moto.region, "visibility_timeout_s": 30,
                   "heartbeat_interval_s": 5, "wait_time_s": 1, "shutdown_grace_s": 10},
        "webhook": {"enabled": False, "port": 0},
        "sessions": {"backend": "s3", "s3_bucket": "sessions", "s3_prefix": "sessions/"},
        "sandbox": {"backend": "podman"},
        "workflows": {
            "analyze-failures": workflow("analyze-failures.md", "Analyse failed pipelines", ["pipeline"]),
            "review-mr": workflow("review-mr.md", "Review the merge request", ["merge_request"]),
            "review-docs": workflow("review-mr.md", "Review the documentation", []),
            "review-other": {**workflow("review-mr.md", "Another project's review", []),
                             "projects": {"other/app": settings}},
        },
    }


@dataclass
class Service:
    """A running service plus the fakes it talks to."""

    loaded: LoadedConfig
    gitlab: GitLabServer
    model: Any
    """The scripted model server (Gemini, Anthropic or OpenAI fake): `.script(...)`, `.generate_calls`."""
    moto: MotoServer
    topic_arn: str
    sns: Any
    log_path: Path

    # --- driving ------------------------------------------------------------------------------
    def publish(self, body: dict[str, Any]) -> None:
        """What GitLab -> forwarder -> SNS delivers: gzip+base64 Message with source/event_type attributes."""
        self.sns.publish(TopicArn=self.topic_arn, Message=gzip_base64(body),
                         MessageAttributes=sns_attributes(body["object_kind"], True))

    async def wait_for(self, predicate: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; notes: {self.bodies()}")
            await asyncio.sleep(0.05)

    async def finished(self) -> None:
        """Until nothing more can happen: every queued message handled and deleted (a running handler's
        message is in flight) and no request still being carried out by the fake GitLab (a late commit)."""
        sqs = self.moto.client("sqs")
        queues = (self.loaded.config.queues.ingress_url, self.loaded.config.queues.work_url)
        counts = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]

        def idle() -> bool:
            held = (sqs.get_queue_attributes(QueueUrl=url, AttributeNames=counts)["Attributes"] for url in queues)
            return not any(int(a[n]) for a in held for n in counts) and self.gitlab.in_progress == 0

        try:
            await self.wait_for(idle, "the queues to drain and GitLab to finish", timeout_s=180.0)
        finally:
            sqs.close()

    async def settle(self, seconds: float = 3.0) -> None:
        """Let queued work drain when the expectation is that nothing (more) happens."""
        await asyncio.sleep(seconds)

    # --- observing ----------------------------------------------------------------------------
    def discussions(self) -> list[dict[str, Any]]:
        return list(self.gitlab.discussions.get((PROJECT_ID, IID), []))

    def bot_notes(self) -> list[dict[str, Any]]:
        bot = self.gitlab.bot_user["id"]
        return [n for d in self.discussions() for n in d["notes"] if n["author"]["id"] == bot]

    def bodies(self) -> list[str]:
        return [n["body"] for n in self.bot_notes()]

    def final_notes(self) -> list[dict[str, Any]]:
        """The bot's analysis notes (neither placeholders nor the MR's status note)."""
        return [n for n in self.bot_notes()
                if not n["body"].startswith(("Running the workflow", "<!-- hummingbird-status "))]

    def status_notes(self) -> list[dict[str, Any]]:
        return [n for n in self.bot_notes() if n["body"].startswith("<!-- hummingbird-status ")]

    def markers(self) -> list[SessionMarker]:
        return [m for body in self.bodies() for m in parse_markers(body)]

    def s3_objects(self) -> dict[str, bytes]:
        s3 = self.moto.client("s3")
        try:
            listing = s3.list_objects_v2(Bucket="sessions").get("Contents", [])
            return {o["Key"]: s3.get_object(Bucket="sessions", Key=o["Key"])["Body"].read() for o in listing}
        finally:
            s3.close()


# --- webhook bodies from the real samples -------------------------------------------------------
def _project() -> dict[str, Any]:
    project = samples.load("gitlab/webhooks_docs/pipeline_event.json")["project"]
    project.update(id=PROJECT_ID, path_with_namespace=PROJECT, name="project")
    return project


def pipeline_event(status: str = "failed", pipeline_id: int = 501, sha: str = SHA,
                   source: str = "merge_request_event", ref: str = "feature") -> dict[str, Any]:
    """A pipeline hook of the MR's pipeline; of any other `source`, GitLab's hook names no MR."""
    body = samples.load("gitlab/webhooks_docs/pipeline_event.json")
    body["project"] = _project()
    body["object_attributes"].update(id=pipeline_id, status=status, source=source, sha=sha, ref=ref)
    body["merge_request"].update(iid=IID, title="Add frob", target_branch="main")
    if source != "merge_request_event":
        body["merge_request"] = None
    body["user"]["username"] = "alice"
    return body


def merge_request_event(action: str = "open", draft: bool = False) -> dict[str, Any]:
    body = samples.load("gitlab/webhooks_docs/merge_request_event.json")
    body["project"] = _project()
    attrs = body["object_attributes"]
    attrs.update(iid=IID, action=action, draft=draft, work_in_progress=draft, target_branch="main",
                 title="Draft: Add frob" if draft else "Add frob")
    attrs["last_commit"] = {**(attrs.get("last_commit") or {}), "id": SHA}
    return body


def note_event(note: dict[str, Any], discussion_id: str, author_id: int) -> dict[str, Any]:
    body = samples.load("gitlab/webhooks_docs/note_event_merge_request.json")
    body["project"] = _project()
    body["merge_request"].update(iid=IID, target_branch="main", title="Add frob")
    body["merge_request"]["last_commit"] = {"id": SHA}
    body["user"].update(id=author_id, username=f"user{author_id}")
    body["object_attributes"].update(
        id=note["id"], note=note["body"], author_id=author_id, action="create", noteable_type="MergeRequest",
        discussion_id=discussion_id, type=note.get("type"), system=False,
    )
    return body


def comment(service: Service, text: str, author_id: int = MEMBER) -> dict[str, Any]:
    """A new top-level comment on the MR, in the fake GitLab and as the webhook GitLab would send."""
    discussion = service.gitlab.add_discussion(PROJECT_ID, IID, text, author_id)
    return note_event(discussion["notes"][0], discussion["id"], author_id)


def reply(service: Service, discussion_id: str, text: str, author_id: int = MEMBER) -> dict[str, Any]:
    note = service.gitlab.add_reply(PROJECT_ID, IID, discussion_id, text, author_id)
    return note_event(note, discussion_id, author_id)


def seed_gitlab(gitlab: GitLabServer) -> None:
    gitlab.add_project(PROJECT_ID, PROJECT)
    gitlab.add_mr(PROJECT_ID, IID, sha=SHA, title="Add frob", author_id=MEMBER)
    gitlab.add_member(PROJECT_ID, MEMBER, DEVELOPER)
    gitlab.add_member(PROJECT_ID, OUTSIDER, REPORTER)
    gitlab.add_member(PROJECT_ID, gitlab.bot_user["id"], DEVELOPER)


@contextlib.asynccontextmanager
async def start_service(
    tmp_path: Path, gitlab: GitLabServer, model: FakeHTTPServer, moto: MotoServer,
    project: dict[str, Any] | None = None, tweak: Callable[[dict[str, Any]], None] | None = None,
    provider: str = "gemini", secrets: dict[str, str] | None = None,
) -> AsyncIterator[Service]:
    sqs, sns, s3 = moto.client("sqs"), moto.client("sns"), moto.client("s3")
    ingress = sqs.create_queue(QueueName="ingress", Attributes={"VisibilityTimeout": "5"})["QueueUrl"]
    work = sqs.create_queue(QueueName="work.fifo", Attributes={"FifoQueue": "true", "VisibilityTimeout": "30"})
    arn = sqs.get_queue_attributes(QueueUrl=ingress, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    topic = sns.create_topic(Name="gitlab-events")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    s3.create_bucket(Bucket="sessions")
    s3.close()
    sqs.close()
    config = service_config(gitlab, model, moto, {"ingress": ingress, "work": work["QueueUrl"]}, project, provider)
    if tweak is not None:
        tweak(config)
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))
    loaded = load_config(path, {**os.environ, **SECRETS, **(secrets or {})})
    log_path = tmp_path / "service.log"
    log_stream = log_path.open("w")
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    redact = setup_logging("DEBUG", loaded.secret_values(), stream=log_stream, json_lines=True)
    stop = asyncio.Event()
    task = asyncio.create_task(serve_async(loaded, "all", redact, stop))
    service = Service(loaded, gitlab, model, moto, topic, sns, log_path)
    try:
        yield service
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 60) == 0
        sns.close()
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        log_stream.close()


def expect_turns(model: Any, *turns: dict[str, Any]) -> None:
    model.script(*copy.deepcopy(list(turns)))


def states_posted(service: Service, sha: str | None = None) -> list[str]:
    """The states the service posted for commit statuses, in order (GitLab moves an open status to its next state
    instead of creating one, so `posted_statuses` shows only where each ended)."""
    return [str(r.arg("state")) for r in service.gitlab.requests
            if r.method == "POST" and "/statuses/" in r.path and (sha is None or r.path.endswith(sha))]
