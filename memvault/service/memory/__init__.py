"""The memory tools' handlers: remember, recall, forget, restore, history, consolidate, and their result models."""
