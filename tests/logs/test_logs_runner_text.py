"""GitLab Runner's own lines are recognised, the job's own output (its `echo` lines included) never is; the
whole-log digest and the fingerprint leave them out."""

from __future__ import annotations

from hummingbird_agent.logs.digest import LogDigest
from hummingbird_agent.logs.fingerprint import specific_lines, survey
from hummingbird_agent.logs.runner_text import is_runner_line
from tests.triage.gitlab_log import BRANCH, MAIN, job_log

# Lines GitLab Runner prints (from its format strings and from job logs of gitlab.com and self-managed runners).
RUNNER = [
    "Running with gitlab-runner 18.4.0 (139a0ac0)",
    "Running with gitlab-ci-multi-runner 1.4.2 (bcc1794)",
    "  on blue-3.saas-linux-small-amd64.runners-manager.gitlab.com/default j1aLDqxS, system ID: s_b437a71a38f9",
    "  on docker-auto-scale 0277ea0f",
    "  feature flags: FF_NETWORK_PER_BUILD:true",
    "Resolving secrets",
    'Preparing the "docker+machine" executor',
    "Using Docker executor with image ruby:3.1 ...",
    "Using Kubernetes namespace: gitlab-runner",
    "Using Kubernetes executor with image alpine:3.19 ...",
    "Using Shell (bash) executor...",
    "Using effective pull policy of [always] for container returntocorp/semgrep",
    "Pulling docker image python:3.13-slim ...",
    "Using docker image sha256:9349edbadf90 for semgrep/semgrep with digest semgrep/semgrep@sha256:9349ed ...",
    "Starting service postgres:14 ...",
    "Waiting for pod gitlab/runner-abc-project-1-concurrent-0 to be running, status is Pending",
    "Preparing environment",
    "Running on runner-hixiqfkre-project-1-concurrent-0 via e18ee6b6dacb...",
    "Getting source from Git repository",
    "Gitaly correlation ID: 01KRSD2RA9G4JMEPWZ5MVRW2VH",
    "Fetching changes with git depth set to 20...",
    "Fetching changes...",
    "Initialized empty Git repository in /builds/group/project/.git/",
    "Reinitialized existing Git repository in /builds/group/project/.git/",
    "Created fresh repository.",
    "Checking out 2683d164 as detached HEAD (ref is master)...",
    "Checking out 46f993a0 as project...",
    "Skipping Git submodules setup",
    "WARNING: file does not exist                       ",  # a cache miss, before "Failed to extract cache"
    'Executing "step_script" stage of the job script',
    "Running after_script",
    "Running after script...",
    "Restoring cache",
    "Checking cache for default-protected...",
    "Downloading cache from https://storage.googleapis.com/runners-cache/project/1/default-protected",
    "Successfully extracted cache",
    "Downloading artifacts for build (7605433606)...",
    "Downloading artifacts from coordinator... ok        host=storage.googleapis.com id=76054 responseStatus=200 OK",
    "Saving cache for failed job",
    "Creating cache clang-system-non_protected...",
    "ccache: found 15435 matching artifact files and directories",
    "Uploading cache.zip to https://storage.googleapis.com/runners-cache/project/1/default-protected",
    "Created cache",
    "Uploading artifacts for failed job",
    "Uploading artifacts...",
    "WARNING: report.xml: no matching files. Ensure that the artifact path is relative to the working directory (/b)",
    "ERROR: No files to upload",
    'Uploading artifacts as "junit" to coordinator... 201 Created  id=6 responseStatus=201 Created token=64_Xokc',
    "Cleaning up project directory and file based variables",
    "Cleaning up file based variables",
    "Job succeeded",
    "ERROR: Job failed: exit code 1",
    "ERROR: Job failed (system failure): prepare environment: exit status 1",
    "\x1b[31;1mERROR: Job failed: command terminated with exit code 1\x1b[0;m",
    "section_start:1704896925:cleanup_file_variables\r\x1b[0K\x1b[0K\x1b[36;1mCleaning up project directory and file "
    "based variables\x1b[0;m",
]
# The job's own output, also where it reads like the runner's.
JOB = [
    "$ mypy --strict app.py",
    "Running tests with pytest",
    "on branch main",
    "ERROR: Could not find a version that satisfies the requirement foo==9.9",
    "Checking out the docs",
    "Using cached wheel for numpy",
    "app.py:1: error: Function is missing a type annotation  [no-untyped-def]",
    "echo Getting source from Git repository done",
    "Fetching changes from the upstream mirror",
]


def test_gitlab_runner_lines_are_recognised_and_the_job_s_own_lines_are_not() -> None:
    assert [line for line in RUNNER if not is_runner_line(line)] == []
    assert [line for line in JOB if is_runner_line(line)] == []


def _digest(log: str) -> str:
    digest = LogDigest()
    for line in log.split("\n"):
        digest.add(line)
    return digest.hexdigest()


def test_the_digest_of_one_output_is_the_same_under_another_runner_ref_and_commit() -> None:
    output = "\n".join(f"step {n}: done" for n in range(10))
    assert _digest(job_log("./ci.sh", output, MAIN)) == _digest(job_log("./ci.sh", output, BRANCH))
    assert _digest(job_log("./ci.sh", output, MAIN)) != _digest(job_log("./ci.sh", output + "\nstep 10", BRANCH))


def test_the_runner_s_lines_are_no_part_of_a_fingerprint() -> None:
    log = job_log("./ci.sh", "error: could not reach the licence server at lic.example.com", BRANCH).split("\n")
    assert list(specific_lines(log)) == ["error: could not reach the licence server at lic.example.com"]
    assert survey(log).lines == {"error: could not reach the licence server at lic.example.com"}
