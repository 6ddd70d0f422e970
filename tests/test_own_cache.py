"""A test run keeps its caches and the local signing key in its own temporary folder: the
user's ~/.cache/chatguard is neither read nor written (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from local.commands.conversation import KEY_FILE, local_signing_key
from local.engine.parse_cache import ENV_DIR, cache_dir

ROOT = Path(__file__).resolve().parents[1]


def _chat_with_history(home: Path, env: dict[str, str], history: Path) -> None:
    """The real CLI, one message kept in a history file (so it parses the ASL and signs)."""
    done = subprocess.run(
        [sys.executable, "-m", "chatguard", "chat", "What is the WAF rate limit?",
         "--history", str(history)],
        cwd=ROOT, env={**env, "HOME": str(home)}, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_the_session_caches_in_its_own_folder(own_cache_folder: Path) -> None:
    assert cache_dir() == own_cache_folder
    assert not own_cache_folder.is_relative_to(Path.home() / ".cache")
    key = local_signing_key()
    assert (own_cache_folder / KEY_FILE).read_text(encoding="ascii").strip() == key


def test_a_chat_started_by_a_test_leaves_the_users_cache_untouched(
    tmp_path: Path, own_cache_folder: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _chat_with_history(home, dict(os.environ), tmp_path / "turns.json")
    assert list(home.iterdir()) == []  # no ~/.cache/chatguard, nothing else either
    assert (own_cache_folder / KEY_FILE).is_file()
    assert list(own_cache_folder.glob("asl-*.pickle"))


def test_without_the_suites_setting_the_same_chat_writes_the_users_cache(tmp_path: Path) -> None:
    """The naive run (the user's environment): the same command fills ~/.cache/chatguard, so
    the test above would see it."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in (ENV_DIR, "XDG_CACHE_HOME")}
    _chat_with_history(home, env, tmp_path / "turns.json")
    written = {p.name for p in (home / ".cache" / "chatguard").iterdir()}
    assert KEY_FILE in written and any(n.startswith("asl-") for n in written)
