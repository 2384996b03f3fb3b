"""Retrieval: scores of learned incidents and causes for a new failure (graph, vectors, whole logs)."""
