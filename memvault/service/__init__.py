"""The handlers behind the tools, by subject (``memory``, ``documents``, ``profile``, ``upkeep``,
``scope``), and what they share: the runtime, search, filters, indexing, validation, errors.
"""
