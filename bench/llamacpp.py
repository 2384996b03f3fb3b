"""llama.cpp's server with the packaged Qwen2.5-Coder-0.5B-Instruct model (scripts/install-llamacpp-tier.sh):
how long the model takes to load and how fast it reads a prompt and writes tokens with one generation thread.

Prints one JSON line: load_s (child process start to listening), and for a request like the agent's first
(the base system prompt and one tool declaration, ~500 tokens) prompt_tokens, prompt_tokens_per_s, output_tokens,
output_tokens_per_s and wall_s, from the server's own `timings`. A busy machine lowers every rate.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hummingbird_agent.agent.prompts import base_system_prompt  # noqa: E402
from tests.servers.llamacpp import MODEL_NAME, LlamaCppServer, missing  # noqa: E402

TOOL = {"type": "function", "function": {"name": "get_job_log", "description": "Log of a CI job by id.",
                                         "parameters": {"type": "object", "properties": {"job": {"type": "integer"}}}}}


def measure(url: str) -> dict[str, float]:
    body = {"model": MODEL_NAME, "max_tokens": 128, "tools": [TOOL],
            "messages": [{"role": "system", "content": base_system_prompt()},
                         {"role": "user", "content": "Job 502 failed. Read its log, then explain the failure."}]}
    request = urllib.request.Request(f"{url}/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=600) as resp:
        reply = json.load(resp)
    timings = reply["timings"]
    return {"prompt_tokens": timings["prompt_n"], "prompt_tokens_per_s": round(timings["prompt_per_second"], 1),
            "output_tokens": timings["predicted_n"], "output_tokens_per_s": round(timings["predicted_per_second"], 1),
            "wall_s": round(time.monotonic() - started, 1)}


def main() -> None:
    reason = missing()
    if reason:
        sys.exit(reason)
    with LlamaCppServer() as server:
        print(json.dumps({"load_s": round(server.load_s, 1), **measure(server.url)}))


if __name__ == "__main__":
    main()
