"""hummingbird-agent: an LLM agent service for GitLab merge requests and CI pipelines."""

__version__ = "0.1.0"

__all__ = ["__version__"]
