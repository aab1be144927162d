"""memvault.mcp."""
