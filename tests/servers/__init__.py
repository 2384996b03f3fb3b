"""Fake network peers for tests: real HTTP servers on 127.0.0.1 ephemeral ports (GitLab, Gemini)
and two AWS backends (a moto server, LocalStack). Fixtures in tests/conftest.py start and stop them."""

from tests.servers.base import FakeHTTPServer, HTTPError, Request, Response, json_response
from tests.servers.gemini import (
    GeminiServer,
    embed_text,
    empty_turn,
    function_call_part,
    function_call_turn,
    model_turn,
    text_part,
    text_turn,
    usage,
)
from tests.servers.gitlab import GitLabServer
from tests.servers.gitlab_state import DEVELOPER, GUEST, MAINTAINER, OWNER, REPORTER
from tests.servers.localstack import LocalStackServer
from tests.servers.moto import AWS_TEST_ENV, AwsServer, MotoServer

__all__ = [
    "AWS_TEST_ENV",
    "AwsServer",
    "DEVELOPER",
    "GUEST",
    "MAINTAINER",
    "OWNER",
    "REPORTER",
    "FakeHTTPServer",
    "GeminiServer",
    "GitLabServer",
    "HTTPError",
    "LocalStackServer",
    "MotoServer",
    "Request",
    "Response",
    "embed_text",
    "empty_turn",
    "function_call_part",
    "function_call_turn",
    "json_response",
    "model_turn",
    "text_part",
    "text_turn",
    "usage",
]
