"""The docs agree with each other and with the code on what a newcomer meets first (issue
27, item 4): how offline queries are embedded, the Bedrock set-up line, cdk.json's keys."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def test_offline_queries_are_embedded_by_the_local_model_in_every_doc() -> None:
    local = _text("docs/local.md")
    assert "all-MiniLM-L6-v2" in local and "all-MiniLM-L6-v2" in _text("README.md")
    assert "hashing\nembedder** (feature hashing" not in local
    assert not re.search(r"stand-ins: the \*\*hashing", local)


def test_no_doc_sends_the_user_to_the_model_access_page() -> None:
    """README: Bedrock no longer has that page; the first call enables a model."""
    from local.engine import bedrock_access

    source = Path(bedrock_access.__file__).read_text(encoding="utf-8")
    assert "under Model access" not in source and "under Model access" not in _text("docs/local.md")
    assert "`chatguard enable-model --region REGION`" in _text("docs/local.md")


def test_the_readme_table_has_the_embedder_key_the_synth_refusal_names() -> None:
    """`"embedder": "local"` is the only route to a synth without a Titan index."""
    readme = _text("README.md")
    table = readme[readme.index("### 3. Set the context") : readme.index("`chatguard/edge`:")]
    assert json.loads(_text("cdk.json"))["context"]["chatguard"]["embedder"] == "titan"
    assert "| `embedder` | titan |" in table and "`local`" in table
