"""Child-process entry of the moto server: binds 127.0.0.1 on an ephemeral port, prints the port,
and exits by itself when its parent goes away (stdin reaches EOF)."""

from __future__ import annotations

import os
import sys
import threading


def _exit_when_parent_leaves() -> None:
    sys.stdin.buffer.read()
    os._exit(0)


def main() -> None:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    port = server.server_address[1]
    os.environ["MOTO_PORT"] = str(port)
    threading.Thread(target=_exit_when_parent_leaves, daemon=True).start()
    print(port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
