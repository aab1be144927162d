"""The local web face: ``memvault ui``'s page, served by the data dir's owner on 127.0.0.1.

Beside the MCP face (``memvault.mcp``), calling the same services (``memvault.service``).
Server-rendered HTML with no script at all (the Content-Security-Policy forbids it); every
asset ships in this package (``static/``). ``guard`` keeps other users and other web
pages out; ``app`` maps requests to services; ``pages`` renders them.
"""
