"""Extraction strategies (plugin registry in base.py): gitlab_ci (default) and panda."""
