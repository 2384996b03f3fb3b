"""Exploration: the ContextEnricher's orchestration code over the tool catalogue, run in the sandbox."""
