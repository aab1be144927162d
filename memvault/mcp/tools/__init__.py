"""The MCP registrations: the tools, resources and prompts, one module per subject."""
