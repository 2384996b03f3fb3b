"""llama.cpp's own OpenAI-compatible server (the xllamacpp wheel) with Qwen2.5-Coder-0.5B-Instruct Q4_K_M, in
a child process on an ephemeral 127.0.0.1 port: the independent implementation the scripted OpenAI fake is
checked against. Installed by scripts/install-llamacpp-tier.sh, never by the service's own dependencies.

Run as a script it is the child: it loads the model, prints the server's URL and serves until its stdin
closes, so it never outlives the test process."""

from __future__ import annotations

import importlib.util
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "var" / "llamacpp" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_BYTES = 491_400_064
MODEL_NAME = "qwen2.5-coder-0.5b-instruct"
INSTALL_HINT = "run `make test-llamacpp` (scripts/install-llamacpp-tier.sh installs xllamacpp and the model)"
# Loading takes ~4 s on an idle machine; allow for four other jobs on the same two cores.
STARTUP_TIMEOUT_S = 120.0
# Room for the agent's system prompt, tool declarations and a few turns.
CONTEXT_TOKENS = 32_768


def missing() -> str | None:
    """Why the tier cannot run here (None when it can)."""
    # Looked up, never imported here: loading llama.cpp's native library into a test process that already holds
    # other extension modules aborted the whole pytest run; only the child server process imports it.
    if importlib.util.find_spec("xllamacpp") is None:
        return f"xllamacpp is not installed: {INSTALL_HINT}"
    if not MODEL.is_file() or MODEL.stat().st_size != MODEL_BYTES:
        return f"the model file {MODEL.relative_to(REPO)} is missing: {INSTALL_HINT}"
    return None


class LlamaCppServer:
    """`start()` spawns the server and waits until it listens; `stop()` ends it by its pid."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self.url = ""
        self.load_s = 0.0

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> LlamaCppServer:
        self._log = tempfile.TemporaryFile()
        started = time.monotonic()
        # -P: this folder's gitlab.py / openai.py must not shadow the real packages in the child.
        self._proc = subprocess.Popen([sys.executable, "-P", __file__, str(MODEL)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._log)
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], STARTUP_TIMEOUT_S)
        line = self._proc.stdout.readline().decode().strip() if ready else ""
        if not line.startswith("http://127.0.0.1:"):
            tail = self.log_tail()
            self.stop()
            raise RuntimeError(f"llama.cpp server failed to start: {tail}")
        self.url, self.load_s = line, time.monotonic() - started
        return self

    def log_tail(self, limit: int = 2000) -> str:
        if self._log is None or self._log.closed:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-limit:]

    def stop(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()  # the child exits on EOF
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None


def _serve(model: str) -> None:
    import os

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.model_alias = {MODEL_NAME}
    params.n_ctx = CONTEXT_TOKENS
    params.n_parallel = 1
    params.use_jinja = True  # the model's own chat template, with its tool section
    # One generation thread: two collapse to ~0.3 tokens/s when another job shares the two cores.
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.sampling.temp = 0.0  # greedy unless a request asks otherwise: the same answers on every run
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    server = xllamacpp.Server(params)
    print(server.listening_address, flush=True)
    sys.stdin.read()
    # The server's threads are not joinable from Python: leave without running their destructors.
    os._exit(0)


if __name__ == "__main__":
    _serve(sys.argv[1])
