"""Job logs as GitLab stores them: the bench's script output wrapped in a gitlab-runner's preamble and epilogue, with
its section markers and colours, the runner, ref, sha and timestamps varying between runs (as on GitLab, where the
MR's job and the merge base's run on different runners, at different times, from different refs).

The lines are those gitlab-runner prints (common/build.go, shells/abstract.go, helpers/trace sections:
`section_start:<unix>:<name>\\r\\x1b[0K`, raw, with no newline, so a section's end and the next one's start share a
line; headers in bold cyan, notices in bold green, `ERROR:` in bold red).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from tests.triage.world import Attempt, CiWorld

CLEAR, RESET = "\x1b[0K", "\x1b[0;m"
CYAN, GREEN, RED, YELLOW = "\x1b[36;1m", "\x1b[32;1m", "\x1b[31;1m", "\x1b[0;33m"
# (version line, runner description, short token): the protected branch's runners and the shared ones MRs get.
PROTECTED = (("gitlab-runner 17.5.3 (12030cf4)", "build-protected-1", "xK3fQp9Lw"),
             ("gitlab-runner 17.5.3 (12030cf4)", "build-protected-2", "Hn4sZt2Rv"))
SHARED = (("gitlab-runner 17.6.0 (374d34fd)", "green-1.saas-linux-small-amd64.runners-manager.gitlab.com/default",
           "zxwgkjAPq"),
          ("gitlab-runner 17.6.1 (ca8d5a8a)", "blue-3.saas-linux-small-amd64.runners-manager.gitlab.com/default",
           "J2nyww-sy"),
          ("gitlab-runner 17.4.0 (b92ee590)", "green-4.saas-linux-medium-amd64.runners-manager.gitlab.com/default",
           "ntHFEtyXQ"))
IMAGE = "python:3.12-slim"
EPOCH = 1_767_600_000
# Job states whose log a runner wrote (a skipped, created or manual job never reached one).
STARTED = frozenset({"failed", "success", "canceled"})


@dataclass(frozen=True)
class RunnerRun:
    """Who ran one job attempt, where and when: everything a runner prints that changes between runs."""

    version: str
    runner: str
    token: str
    sha: str
    ref: str
    started: int
    seed: str

    def hex(self, salt: str, n: int) -> str:
        return hashlib.sha256(f"{self.seed}/{salt}".encode()).hexdigest()[:n]


def runner_for(sha: str, ref: str, job: str, attempt: int, protected: bool) -> RunnerRun:
    """A run's runner (protected branches have their own), start time and ids, fixed by what ran where."""
    seed = f"{sha}/{ref}/{job}/{attempt}"
    number = int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16)
    pool = PROTECTED if protected else SHARED
    version, runner, token = pool[number % len(pool)]
    return RunnerRun(version, runner, token, sha, ref, EPOCH + number % 2_000_000, seed)


def _section(run: RunnerRun, at: int, name: str, header: str) -> str:
    return f"section_start:{run.started + at}:{name}\r{CLEAR}{CLEAR}{CYAN}{header}{RESET}{RESET}"


def _end(run: RunnerRun, at: int, name: str) -> str:
    return f"section_end:{run.started + at}:{name}\r{CLEAR}"


def preamble(run: RunnerRun, project: str) -> list[str]:
    """From `Running with` to the first line of the job's script."""
    digest = f"sha256:{run.hex('image', 64)}"
    cache_hit = int(run.hex("cache", 2), 16) % 2 == 0
    return [
        f"{CLEAR}Running with {run.version}{RESET}",
        f"{CLEAR}  on {run.runner} {run.token[:8]}, system ID: s_{run.hex('system', 12)}{RESET}",
        _section(run, 0, "prepare_executor", 'Preparing the "docker" executor'),
        f"{CLEAR}Using Docker executor with image {IMAGE} ...{RESET}",
        f"{CLEAR}Pulling docker image {IMAGE} ...{RESET}",
        f"{CLEAR}Using docker image {digest} for {IMAGE} with digest python@sha256:{run.hex('digest', 64)} ...{RESET}",
        _end(run, 6, "prepare_executor") + _section(run, 6, "prepare_script", "Preparing environment"),
        f"Running on runner-{run.token[:8].lower()}-project-{int(run.hex('project', 4), 16)}-concurrent-"
        f"{int(run.hex('slot', 1), 16) % 4} via runner-{run.token[:8].lower()}-s-l-s-amd64-{run.started}-"
        f"{run.hex('host', 8)}...",
        _end(run, 7, "prepare_script") + _section(run, 7, "get_sources", "Getting source from Git repository"),
        f"Gitaly correlation ID: {run.hex('gitaly', 32)}",
        f"{GREEN}Fetching changes with git depth set to 20...{RESET}",
        f"Initialized empty Git repository in /builds/{project}/.git/",
        f"{GREEN}Created fresh repository.{RESET}",
        f"{GREEN}Checking out {run.sha[:8]} as detached HEAD (ref is {run.ref})...{RESET}",
        "",
        f"{GREEN}Skipping Git submodules setup{RESET}",
        _end(run, 9, "get_sources") + _section(run, 9, "restore_cache", "Restoring cache"),
        f"{GREEN}Checking cache for default-protected...{RESET}" if run.ref == "main" else
        f"{GREEN}Checking cache for default-non_protected...{RESET}",
        f"{GREEN}Successfully extracted cache{RESET}" if cache_hit else
        f"{YELLOW}WARNING: file does not exist                       {RESET}\n{YELLOW}Failed to extract cache{RESET}",
        _end(run, 11, "restore_cache") + _section(run, 11, "step_script",
                                                  'Executing "step_script" stage of the job script'),
        f"{CLEAR}Using docker image {digest} for {IMAGE} with digest python@sha256:{run.hex('digest', 64)} ...{RESET}",
    ]


def epilogue(run: RunnerRun, passed: bool, ending: str, took: int) -> list[str]:
    """From the end of the script to the job's last line: artifacts, clean-up, the runner's verdict."""
    at = 12 + took
    upload = ("upload_artifacts_on_success", "Uploading artifacts for successful job") if passed else (
        "upload_artifacts_on_failure", "Uploading artifacts for failed job")
    last = f"{GREEN}Job succeeded{RESET}" if passed else f"{RED}{ending}\n{RESET}"
    return [
        _end(run, at, "step_script") + _section(run, at, *upload),
        f"{GREEN}Uploading artifacts...{RESET}",
        f"report.xml: found 1 matching artifact files and directories{RESET} ",
        f'{GREEN}Uploading artifacts as "junit" to coordinator... 201 Created{RESET}  id{RESET}='
        f"{int(run.hex('job', 6), 16)} responseStatus{RESET}=201 Created token{RESET}=glcbt-{run.hex('tok', 2)}",
        _end(run, at + 2, upload[0]) + _section(run, at + 2, "cleanup_file_variables",
                                                "Cleaning up project directory and file based variables"),
        _end(run, at + 3, "cleanup_file_variables") + last,
    ]


def in_runner(output: str, run: RunnerRun, project: str, status: str) -> str:
    """The job's whole log around the script's `output`; a log that already ends with the runner's `ERROR: Job
    failed...` line (a hang's timeout) keeps it as the runner's verdict instead of `exit code 1`; a canceled job's
    log stops where it was stopped."""
    lines = output.rstrip("\n").split("\n")
    ending = "ERROR: Job failed: exit code 1"
    if lines and lines[-1].startswith("ERROR: Job failed"):
        ending = lines.pop()
    took = 5 + len(lines) // 40
    end = [] if status == "canceled" else epilogue(run, status == "success", ending, took)
    return "\n".join([*preamble(run, project), *lines, *end]) + "\n"


class RunnerWorld(CiWorld):
    """The CI world whose job logs are whole runner logs: every finished attempt's output is wrapped."""

    def pipeline(self, sha: str, attempts: Sequence[Attempt], **kw: Any) -> int:
        ref = kw.get("ref") or self.branch
        return super().pipeline(sha, [self.wrapped(a, sha, ref, n) for n, a in enumerate(attempts)], **kw)

    def retry(self, pipeline_id: int, attempt: Attempt) -> int:
        pipeline = self.gl.pipelines[(self.project_id, pipeline_id)]
        ran = sum(job["pipeline"]["id"] == pipeline_id for (p, _), job in self.gl.jobs.items() if p == self.project_id)
        return super().retry(pipeline_id, self.wrapped(attempt, pipeline["sha"], pipeline["ref"], ran))

    def wrapped(self, attempt: Attempt, sha: str, ref: str, n: int) -> Attempt:
        if not isinstance(attempt.trace, str) or not attempt.trace or attempt.status not in STARTED:
            return attempt
        run = runner_for(sha, ref, attempt.name, n, protected=ref == self.branch)
        return replace(attempt, trace=in_runner(attempt.trace, run, self.path, attempt.status))
