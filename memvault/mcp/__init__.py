"""The MCP face, what talks to the SDK: the server, its tools, resources and prompts (``tools/``),
scope from the connection, the errors as the client reads them, and the transports the SDK serves.
"""
