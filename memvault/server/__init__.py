"""memvault.server."""
