"""`run analyze-failures` with the shipped workflow prompt on llama.cpp's server and the packaged 0.5B model (one
generation thread; scripts/install-llamacpp-tier.sh), against the fake GitLab with one failed check that fails on
main too: how long until the terminal shows the triage, and until the note is printed.

Prints one JSON line: triage_s (start of the run to the verdicts on stderr), note_s (to the end of the run, the
note printed), status and reason of the run, iterations, tool calls, tokens, whether the note is grounded (a data
read succeeded or the triage was given) or flagged as built from no data, and its first line. One measurement; a
busy machine lowers every rate.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hummingbird_agent.agent.report import NO_DATA_LINE  # noqa: E402
from hummingbird_agent.cli import build_parser  # noqa: E402
from hummingbird_agent.cli.run import build_request, execute  # noqa: E402
from hummingbird_agent.config.loading import load_config  # noqa: E402
from hummingbird_agent.data_sources import register_selected  # noqa: E402
from hummingbird_agent.models import build_model  # noqa: E402
from tests.runner.harness import IID, PROJECT  # noqa: E402
from tests.runner.test_cli_slow_model import pre_existing_failure  # noqa: E402
from tests.servers import GitLabServer  # noqa: E402
from tests.servers.llamacpp import MODEL_NAME, LlamaCppServer, missing  # noqa: E402


class Stamped(io.StringIO):
    """A terminal stream that notes when `marker` was first written (seconds since `started`)."""

    def __init__(self, marker: str, started: float) -> None:
        super().__init__()
        self.marker, self.started, self.at = marker, started, None

    def write(self, text: str) -> int:
        if self.at is None and self.marker in text:
            self.at = round(time.monotonic() - self.started, 1)
        return super().write(text)


async def measure(llamacpp: LlamaCppServer, gitlab: GitLabServer, folder: Path, iterations: int) -> dict[str, Any]:
    pipeline = pre_existing_failure(gitlab)
    config = {"gitlab": {"url": gitlab.url, "token_env": "HB_BOT_TOKEN"},
              # As shipped (workflows/analyze-failures.md, triage on), on a self-hosted endpoint with its defaults.
              "model": {"provider": "openai", "base_url": f"{llamacpp.url}/v1", "name": MODEL_NAME},
              "sandbox": {"backend": "podman"},
              "workflows": {"analyze-failures": {
                  "description": "analyse", "prompt": str(REPO / "workflows/analyze-failures.md"),
                  "max_iterations": iterations, "require_data": True, "projects": {PROJECT: {}},
                  "triage": {"enabled": True}, "data_sources": {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}}}}}
    (folder / "config.yaml").write_text(json.dumps(config))
    loaded = load_config(folder / "config.yaml", {"GITLAB_READ_TOKEN": gitlab.read_token, "HB_BOT_TOKEN": "x"})
    args = build_parser().parse_args(["run", "analyze-failures", "--project", PROJECT, "--mr", str(IID),
                                      "--pipeline", str(pipeline)])
    started = time.monotonic()
    err, out = Stamped("**Triage:**", started), io.StringIO()
    outcome = await execute(loaded, build_request(args), build_model(loaded), None, register_selected,
                            out=out, err=err)
    note = out.getvalue()
    result = outcome.result
    grounded = not result.no_data and not note.startswith(NO_DATA_LINE)
    return {"triage_s": err.at, "note_s": round(time.monotonic() - started, 1), "status": result.status,
            "reason": result.reason[:200], "iterations": len(result.steps), "max_iterations": iterations,
            "tool_calls": len(result.calls), "output_tokens": result.usage.candidate_tokens,
            "prompt_tokens": result.usage.prompt_tokens, "grounded": grounded,
            "flagged_no_data": note.startswith(NO_DATA_LINE), "first_line": note.splitlines()[0][:160] if note else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iterations", type=int, default=40, help="the workflow's budget (shipped: 40)")
    options = parser.parse_args()
    reason = missing()
    if reason:
        sys.exit(reason)
    with LlamaCppServer() as server, GitLabServer() as gitlab, tempfile.TemporaryDirectory() as folder:
        figures = asyncio.run(measure(server, gitlab, Path(folder), options.max_iterations))
    print(json.dumps({"load_s": round(server.load_s, 1), **figures}))


if __name__ == "__main__":
    main()
