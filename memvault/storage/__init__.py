"""memvault.storage."""
