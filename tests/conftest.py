"""What every test shares: the suite's own cache folder.

The parsed ASL program (local/engine/parse_cache.py) and the local signing key of `chat
--history` (local/commands/conversation.py) live in the user's cache folder, which the user's
own `chatguard chat` and `serve`, and other test runs, read and write at the same time. The
session points CHATGUARD_CACHE_DIR (the project's own setting, which wins over
XDG_CACHE_HOME) at a temporary folder of its own; the processes the tests start inherit it.
XDG_CACHE_HOME is left alone: pip and Chromium keep their caches there for the whole machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from local.engine.parse_cache import ENV_DIR


@pytest.fixture(scope="session", autouse=True)
def own_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The folder the whole session caches in (created on first write, as for a user)."""
    folder = tmp_path_factory.mktemp("cache") / "chatguard"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_DIR, str(folder))
        yield folder
