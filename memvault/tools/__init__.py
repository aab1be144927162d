"""memvault.tools."""
