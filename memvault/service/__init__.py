"""memvault.service."""
