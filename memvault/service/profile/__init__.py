"""The profile, the working-memory tasks and the session block the hooks show."""
