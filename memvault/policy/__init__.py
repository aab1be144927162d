"""memvault.policy."""
