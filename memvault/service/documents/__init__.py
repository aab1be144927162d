"""The document tools' handlers: indexing folders of documents and searching them."""
