"""Agent tests share the real Podman sandbox fixture of the tool tests."""

from tests.tools.conftest import sandbox

__all__ = ["sandbox"]
