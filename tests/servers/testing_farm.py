"""Fake Testing Farm: the request API (`/v0.1/requests/<id>`) and the artifacts host
(`/testing-farm/<id>/...`), built from real Testing Farm request fixtures and result scenarios."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.servers import samples
from tests.servers.base import FakeHTTPServer, Request, Response, json_response

ARTIFACTS_PATH = "/testing-farm"
_SCENARIOS = samples.SAMPLES_DIR / "testing_farm" / "oculus" / "scenarios"
# Log links in the scenario results.xml files: relative to the scenario folder, or absolute on the
# development artifacts host.
_HREF = re.compile(r'href="(?:\./scenarios/[^/"]+/|https://artifacts\.dev\.testing-farm\.io/[0-9a-f-]+/)')


class TestingFarmServer(FakeHTTPServer):
    """API and artifacts on one port; `artifacts_base` is what the data source is configured with."""

    __test__ = False  # not a pytest test class despite the name
    name = "testing-farm"

    def __init__(self) -> None:
        super().__init__()
        self.requests_by_id: dict[str, dict[str, Any]] = {}
        self.scenarios: dict[str, Path] = {}
        self.extra: dict[str, Response] = {}
        self.route("GET", r"/v0\.1/requests/(?P<rid>[^/]+)", self._request)
        self.route("GET", ARTIFACTS_PATH + r"/(?P<rid>[^/]+)/(?P<path>.+)", self._artifact)

    @property
    def artifacts_base(self) -> str:
        return self.url + ARTIFACTS_PATH

    def add_request(self, request_id: str, fixture: str = "complete", scenario: str | None = "tmt-single-fail") -> None:
        """A request answering like the fixture `fixture`, with the artifacts of `scenario` (None: none yet)."""
        data = samples.load(f"testing_farm/oculus/api_request_fixtures/{fixture}.json")
        data["id"] = request_id
        if data.get("run"):
            data["run"]["artifacts"] = f"{ARTIFACTS_PATH}/{request_id}"  # made absolute when served
        self.requests_by_id[request_id] = data
        if scenario is not None:
            self.scenarios[request_id] = _SCENARIOS / scenario

    def add_artifact(self, path: str, response: Response) -> None:
        """Serve `response` at the artifacts-relative `path` (e.g. a redirect)."""
        self.extra[path] = response

    def redirect(self, path: str, location: str) -> None:
        self.add_artifact(path, Response(302, b"", {"Location": location}))

    def _request(self, req: Request, rid: str) -> Response:
        data = self.requests_by_id.get(rid)
        if data is None:
            return json_response({"code": 404, "message": "No such entity"}, 404)
        served = dict(data)
        if served.get("run"):
            served["run"] = dict(served["run"], artifacts=self.url + served["run"]["artifacts"])
        return json_response(served)

    def _artifact(self, req: Request, rid: str, path: str) -> Response:
        extra = self.extra.get(f"{rid}/{path}")
        if extra is not None:
            return extra
        folder = self.scenarios.get(rid)
        file = (folder / path) if folder else None
        if file is None or ".." in Path(path).parts or not file.is_file():
            return Response(404, b"<html>404 Not Found</html>", {"Content-Type": "text/html"})
        data = file.read_bytes()
        if path == "results.xml":
            data = _HREF.sub(f'href="{self.artifacts_base}/{rid}/', data.decode()).encode()
        kind = "application/xml" if path.endswith(".xml") else "text/plain"
        return Response(200, data, {"Content-Type": kind})
