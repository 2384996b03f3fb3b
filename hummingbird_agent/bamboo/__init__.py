"""Bamboo knowledge base: learning from resolved incidents (learn/), retrieval scores (retrieval/), diagnosis of
new failures (diagnose/), exploration with tools (explore/), the PanDA strategy's support (panda/); the graph
model, stores, embeddings, MCP tool clients and extraction strategies beneath them. See docs/architecture.md."""
