"""A small MCP server for the tests (mcp 1.x FastMCP): `python mcp_server.py stdio` or `... http PORT`.

Tools: a CI-flavoured read tool, one that fails, one that "changes state" (counted in a file), and one
that reports an environment variable (to check what a stdio child inherits).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.fastmcp import FastMCP


def build(port: int = 0) -> FastMCP:
    server = FastMCP("test-ci", host="127.0.0.1", port=port, log_level="WARNING")

    @server.tool()
    def get_runner_info(runner: str) -> dict:
        """Runner details: tags and free disk space of a CI runner."""
        return {"runner": runner, "tags": ["podman", "x86_64"], "free_disk_gb": 3}

    @server.tool()
    def broken_tool(x: int = 1) -> str:
        """A tool that always fails."""
        raise RuntimeError(f"backend exploded for {x}")

    @server.tool()
    def restart_runner(runner: str) -> str:
        """Restart a CI runner (changes state)."""
        marker = os.environ.get("MCP_TEST_MARKER")
        if marker:
            with Path(marker).open("a") as fh:
                fh.write(runner + "\n")
        return "restarted"

    @server.tool()
    def env_value(name: str) -> str:
        """The value of one environment variable of the server process."""
        return os.environ.get(name, "<unset>")

    return server


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        build().run()
    else:
        build(int(sys.argv[2])).run(transport="streamable-http")
