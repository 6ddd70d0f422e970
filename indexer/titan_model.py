"""The Titan embedding model an index built with ``--embedder titan`` uses by default.

A leaf of its own so `chatguard`'s parser can show the default in ``index --help`` without
importing the embedder (numpy and boto3) for every other command."""

from __future__ import annotations

MODEL_ID = "amazon.titan-embed-text-v2:0"
