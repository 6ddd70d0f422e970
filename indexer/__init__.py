"""Build-time indexer: site pages -> heading chunks -> embeddings -> knowledge artifact."""
