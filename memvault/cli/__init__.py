"""The ``memvault`` console script: one module per command (or command group), ``common`` for what they share.

``main`` is the console script's entry (``memvault = "memvault.cli:main"``) and ``python -m memvault``'s.
"""

from memvault.cli.entry import main

__all__ = ["main"]
