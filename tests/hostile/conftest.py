"""The hostile-input suite runs the whole service as tests/runner does (its fixtures, re-exported here)."""

from tests.runner.conftest import service, triaged_service

__all__ = ["service", "triaged_service"]
