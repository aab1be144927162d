"""memvault: long-term memory for assistants, served over MCP.

Layers (dependencies point one way): ``server -> tools -> policy, storage, ingest``.
"""

__version__ = "0.1.0"
