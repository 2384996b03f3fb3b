"""Testing Farm tools through the registry against the fake API and artifacts host, and the SSRF guard
of tf_get_test_log: only URLs under the artifacts prefix are ever requested, redirects included."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from hummingbird_agent.data_sources import testing_farm
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools.registry import ToolRegistry
from tests.data_sources.conftest import sandbox_text
from tests.servers.testing_farm import TestingFarmServer

RID = "7d6a6cbf-3cd5-49fb-aca1-f76ffa0734aa"
async_module = pytest.mark.asyncio(loop_scope="module")


def register(registry: ToolRegistry, server: TestingFarmServer) -> None:
    testing_farm.register(registry, api_url=server.url, artifacts_base=server.artifacts_base)


@pytest.mark.podman
@async_module
async def test_results_spill_and_their_log_links_are_fetchable(
        registry: ToolRegistry, sandbox: PodmanSandbox, testing_farm_server: TestingFarmServer) -> None:
    testing_farm_server.add_request(RID)
    register(registry, testing_farm_server)

    results = await registry.execute("tf_get_results", {"request_id": RID})

    assert results.ok and results.spilled_path, "results.xml is over the spill threshold"
    assert results.metadata["artifacts_base"] == testing_farm_server.artifacts_base
    root = ET.fromstring(await sandbox_text(sandbox, results.spilled_path))
    assert root.get("overall-result") == "failed"
    href = next(log.get("href") for log in root.iter("log") if log.get("name") == "testout.log")
    log = await registry.execute("tf_get_test_log", {"url": href})
    assert (log.ok, log.content) == (True, "something went wrong\n")
    assert "//testcase/logs/log" in registry.notes()


@pytest.mark.podman
@async_module
async def test_request_status_retries_a_transient_503(registry: ToolRegistry,
                                                      testing_farm_server: TestingFarmServer) -> None:
    testing_farm_server.add_request(RID, fixture="running", scenario=None)
    testing_farm_server.fail_next(1, 503, path="/v0.1/requests/")
    register(registry, testing_farm_server)

    status = await registry.execute("tf_get_request_status", {"request_id": RID})

    assert status.ok, status
    assert status.content["state"] == "running"
    assert status.content["artifacts"] == f"{testing_farm_server.artifacts_base}/{RID}"
    assert len(testing_farm_server.requests_to("/v0.1/requests/")) == 2


@pytest.mark.podman
@async_module
async def test_missing_results_and_requests_are_stated(registry: ToolRegistry,
                                                       testing_farm_server: TestingFarmServer) -> None:
    testing_farm_server.add_request(RID, fixture="running", scenario=None)
    register(registry, testing_farm_server)

    results = await registry.execute("tf_get_results", {"request_id": RID})
    unknown = await registry.execute("tf_get_request_status", {"request_id": "0" * 32})

    assert results.error_kind == "not_found" and "results.xml" in results.content
    assert unknown.error_kind == "not_found"


REFUSED = {
    "other host": "http://evil.example/testing-farm/{rid}/log.txt",
    "look-alike host suffix": "http://{host}.evil.example:{port}/testing-farm/{rid}/log.txt",
    "userinfo look-alike": "http://{host}:{port}@evil.example/testing-farm/{rid}/log.txt",
    "empty userinfo": "http://@{host}:{port}/testing-farm/{rid}/log.txt",
    "other port": "http://{host}:1/testing-farm/{rid}/log.txt",
    "other scheme": "https://{host}:{port}/testing-farm/{rid}/log.txt",
    "look-alike prefix": "http://{host}:{port}/testing-farm-evil/{rid}/log.txt",
    "bare prefix": "http://{host}:{port}/testing-farm",
    "dot-dot segment": "http://{host}:{port}/testing-farm/../admin",
    "dot-dot deeper": "http://{host}:{port}/testing-farm/{rid}/../../etc/passwd",
    "encoded dot-dot": "http://{host}:{port}/testing-farm/%2e%2e/admin",
    "encoded slash": "http://{host}:{port}/testing-farm/{rid}%2F..%2F..%2Fadmin",
    "double-encoded dot": "http://{host}:{port}/testing-farm/%252e%252e/admin",
    "backslash": "http://{host}:{port}/testing-farm\\..\\admin",
    "control character": "http://{host}:{port}/testing-farm/{rid}/log\r\nHost: evil",
    "relative URL": "/testing-farm/{rid}/log.txt",
    "dot-dot-semicolon segment": "http://{host}:{port}/testing-farm/..;/admin",
    "semicolon path parameter": "http://{host}:{port}/testing-farm/{rid};jsessionid=x/log.txt",
    "encoded semicolon": "http://{host}:{port}/testing-farm/..%3b/admin",
    "full-width dots": "http://{host}:{port}/testing-farm/\uff0e\uff0e/admin",
    "one-dot leader": "http://{host}:{port}/testing-farm/\u2024\u2024/admin",
    "overlong UTF-8 slash": "http://{host}:{port}/testing-farm/{rid}/..%c0%af..%c0%afadmin",
    "overlong UTF-8 dot": "http://{host}:{port}/testing-farm/%c0%ae%c0%ae/admin",
    "encoded non-ASCII": "http://{host}:{port}/testing-farm/{rid}/%ef%bc%8e%ef%bc%8e/log.txt",
    "encoded control character": "http://{host}:{port}/testing-farm/{rid}/log%0d%0aHost:%20evil",
    "file scheme": "file:///etc/passwd",
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_urls_outside_the_artifacts_prefix_are_refused(case: str) -> None:
    base = "http://127.0.0.1:8080/testing-farm"
    url = REFUSED[case].format(host="127.0.0.1", port=8080, rid=RID)
    assert testing_farm.refusal(url, base) is not None
    assert testing_farm.refusal(f"{base}/{RID}/data/output.txt", base) is None
    assert testing_farm.refusal(f"{base}/{RID}/data/test%20output.txt", base) is None  # a harmless escape


@pytest.mark.podman
@async_module
async def test_refused_urls_never_reach_the_network(registry: ToolRegistry,
                                                    testing_farm_server: TestingFarmServer) -> None:
    register(registry, testing_farm_server)
    port = testing_farm_server.url.rpartition(":")[2]
    for case, template in REFUSED.items():
        url = template.format(host="127.0.0.1", port=port, rid=RID)
        result = await registry.execute("tf_get_test_log", {"url": url})
        assert result.error_kind == "forbidden_url", case
    assert testing_farm_server.requests == []


@pytest.mark.podman
@async_module
async def test_redirects_are_followed_only_inside_the_prefix(registry: ToolRegistry,
                                                             testing_farm_server: TestingFarmServer) -> None:
    testing_farm_server.add_request(RID)
    base = testing_farm_server.artifacts_base
    inside = f"{base}/{RID}/work-allw5U7yu/plans/all/execute/data/tests/output.txt"
    testing_farm_server.redirect(f"{RID}/moved.log", inside)
    testing_farm_server.redirect(f"{RID}/escape.log", f"{testing_farm_server.url}/v0.1/requests/{RID}")
    testing_farm_server.redirect(f"{RID}/sneaky.log", "../../v0.1/requests/x")
    register(registry, testing_farm_server)

    moved = await registry.execute("tf_get_test_log", {"url": f"{base}/{RID}/moved.log"})
    escape = await registry.execute("tf_get_test_log", {"url": f"{base}/{RID}/escape.log"})
    sneaky = await registry.execute("tf_get_test_log", {"url": f"{base}/{RID}/sneaky.log"})

    assert (moved.ok, moved.content) == (True, "something went wrong\n")
    assert escape.error_kind == "forbidden_url" and sneaky.error_kind == "forbidden_url"
    assert not testing_farm_server.requests_to("/v0.1/"), "a redirect target outside the prefix was requested"
    assert all(re.match(r"/testing-farm/", r.path) for r in testing_farm_server.requests)
