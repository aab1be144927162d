"""Fill an embedded Qdrant folder exactly as mcp-server-qdrant's ``qdrant-store`` writes it.

Run with the PEER venv's python (it imports mcp-server-qdrant, qdrant-client and fastembed
from there; bench never imports them into memvault's venv)::

    <peers-venv>/bin/python bench/peer_qdrant_fill.py --path DIR --collection NAME < texts.jsonl

stdin: one JSON string per line (the documents). Environment as the server's
(``FASTEMBED_CACHE_PATH``, ``HF_HUB_OFFLINE``, optional ``EMBEDDING_MODEL``).

Layout, taken from mcp-server-qdrant 0.8.x itself rather than copied: the embedding provider
is built by its own factory from its own settings (model, hence the named vector
``fast-<model>`` and its size), the collection is created by its connector's
``_ensure_collection_exists`` (COSINE distance), and each point is what ``store`` upserts:
``id=uuid4().hex``, ``vector={<vector name>: passage embedding}``,
``payload={"document": text, "metadata": None}`` (no metadata given). Only the batching
differs (``--batch`` documents per embed + upsert instead of one per MCP call).

stdout: one JSON object (points, vector_name, dim, model, embed_s, upsert_s); progress on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid


async def fill(path: str, collection: str, texts: list[str], batch: int) -> dict:
    """Create ``collection`` in the local-mode folder ``path`` and store ``texts``; returns stats."""
    from mcp_server_qdrant.embeddings.factory import create_embedding_provider
    from mcp_server_qdrant.qdrant import QdrantConnector
    from mcp_server_qdrant.settings import METADATA_PATH, EmbeddingProviderSettings
    from qdrant_client import models

    settings = EmbeddingProviderSettings()
    provider = create_embedding_provider(settings)
    conn = QdrantConnector(None, None, collection, provider, qdrant_local_path=path)
    await conn._ensure_collection_exists(collection)
    client = conn._client
    name = provider.get_vector_name()
    embed_s = upsert_s = 0.0
    for i in range(0, len(texts), batch):
        part = texts[i : i + batch]
        t0 = time.perf_counter()
        vectors = await provider.embed_documents(part)
        t1 = time.perf_counter()
        points = [models.PointStruct(id=uuid.uuid4().hex, vector={name: v},
                                     payload={"document": d, METADATA_PATH: None})
                  for d, v in zip(part, vectors, strict=True)]
        await client.upsert(collection_name=collection, points=points)
        t2 = time.perf_counter()
        embed_s, upsert_s = embed_s + t1 - t0, upsert_s + t2 - t1
        print(f"peer fill {i + len(part)}/{len(texts)}", file=sys.stderr, flush=True)
    count = (await client.count(collection_name=collection, exact=True)).count
    await client.close()
    return {"points": count, "vector_name": name, "dim": provider.get_vector_size(), "model": settings.model_name,
            "embed_s": round(embed_s, 1), "upsert_s": round(upsert_s, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--path", required=True, help="QDRANT_LOCAL_PATH folder to create")
    p.add_argument("--collection", required=True, help="COLLECTION_NAME")
    p.add_argument("--batch", type=int, default=512)
    a = p.parse_args()
    texts = [json.loads(line) for line in sys.stdin if line.strip()]
    print(json.dumps(asyncio.run(fill(a.path, a.collection, texts, a.batch))))


if __name__ == "__main__":
    main()
