"""Prometheus metrics: one `Metrics` (its own CollectorRegistry) per service instance, passed down, plus the
wrappers that record model, sandbox and handler activity without touching the code they wrap."""

from hummingbird_agent.metrics.registry import CONTENT_TYPE, Metrics
from hummingbird_agent.metrics.wrappers import MeteredModel, MeteredSandbox, metered_handler

__all__ = ["CONTENT_TYPE", "MeteredModel", "MeteredSandbox", "Metrics", "metered_handler"]
