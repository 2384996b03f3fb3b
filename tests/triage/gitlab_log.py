"""A job log as GitLab Runner writes it (collapsible sections, colours, its preamble and epilogue), around a
job's own output: what the triage reads from the fake GitLab's trace endpoint."""

from __future__ import annotations

from dataclasses import dataclass

ESC = "\x1b"


@dataclass(frozen=True)
class Runner:
    """What differs between two runs of one job on GitLab: the runner, the ref and commit, the image's digest."""

    name: str = "docker-runner-1"
    token: str = "t1_xYzAb"
    version: str = "17.2.0 (abc0002e)"
    ref: str = "main"
    sha: str = "1a2b3c4d5e6f7a8b"
    digest: str = "3f2a9c0d1e"
    epoch: int = 1_767_000_000


MAIN = Runner()
BRANCH = Runner("blue-3.saas-linux-small-amd64.runners-manager.gitlab.com/default",
                "j1aLDqxS, system ID: s_b437a71a38f9", "18.4.0 (139a0ac0)", "feature/rounding", "9f8e7d6c5b4a3928",
                "77c1b2e0f4", 1_767_086_400)


def _section(runner: Runner, at: int, name: str, header: str, lines: list[str]) -> list[str]:
    start = f"section_start:{runner.epoch + at}:{name}\r{ESC}[0K{ESC}[0K{ESC}[36;1m{header}{ESC}[0;m"
    return [start, *lines, f"section_end:{runner.epoch + at + 1}:{name}\r{ESC}[0K"]


def job_log(command: str, output: str, runner: Runner = MAIN, image: str = "python:3.12") -> str:
    """A failed job's log: `$ command`, then its `output`, inside the runner's sections."""
    preamble = [f"{ESC}[0KRunning with gitlab-runner {runner.version}", f"{ESC}[0;m  on {runner.name} {runner.token}",
                "  feature flags: FF_USE_FASTZIP:true"]
    prepare = [f"{ESC}[0KUsing Docker executor with image {image} ...", f"{ESC}[0KPulling docker image {image} ...",
               f"{ESC}[0KUsing docker image sha256:{runner.digest}aa for {image} with digest "
               f"{image.split(':')[0]}@sha256:{runner.digest}bb ..."]
    sources = ["Fetching changes with git depth set to 20...", "Initialized empty Git repository in /builds/group/"
               "project/.git/", "Created fresh repository.",
               f"Checking out {runner.sha[:8]} as detached HEAD (ref is {runner.ref})...", "",
               "Skipping Git submodules setup"]
    script = [f"{ESC}[32;1m$ {command}{ESC}[0;m", *output.rstrip("\n").split("\n")]
    upload = [f"{ESC}[32;1mUploading artifacts...{ESC}[0;m",
              f"{ESC}[0;33mWARNING: report.xml: no matching files. Ensure that the artifact path is relative to the "
              f"working directory (/builds/group/project){ESC}[0;m",
              f"{ESC}[31;1mERROR: No files to upload                         {ESC}[0;m"]
    return "\n".join([
        *preamble,
        *_section(runner, 0, "prepare_executor", 'Preparing the "docker" executor', prepare),
        *_section(runner, 2, "prepare_script", "Preparing environment",
                  [f"Running on runner-{runner.token[:8]}-project-1-concurrent-0 via {runner.name}..."]),
        *_section(runner, 4, "get_sources", "Getting source from Git repository", sources),
        *_section(runner, 6, "restore_cache", "Restoring cache",
                  ["Checking cache for default-protected...", "Successfully extracted cache"]),
        *_section(runner, 8, "step_script", 'Executing "step_script" stage of the job script', script),
        *_section(runner, 60, "archive_cache_on_failure", "Saving cache for failed job",
                  ["Creating cache default-protected...", "Created cache"]),
        *_section(runner, 62, "upload_artifacts_on_failure", "Uploading artifacts for failed job", upload),
        *_section(runner, 64, "cleanup_file_variables", "Cleaning up project directory and file based variables", []),
        f"{ESC}[31;1mERROR: Job failed: exit code 1{ESC}[0;m", ""])
