"""Child-process entry of LocalStack, run by the LocalStack venv's Python: starts LocalStack's own
runtime and makes it exit when the parent goes away (stdin reaches EOF), as moto_main does."""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading

# Time LocalStack gets to shut down by itself before the process ends regardless.
_GRACEFUL_EXIT_S = 10.0


def _exit_when_parent_leaves() -> None:
    sys.stdin.buffer.read()
    os.kill(os.getpid(), signal.SIGTERM)  # LocalStack's own shutdown
    threading.Timer(_GRACEFUL_EXIT_S, os._exit, (0,)).start()


def main() -> None:
    threading.Thread(target=_exit_when_parent_leaves, daemon=True).start()
    s3_dir = os.environ.get("TEST_S3_STORAGE_DIR")
    if s3_dir:
        from localstack.services.s3 import provider

        # LocalStack keeps S3 objects in a fixed /tmp/localstack-s3-storage; each test server gets its own.
        provider.DEFAULT_S3_TMP_DIR = s3_dir
    sys.argv = ["localstack"]
    runpy.run_module("localstack.runtime.main", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
