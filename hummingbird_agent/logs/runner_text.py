"""GitLab Runner's own lines in a job log: its preamble (runner, executor, image, sources), the stage headers and
its epilogue (cache, artifacts, clean-up, `ERROR: Job failed`). They differ between two runs of the same job (another
runner, ref, commit, image digest) and say nothing about why the job failed, so log comparisons skip them. The
shapes are GitLab Runner's own format strings (shells/abstract.go, common/build.go, executors/docker and
kubernetes, commands/helpers); the job's own output, `echo` lines and the `$ command` lines included, is kept."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from hummingbird_agent.logs.clean import clean_line

_RUNNER_LINES = (
    # --- preamble: the runner, the executor, the image, the environment ---
    r"Running with gitlab-(?:ci-multi-)?runner \S+(?: \(\w+\))?",
    r"(?<=^  )on \S+ [\w-]{8}(?:, system ID: \S+)?",  # `  on <runner name> <token's first 8>[, system ID: s_...]`
    r"feature flags: .*",
    r"Runtime platform\s+arch=.*",
    r"Resolving secrets",
    r"Preparing the \"[\w+-]+\" executor",
    r"Using [\w+ ()-]*executor\b.*",  # Docker / Kubernetes / Shell (bash) / Custom / docker-autoscaler
    r"Using (?:Kubernetes namespace|attach strategy|exec strategy)\b.*",
    r"Using effective pull policy of \[[\w, -]*\] for container \S+",
    r"Using docker image \S+ for \S+(?: with digest \S+)? \.\.\.",
    r"Using locally found image version due to \"if-not-present\" pull policy",
    r"Pulling docker image \S+ \.\.\.",
    r"Authenticating with credentials from .*",
    r"Starting service \S+(?: \.\.\.)?",
    r"Waiting for services to be up and running.*",
    r"Waiting for pod \S+ to be running, status is \w+",
    r"Preparing environment",
    r"Running on \S+ via \S+\.\.\.",
    # --- sources ---
    r"Getting source from Git repository",
    r"Gitaly correlation ID: \S+",
    r"Fetching changes(?: for \S+)?(?: with git depth set to \d+)?\.\.\.",
    r"Cloning repository(?: for \S+ with git depth set to \d+)?\.\.\.",
    r"(?:Initialized empty|Reinitialized existing) Git repository in \S+",
    r"Created fresh repository\.",
    r"Checking out \w+ as (?:detached HEAD \(ref is \S+\)|\S+)\.\.\.",
    r"Skipping Git (?:submodules setup|repository setup|checkout)|Skippping Git checkout",
    r"Updating/initializing submodules(?: recursively)?(?: with git depth set to \d+)?\.\.\.",
    # --- stages ---
    r"Executing \"\w+\" stage of the job script",
    r"Running after_script|Running after script\.\.\.",
    r"Job succeeded",
    r"ERROR: Job failed\b.*",
    # --- cache and artifacts ---
    r"Restoring cache|Saving cache for (?:successful|failed) job",
    r"Checking cache for \S+\.\.\.|Successfully extracted cache|Created cache|Archive is up to date!",
    r"(?:WARNING: )?Failed to (?:extract|create) cache",
    r"WARNING: file does not exist",  # a cache that was never saved (commands/helpers/cache_extractor.go)
    r"Creating cache \S+\.\.\.",
    r"Not (?:downloading|uploading) cache \S+ due to policy",
    r"(?:Downloading cache|Uploading cache\.zip)(?:\.zip)? (?:from|to) \S+",
    r"No URL provided, cache will not be (?:downloaded from|uploaded to) shared cache server\..*",
    r"Downloading artifacts(?: for \S+ \(\d+\)\.\.\.)?",
    r"Downloading artifacts from coordinator\.\.\. .*",
    r"Uploading artifacts(?: for (?:successful|failed) job|\.\.\.)",
    r"Uploading artifacts as \"\w+\" to coordinator\.\.\. .*",
    r"\S+: found \d+ matching (?:artifact )?files(?: and directories)?",
    r"WARNING: \S+: no matching files\b.*",
    r"WARNING: processPath: .*",
    r"ERROR: No files to upload",
    r"Cleaning up (?:project directory and )?file based variables",
)
_RUNNER = re.compile(r"\s*(?:" + "|".join(f"(?:{shape})" for shape in _RUNNER_LINES) + r")\s*$")


def is_runner_line(line: str) -> bool:
    """Whether a raw log line is GitLab Runner's own text (its section markers are cleaned away first)."""
    return _RUNNER.match(clean_line(line)) is not None


def job_lines(lines: Iterable[str]) -> Iterator[str]:
    """The lines that are not GitLab Runner's own text, as given."""
    return (line for line in lines if not is_runner_line(line))
