"""memvault.ingest."""
