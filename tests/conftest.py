"""Shared pytest fixtures: the fake network peers of tests/servers/, one fresh server per test
(moto: one process per session, reset per test; LocalStack: one process per session, fresh names)."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator

import pytest

from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.models.gemini import GeminiModel, GeminiSettings
from hummingbird_agent.models.retry import RetryPolicy
from tests.servers import AWS_TEST_ENV, AwsServer, GeminiServer, GitLabServer, LocalStackServer, MotoServer
from tests.servers.anthropic import AnthropicServer
from tests.servers.k8s import KubeServer
from tests.servers.localstack import installed as localstack_installed
from tests.servers.openai import OpenAIServer
from tests.servers.testing_farm import TestingFarmServer


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Test workers (`make test`, pytest-xdist `--dist loadgroup`) take whole modules, whose module-scoped fixtures
    (a sandbox, a built image) would otherwise be set up twice at once; the llama.cpp tier is one group, so one
    worker loads the model. Without workers the marks do nothing."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = "llamacpp" if item.get_closest_marker("llamacpp") else item.nodeid.split("::")[0]
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def _root_logging() -> Iterator[None]:
    """A handler a test's CLI command put on the root logger goes with the test: it writes to that test's captured
    stderr, closed afterwards, where a later test's log line would fail (pytest's own handlers are its business)."""
    root = logging.getLogger()
    before, level = set(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in before and not type(handler).__module__.startswith("_pytest"):
            root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture
def gitlab_server() -> Iterator[GitLabServer]:
    """A started fake GitLab; tokens `bot-token` (api scope) and `read-token` (read_api)."""
    with GitLabServer() as server:
        yield server
    assert not server.errors, f"fake GitLab hit a bug: {server.errors}"


@pytest.fixture
def gemini_server() -> Iterator[GeminiServer]:
    """A started scripted Gemini server; API key `test-key`. Script turns with `.script(...)`."""
    with GeminiServer() as server:
        yield server
    assert not server.errors, f"scripted Gemini server: {server.errors}"


@pytest.fixture
async def gemini_model(gemini_server: GeminiServer) -> AsyncIterator[GeminiModel]:
    """The real Gemini adapter on the scripted Gemini server, no retries (what the factories take as `model`)."""
    model = GeminiModel(GeminiSettings("test-key", gemini_server.url), RetryPolicy(retries=0))
    yield model
    await model.aclose()


@pytest.fixture
def llm(gemini_model: GeminiModel) -> JsonLLM:
    """The knowledge base's JSON calls over that adapter; answer them with `gemini_server.script(...)` or
    `gemini_server.respond_with(rule)`."""
    return JsonLLM(ModelText(gemini_model, "gemini-test"))


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    """A started scripted Anthropic Messages server; API key `test-key`. Script Gemini-shaped turns."""
    with AnthropicServer() as server:
        yield server
    assert not server.errors, f"scripted Anthropic server: {server.errors}"


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A started scripted OpenAI-compatible server; API key `test-key`. Script Gemini-shaped turns."""
    with OpenAIServer() as server:
        yield server
    assert not server.errors, f"scripted OpenAI server: {server.errors}"


@pytest.fixture(scope="session")
def _moto_process() -> Iterator[MotoServer]:
    server = MotoServer().start()
    yield server
    server.stop()


@pytest.fixture
def moto_server(_moto_process: MotoServer, monkeypatch: pytest.MonkeyPatch,
                tmp_path_factory: pytest.TempPathFactory) -> MotoServer:
    """The session's moto server with all state reset, and test AWS credentials in the env."""
    _moto_process.reset()
    _test_credentials(monkeypatch, tmp_path_factory)
    return _moto_process


@pytest.fixture(scope="session")
def _localstack_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStackServer]:
    if not localstack_installed():
        why = "LocalStack is not installed: run `make localstack` (scripts/setup-localstack.sh)"
        if os.environ.get("CI"):  # CI installs it through `make test`: a missing venv there is a failure
            pytest.fail(why)
        pytest.skip(why)
    server = LocalStackServer(tmp_path_factory.mktemp("localstack")).start()
    yield server
    server.stop()


@pytest.fixture(params=["moto", "localstack"])
def aws_server(request: pytest.FixtureRequest) -> AwsServer:
    """Each AWS backend in turn: moto (reset) and LocalStack (shared: tests use fresh names)."""
    return request.getfixturevalue(f"{request.param}_server")


@pytest.fixture
def localstack_server(_localstack_process: LocalStackServer, monkeypatch: pytest.MonkeyPatch,
                      tmp_path_factory: pytest.TempPathFactory) -> LocalStackServer:
    """The session's LocalStack (never reset: use fresh names), and test AWS credentials in the env."""
    _test_credentials(monkeypatch, tmp_path_factory)
    return _localstack_process


def _test_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    missing = tmp_path_factory.mktemp("aws") / "none"
    for name, value in AWS_TEST_ENV.items():
        monkeypatch.setenv(name, value)
    # Never read the developer's real AWS profile or credentials.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(missing))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(missing))
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def moto_endpoint(moto_server: MotoServer) -> str:
    """Endpoint URL of the (reset) moto server, for endpoint_url=."""
    return moto_server.endpoint


@pytest.fixture
def kube_live() -> Iterator[KubeServer]:
    """A started fake live Kubernetes API (plain JSON); bearer token `kube-token`."""
    with KubeServer("kube-live") as server:
        yield server
    assert not server.errors, f"fake Kubernetes hit a bug: {server.errors}"


@pytest.fixture
def kubearchive() -> Iterator[KubeServer]:
    """A started fake Kubearchive (gzip-compressed lists); bearer token `kube-token`."""
    with KubeServer("kubearchive", gzip=True) as server:
        yield server
    assert not server.errors, f"fake Kubearchive hit a bug: {server.errors}"


@pytest.fixture
def testing_farm_server() -> Iterator[TestingFarmServer]:
    """A started fake Testing Farm API plus artifacts host (`.artifacts_base`)."""
    with TestingFarmServer() as server:
        yield server
    assert not server.errors, f"fake Testing Farm hit a bug: {server.errors}"
