"""Which project a folder or a call belongs to (git work trees, folders, names)."""
