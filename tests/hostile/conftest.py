"""The hostile-input suite runs the whole service as tests/runner does (its fixtures, re-exported here), and the
bot's GitLab client alone as tests/gitlab does."""

from tests.gitlab.test_client import client
from tests.runner.conftest import service, triaged_service

__all__ = ["client", "service", "triaged_service"]
