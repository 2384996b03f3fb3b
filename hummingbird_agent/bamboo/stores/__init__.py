"""Graph and vector stores of the knowledge base (interfaces in base.py)."""
