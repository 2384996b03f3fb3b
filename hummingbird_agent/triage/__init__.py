"""Failure triage before the model: is a red MR pipeline the MR's own change? Verdicts per failed check from
GitLab's pipelines, job attempts and logs, the excerpt engine and the knowledge base."""
