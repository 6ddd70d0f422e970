from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from steps.lib.grounding import knowledge

SAMPLE_SITE = Path(__file__).resolve().parents[2] / "examples" / "site"


@pytest.fixture(autouse=True)
def _fresh_knowledge_cache() -> None:
    knowledge.load_knowledge.cache_clear()


@pytest.fixture
def make_site(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    """Write {relative path: content} under a fresh site directory."""

    def make(files: dict[str, str]) -> Path:
        site = tmp_path / "site"
        for relative, content in files.items():
            path = site / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        site.mkdir(exist_ok=True)
        return site

    return make
