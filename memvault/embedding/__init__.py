"""Embedding models: packaging of the default model and the embedder that runs it."""
