"""Data only: all-MiniLM-L6-v2's tokenizer.json (see NOTICE.md), read by local_embedder.py."""
