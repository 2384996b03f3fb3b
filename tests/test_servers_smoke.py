"""Smoke tests: the unmodified python-gitlab, google-genai and boto3 clients against the fakes."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import AsyncIterator

import gitlab
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from tests.servers import (
    DEVELOPER,
    GeminiServer,
    GitLabServer,
    MotoServer,
    function_call_turn,
    model_turn,
    text_part,
    text_turn,
    usage,
)
from tests.servers.samples import load


@pytest.fixture
def gl(gitlab_server: GitLabServer) -> gitlab.Gitlab:
    gitlab_server.add_project(1, "group/sub/project")
    gitlab_server.add_mr(1, 5, author_id=2, sha="a" * 40)
    with gitlab.Gitlab(gitlab_server.url, private_token=gitlab_server.bot_token) as client:
        yield client


# --- GitLab -----------------------------------------------------------------------------------
def test_gitlab_tokens_identify_users_and_bad_token_is_401(gitlab_server: GitLabServer, gl: gitlab.Gitlab):
    gl.auth()
    assert (gl.user.id, gl.user.username) == (9001, "hummingbird-bot")
    assert gl.projects.get("group/sub/project").id == 1
    assert gitlab_server.requests[-1].path == "/api/v4/projects/group%2Fsub%2Fproject"
    assert gitlab_server.requests[-1].header("PRIVATE-TOKEN") == "bot-token"
    with gitlab.Gitlab(gitlab_server.url, private_token="wrong") as bad:
        with pytest.raises(gitlab.GitlabAuthenticationError):
            bad.auth()


def test_gitlab_discussions_paginate_with_link_headers(gitlab_server: GitLabServer, gl: gitlab.Gitlab):
    for n in range(7):
        gitlab_server.add_discussion(1, 5, f"comment {n}", author_id=2, replies=[(3, f"reply {n}")])
    mr = gl.projects.get(1, lazy=True).mergerequests.get(5, lazy=True)
    pages = mr.discussions.list(iterator=True, per_page=3)
    bodies = [d.attributes["notes"][0]["body"] for d in pages]
    assert bodies == [f"comment {n}" for n in range(7)]
    assert (pages.total, pages.total_pages) == (7, 3)
    listed = gitlab_server.requests_to(r"/merge_requests/5/discussions$", "GET")
    assert [r.query.get("page", ["1"])[0] for r in listed] == ["1", "2", "3"]


def test_gitlab_note_create_reply_update_resolve_and_internal(gitlab_server: GitLabServer, gl: gitlab.Gitlab):
    mr = gl.projects.get(1, lazy=True).mergerequests.get(5, lazy=True)
    discussion = mr.discussions.create({"body": "Running the workflow...", "internal": True})
    reply = discussion.notes.create({"body": "a reply"})
    placeholder = discussion.notes.get(discussion.attributes["notes"][0]["id"])
    placeholder.body = "Analysis done"
    placeholder.save()
    discussion.resolved = True
    discussion.save()
    top = mr.notes.create({"body": "plain note"})
    top.body = "plain note, edited"
    top.save()

    stored = gitlab_server.discussions[(1, 5)]
    assert [n["body"] for n in stored[0]["notes"]] == ["Analysis done", "a reply"]
    assert all(n["internal"] and n["resolved"] for n in stored[0]["notes"])
    assert reply.author["id"] == 9001
    assert stored[1]["individual_note"] and stored[1]["notes"][0]["body"] == "plain note, edited"
    assert gitlab_server.requests_to(r"/discussions$", "POST")[0].json()["internal"] is True
    assert [n.body for n in mr.notes.list(get_all=True, sort="asc")] == [
        "Analysis done", "a reply", "plain note, edited"]
    with pytest.raises(gitlab.GitlabCreateError) as too_long:
        mr.notes.create({"body": "x" * 1_000_001})
    assert too_long.value.response_code == 400


def test_gitlab_read_token_cannot_write(gitlab_server: GitLabServer):
    gitlab_server.add_project(1, "g/p")
    gitlab_server.add_mr(1, 1)
    with gitlab.Gitlab(gitlab_server.url, private_token=gitlab_server.read_token) as reader:
        mr = reader.projects.get(1, lazy=True).mergerequests.get(1, lazy=True)
        with pytest.raises(gitlab.GitlabCreateError) as err:
            mr.notes.create({"body": "x"})
    assert err.value.response_code == 403
    assert gitlab_server.all_notes(1, 1) == []


def test_gitlab_members_all_and_404_for_non_member(gitlab_server: GitLabServer, gl: gitlab.Gitlab):
    gitlab_server.add_member(1, 42, DEVELOPER)
    project = gl.projects.get(1, lazy=True)
    assert project.members_all.get(42).access_level == 30
    with pytest.raises(gitlab.GitlabGetError) as err:
        project.members_all.get(43)
    assert err.value.response_code == 404


def test_gitlab_commit_statuses_paginate(gitlab_server: GitLabServer, gl: gitlab.Gitlab):
    for n in range(25):
        gitlab_server.add_commit_status(1, "a" * 40, f"job-{n}", "failed" if n % 5 == 0 else "success")
    commit = gl.projects.get(1, lazy=True).commits.get("a" * 40, lazy=True)
    statuses = commit.statuses.list(get_all=True, per_page=10)
    assert [s.name for s in statuses] == [f"job-{n}" for n in range(25)]
    assert len(gitlab_server.requests_to(r"/statuses$")) == 3
    assert set(load("gitlab/api/commit_statuses.json")[0]) <= set(statuses[0].attributes)


def test_gitlab_job_trace_streams_in_chunks(gitlab_server: GitLabServer, gl: gitlab.Gitlab):
    log = b"".join(b"line %06d \x1b[31mERROR\x1b[0m\n" % n for n in range(40_000))
    gitlab_server.add_job(1, 77, trace=log)
    gitlab_server.add_job(1, 78, trace=None)
    gitlab_server.add_job(1, 79, trace=lambda: (bytes([65 + n]) * 65536 for n in range(16)))
    jobs = gl.projects.get(1, lazy=True).jobs
    job = jobs.get(77)
    chunks = list(job.trace(streamed=True, iterator=True, chunk_size=64 * 1024))
    assert job.status == "failed" and len(chunks) > 1 and b"".join(chunks) == log
    with pytest.raises(gitlab.GitlabGetError):
        jobs.get(78, lazy=True).trace()
    generated = b"".join(jobs.get(79, lazy=True).trace(streamed=True, iterator=True))
    assert len(generated) == 16 * 65536 and generated.endswith(b"P" * 65536)


def test_gitlab_archive_files_and_changes(gitlab_server: GitLabServer, gl: gitlab.Gitlab):
    gitlab_server.add_file(1, "src/app.py", "print('hi')\n", ref="a" * 40)
    gitlab_server.add_archive(1, "a" * 40)
    project = gl.projects.get(1)
    archive = project.repository_archive(sha="a" * 40, format="tar.gz")
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("src/app.py"))
        assert tar.extractfile(member).read() == b"print('hi')\n"
    assert project.files.raw("src/app.py", ref="a" * 40) == b"print('hi')\n"
    assert project.files.get("src/app.py", ref="a" * 40).decode() == b"print('hi')\n"
    with pytest.raises(gitlab.GitlabGetError):
        project.files.raw("missing.py", ref="a" * 40)
    mr = project.mergerequests.get(5)
    assert [c["new_path"] for c in mr.changes()["changes"]] == ["README", "VERSION"]
    assert [m.iid for m in project.mergerequests.list(state="opened", get_all=True)] == [5]


def test_gitlab_injected_failures_are_retried(gitlab_server: GitLabServer):
    gitlab_server.add_project(1, "g/p")
    gitlab_server.add_mr(1, 3)
    gitlab_server.fail_next(2, 500, path=r"/merge_requests/3$")
    gitlab_server.fail_next(1, 429, path=r"/projects/1$", headers={"Retry-After": "0"})
    with gitlab.Gitlab(gitlab_server.url, private_token="bot-token", retry_transient_errors=True) as client:
        assert client.projects.get(1).id == 1
        assert client.projects.get(1, lazy=True).mergerequests.get(3).iid == 3
    assert [r.path for r in gitlab_server.requests].count("/api/v4/projects/1/merge_requests/3") == 3
    assert len(gitlab_server.requests_to(r"/projects/1$")) == 2


# --- Gemini -----------------------------------------------------------------------------------
def _client(server: GeminiServer, api_version: str, **options: object) -> genai.Client:
    http = types.HttpOptions(base_url=server.url, api_version=api_version, **options)
    return genai.Client(api_key="test-key", http_options=http)


@pytest.fixture
async def genai_client(gemini_server: GeminiServer) -> AsyncIterator[genai.Client]:
    client = _client(gemini_server, "v1beta")
    yield client
    await client.aio.aclose()
    client.close()


_TOOLS = [types.Tool(function_declarations=[types.FunctionDeclaration(
    name="gitlab_get_job_log", description="Fetch a job log",
    parameters_json_schema={"type": "object", "properties": {"job_id": {"type": "integer"}}},
)])]


@pytest.mark.parametrize("api_version", ["v1beta", "v1"])
async def test_gemini_function_call_round_trip(gemini_server: GeminiServer, api_version: str):
    gemini_server.script(
        function_call_turn("gitlab_get_job_log", {"job_id": 77}, usage_metadata=usage(120, 10, cached=64)),
        text_turn("The job failed because of a timeout."),
    )
    client = _client(gemini_server, api_version)
    try:
        config = types.GenerateContentConfig(tools=_TOOLS, system_instruction="You analyse CI failures.")
        first = await client.aio.models.generate_content(model="gemini-2.5-flash", contents="why?", config=config)
        call = first.function_calls[0]
        history = [types.Content(role="user", parts=[types.Part(text="why?")]), first.candidates[0].content,
                   types.Content(role="user", parts=[types.Part.from_function_response(
                       name=call.name, response={"log": "timeout after 3600 s"})])]
        second = await client.aio.models.generate_content(model="gemini-2.5-flash", contents=history, config=config)
    finally:
        await client.aio.aclose()
        client.close()
    assert (call.name, call.args) == ("gitlab_get_job_log", {"job_id": 77})
    assert first.usage_metadata.cached_content_token_count == 64
    assert second.text == "The job failed because of a timeout."
    assert second.usage_metadata.prompt_token_count > 0
    calls = gemini_server.generate_calls
    assert [(c.version, c.model) for c in calls] == [(api_version, "gemini-2.5-flash")] * 2
    assert calls[0].body["tools"][0]["functionDeclarations"][0]["name"] == "gitlab_get_job_log"
    assert calls[1].body["contents"][2]["parts"][0]["functionResponse"]["name"] == "gitlab_get_job_log"


async def test_gemini_429_then_success_with_sdk_retry(gemini_server: GeminiServer):
    gemini_server.script(text_turn("ok"))
    gemini_server.fail_next(1, 429)
    retry = types.HttpRetryOptions(attempts=3, initial_delay=0.01, max_delay=0.02, http_status_codes=[429])
    client = _client(gemini_server, "v1beta", retry_options=retry)
    try:
        reply = await client.aio.models.generate_content(model="gemini-2.5-pro", contents="hi")
    finally:
        await client.aio.aclose()
        client.close()
    assert reply.text == "ok"
    assert len(gemini_server.requests) == 2 and gemini_server.served == 1


async def test_gemini_errors_without_retry_and_when_out_of_turns(gemini_server: GeminiServer,
                                                                   genai_client: genai.Client):
    gemini_server.fail_next(1, 503)
    with pytest.raises(genai_errors.ServerError) as unavailable:
        await genai_client.aio.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert unavailable.value.code == 503
    with pytest.raises(genai_errors.ServerError) as exhausted:
        await genai_client.aio.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert "no model turns left" in exhausted.value.message
    gemini_server.errors.clear()  # the fixture fails a test whose model ran out of turns


async def test_gemini_stream_embed_and_count(gemini_server: GeminiServer, genai_client: genai.Client):
    gemini_server.script(model_turn(text_part("first "), text_part("second")))
    models = genai_client.aio.models
    chunks = [c.text async for c in await models.generate_content_stream(model="gemini-2.5-flash", contents="x")]
    assert "".join(chunks) == "first second" and len(chunks) == 2
    texts = ["pytest timeout in test_api", "pytest timeout in test_db", "disk quota exceeded"]
    result = await models.embed_content(model="gemini-embedding-001", contents=texts)
    vectors = [e.values for e in result.embeddings]
    again = await models.embed_content(model="gemini-embedding-001", contents=texts[:1])
    dot = [sum(a * b for a, b in zip(vectors[0], v, strict=True)) for v in vectors]
    assert again.embeddings[0].values == vectors[0] and dot[1] > dot[2]
    counted = await models.count_tokens(model="gemini-2.5-flash", contents="x" * 400)
    assert counted.total_tokens == 100


# --- AWS (moto) -------------------------------------------------------------------------------
def test_sqs_fifo_send_receive_delete(moto_server: MotoServer):
    sqs = moto_server.client("sqs")
    url = sqs.create_queue(QueueName="work.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    for n in range(2):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{n}", MessageGroupId="mr-5", MessageDeduplicationId=f"d{n}")
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
    assert [m["Body"] for m in got] == ["m0", "m1"]
    assert got[0]["Attributes"]["MessageGroupId"] == "mr-5"
    for message in got:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)
    sqs.close()


def test_sns_to_sqs_envelope_matches_real_shape(moto_server: MotoServer):
    sns, sqs = moto_server.client("sns"), moto_server.client("sqs")
    topic = sns.create_topic(Name="gitlab-events")["TopicArn"]
    url = sqs.create_queue(QueueName="ingress")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    sns.publish(TopicArn=topic, Message='{"object_kind": "note"}', Subject="TestSubject",
                MessageAttributes={"event_type": {"DataType": "String", "StringValue": "note"}})
    envelope = json.loads(sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"])
    real = load("aws/sns_to_sqs_notification_raw_delivery_disabled.json")
    assert set(real) <= set(envelope) and envelope["Type"] == "Notification"
    assert json.loads(envelope["Message"]) == {"object_kind": "note"}
    assert envelope["MessageAttributes"]["event_type"] == {"Type": "String", "Value": "note"}
    sns.close()
    sqs.close()


def test_s3_put_get_and_reset_clears_state(moto_server: MotoServer, moto_endpoint: str):
    s3 = moto_server.client("s3")
    s3.create_bucket(Bucket="sessions")
    s3.put_object(Bucket="sessions", Key="sessions/abc/context.json", Body=b'{"k": 1}')
    assert s3.get_object(Bucket="sessions", Key="sessions/abc/context.json")["Body"].read() == b'{"k": 1}'
    assert moto_endpoint == moto_server.endpoint and moto_endpoint.startswith("http://127.0.0.1:")
    moto_server.reset()
    assert s3.list_buckets()["Buckets"] == []
    s3.close()
