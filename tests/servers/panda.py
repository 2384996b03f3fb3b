"""Fake PanDA server: the `/api/v1` task and job reads (answers `{"success", "message", "data"}` as
pandaserver's generate_response builds them, with JEDI task and job fields from the documented field
tables) and a job-log host (`/logs/<PandaID>/<file>`, `/logs/brokerage/<name>`), including expired logs,
refused credentials, injected 5xx (`fail_next`) and slow answers (`delay_s`)."""

from __future__ import annotations

import json
from typing import Any

from tests.servers.base import FakeHTTPServer, Request, Response, json_response

API = "/api/v1"
FAILED_LOG = """\
2026-11-20 09:00:00 INFO Starting payload setup
2026-11-20 09:00:05 INFO Initializing athena release 22.0.1
2026-11-20 09:01:00 INFO Running step RAWtoESD
2026-11-20 09:41:00 INFO events processed 1200
2026-11-20 09:59:59 WARNING memory usage 3900 MB
"""
GOOD_LOG = """\
2026-11-10 08:00:00 INFO Starting payload setup
2026-11-10 08:00:04 INFO Initializing athena release 22.0.1
2026-11-10 08:01:00 INFO Running step RAWtoESD
2026-11-10 08:20:00 INFO Running step ESDtoAOD
2026-11-10 08:30:00 INFO Finished writing output AOD.pool.root
2026-11-10 08:30:02 INFO done
"""
BROKERAGE_LOG = """\
2026-11-20 08:00:00 DEBUG brokerage for jediTaskID=1001
2026-11-20 08:00:00 DEBUG 12 candidates passed status check
2026-11-20 08:00:01 DEBUG skip site=CERN-PROD due to memory requirement 4000 > 3000
2026-11-20 08:00:01 DEBUG 1 candidates passed memory check
"""


def _task(tid: int, status: str, **extra: Any) -> dict[str, Any]:
    base = {"jediTaskID": tid, "status": status, "userName": "alice", "prodSourceLabel": "user",
            "processingType": "panda-client-1.5.0-jedi-run", "transUses": "Athena-22.0.1",
            "transHome": "AnalysisBase-22.0.1", "architecture": "x86_64-centos7-gcc8-opt",
            "taskType": "anal", "coreCount": 1, "ramCount": 3000, "site": "ANALY_CERN",
            "modificationTime": "2026-11-20 10:00:00", "retryID": None, "errorDialog": ""}
    return base | extra


def _job(pid: int, tid: int, status: str, **extra: Any) -> dict[str, Any]:
    return {"PandaID": pid, "jediTaskID": tid, "jobStatus": status, "computingSite": "ANALY_CERN",
            "pilotErrorCode": 0, "pilotErrorDiag": "", "transExitCode": 0, "specialHandling": "",
            "processingType": "panda-client-1.5.0-jedi-run", "cpuConsumptionTime": 2400, "wallTime": 3600,
            "jobDuration": 3600, "extendedProdSourceLabel": "user", "maxPSS": 3_900_000, "actualCoreCount": 1,
            "memory_leak": 120} | extra


class PandaServer(FakeHTTPServer):
    """One PanDA server; `token`/`vo` set means every request needs `Authorization: Bearer` and `Origin`."""

    __test__ = False
    name = "panda"

    def __init__(self, token: str | None = None, vo: str | None = None) -> None:
        super().__init__()
        self.token, self.vo = token, vo
        self.delay_s = 0.0
        self.tasks: dict[int, dict[str, Any]] = {}
        self.jobs: dict[int, list[dict[str, Any]]] = {}
        self.logs: dict[tuple[int, str], str] = {}
        self.expired: set[int] = set()
        self.files: dict[str, str] = {}
        self.datasets: dict[int, list[dict[str, Any]]] = {}
        self.route("GET", API + r"/task/get_details", self._details)
        self.route("GET", API + r"/task/get_job_ids", self._job_ids)
        self.route("GET", API + r"/job/get_description_incl_archive", self._jobs)
        self.route("GET", API + r"/task/get_datasets_and_files", self._datasets)
        self.route("GET", API + r"/task/get_tasks_modified_since", self._since)
        self.route("GET", r"/logs/(?P<pid>\d+)/(?P<name>[^/]+)", self._log)
        self.route("GET", r"/logs/brokerage/(?P<name>[^/]+)", self._file)

    @property
    def api_url(self) -> str:
        return self.url + API

    @property
    def log_url(self) -> str:
        return self.url + "/logs"

    def scenario(self) -> PandaServer:
        """Task 1001 exhausted (scout and failed jobs, a truncated payload log, a brokerage log link, retry
        of 1000); task 900 done with the same user/release/architecture; task 901 finished elsewhere."""
        link = "{base}/logs/brokerage/1001.txt"
        self.tasks = {
            1001: _task(1001, "exhausted", retryID=1000, errorDialog=(
                f'Insufficient memory at sites. <a href="{link}">brokerage log</a> action=retry reason=memory')),
            1000: _task(1000, "failed", retryID=1001, errorDialog="first attempt failed",
                        modificationTime="2026-11-18 10:00:00"),
            900: _task(900, "done", modificationTime="2026-11-10 09:00:00"),
            901: _task(901, "finished", architecture="aarch64-el9-gcc13-opt", modificationTime="2026-11-11 09:00:00"),
        }
        self.jobs = {
            1001: [_job(5001, 1001, "failed", pilotErrorCode=1305, specialHandling="sj",
                        pilotErrorDiag="Payload exceeded memory limit"),
                   _job(5002, 1001, "failed", pilotErrorCode=1305, pilotErrorDiag="Payload exceeded memory limit"),
                   _job(5003, 1001, "failed", pilotErrorCode=1201, pilotErrorDiag="Lost heartbeat"),
                   _job(5004, 1001, "finished")],
            900: [_job(6001, 900, "finished")],
        }
        self.logs = {(5001, "payload.stdout"): FAILED_LOG, (6001, "payload.stdout"): GOOD_LOG,
                     (5003, "payload.stdout"): FAILED_LOG}
        self.expired = {5002}
        self.files = {"1001.txt": BROKERAGE_LOG}
        self.datasets = {1001: [{"dataset": {"name": "data24:data24.RAW", "id": 77},
                                 "files": [{"lfn": "f1", "scope": "data24", "id": 1, "status": "ready"},
                                           {"lfn": "f2", "scope": "data24", "id": 2, "status": "failed"}]}]}
        return self

    # --- plumbing ---------------------------------------------------------------------------------
    def authorize(self, req: Request) -> Response | None:
        if self.token is None:
            return None
        if req.header("Authorization") != f"Bearer {self.token}" or req.header("Origin") != self.vo:
            return json_response({"success": False, "message": "authentication failed"}, 403)
        return None

    def _answer(self, req: Request) -> Response:
        answer = super()._answer(req)
        answer.delay_s = self.delay_s
        return answer

    def _ok(self, data: Any) -> Response:
        text = json.dumps({"success": True, "message": "", "data": data}).replace("{base}", self.url)
        return Response(200, text.encode(), {"Content-Type": "application/json"})

    @staticmethod
    def _no(message: str) -> Response:
        return json_response({"success": False, "message": message, "data": None})

    # --- routes -----------------------------------------------------------------------------------
    def _details(self, req: Request) -> Response:
        task = self.tasks.get(int(req.arg("task_id", 0)))
        return self._ok(task) if task else self._no("Task not found or error retrieving the details")

    def _job_ids(self, req: Request) -> Response:
        return self._ok([j["PandaID"] for j in self.jobs.get(int(req.arg("task_id", 0)), [])])

    def _jobs(self, req: Request) -> Response:
        wanted = set(json.loads(req.arg("job_ids", "[]")))
        return self._ok([j for jobs in self.jobs.values() for j in jobs if j["PandaID"] in wanted])

    def _datasets(self, req: Request) -> Response:
        data = self.datasets.get(int(req.arg("task_id", 0)))
        return self._ok(data) if data else self._no("No data found for the task")

    def _since(self, req: Request) -> Response:
        since, label = req.arg("since", ""), req.arg("prod_source_label", "user")
        return self._ok([t for t in self.tasks.values()
                         if t["modificationTime"] > since and t["prodSourceLabel"] == label])

    def _log(self, req: Request, pid: str, name: str) -> Response:
        if int(pid) in self.expired:
            return Response(404, b"log files have expired", {"Content-Type": "text/plain"})
        text = self.logs.get((int(pid), name))
        if text is None:
            return Response(404, b"no such file", {"Content-Type": "text/plain"})
        return Response(200, text.encode(), {"Content-Type": "text/plain"})

    def _file(self, req: Request, name: str) -> Response:
        text = self.files.get(name)
        return Response(200, text.encode(), {"Content-Type": "text/plain"}) if text else Response(404, b"gone")
