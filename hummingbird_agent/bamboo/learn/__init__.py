"""Learning: resolved incidents into the knowledge graph (extract, review, store)."""
