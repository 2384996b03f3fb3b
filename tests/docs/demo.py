"""`python -m tests.docs.demo COMMAND ...`: run COMMAND against the test suite's fake GitLab and scripted model,
seeded with the example note's merge request (!7 of group/project: one failure of its own, one already failing
on the merge base). COMMAND gets HUMMINGBIRD_CONFIG naming a config of those servers and the secrets that config
names; its output is shown with the servers' addresses and the run's wall time masked, so it reads the same on
every machine. The first analysed MR page runs it; nothing leaves 127.0.0.1."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.docs.example_note import SHOWN_SESSION, mask_run, world

USAGE = "usage: python -m tests.docs.demo COMMAND [ARG ...]"
TIMEOUT_S = 600  # a run against the fakes takes seconds; this only ends a stuck one


_SESSION = re.compile(r"session `[0-9a-f-]{36}`")


def shown(output: str, gitlab_url: str) -> str:
    """The output as the page shows it: the fake GitLab at a fixed address, the wall time 0 s, session ids 0."""
    return _SESSION.sub(f"session `{SHOWN_SESSION}`", mask_run(output, gitlab_url))


def main(argv: list[str]) -> int:
    if not argv:
        print(USAGE, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp, world(Path(tmp)) as w:
        env = {**os.environ, **w.secrets, "HUMMINGBIRD_CONFIG": str(w.config)}
        done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=TIMEOUT_S, check=False)
        print(shown(done.stdout, w.gitlab.url), end="")
        return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
