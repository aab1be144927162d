"""memvault: long-term memory for assistants, served over MCP.

Layers (dependencies point one way): ``cli -> process -> mcp / web -> service -> policy, storage,
embedding, ingest`` (docs/architecture.md).
"""

__version__ = "0.1.0"
