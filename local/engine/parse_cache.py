"""The parsed ASL program, kept on disk between runs of `chatguard chat`, `demo` and `serve`.

moto's engine parses the definition with ANTLR's Python runtime, whose first parse in a
process builds its prediction tables: about 2 s of CPU, the largest part of a one-shot
`chatguard chat` (docs/benchmarks.md, "CLI"). The parsed program is plain moto objects and
holds no per-execution state (local/engine/step_functions.py), so it is pickled once per definition.

The key is a hash of the definition, moto's version and Python's: a new ASL, a moto
upgrade or another interpreter parse again. The cache lives in the user's own cache
directory (``$XDG_CACHE_HOME/chatguard``, else ``~/.cache/chatguard``; CHATGUARD_CACHE_DIR
overrides it, and an empty value turns it off), created private (0700): unpickling runs
code, so nobody else may write there. An unreadable or corrupt entry is parsed again
and rewritten; a cache that cannot be written is skipped silently.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

ENV_DIR = "CHATGUARD_CACHE_DIR"
_FORMAT = "asl-program-1"


def cache_dir() -> Path | None:
    chosen = os.environ.get(ENV_DIR)
    if chosen is not None:
        return Path(chosen) if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chatguard"


def entry_name(definition: str) -> str:
    key = "\0".join((_FORMAT, metadata.version("moto"), sys.version, definition))
    return f"asl-{hashlib.sha256(key.encode()).hexdigest()[:32]}.pickle"


def load_or_parse(definition: str, parse: Callable[[str], Any]) -> Any:
    where = cache_dir()
    if where is None:
        return parse(definition)
    path = where / entry_name(definition)
    program = _load(path)
    if program is None:
        program = parse(definition)
        _store(path, program)
    return program


def _load(path: Path) -> Any:
    try:
        if path.parent.stat().st_mode & 0o022:  # writable by others: never unpickle
            return None
        with path.open("rb") as handle:
            return pickle.load(handle)
    except Exception:  # missing, truncated, or from an incompatible moto: parse again
        return None


def _store(path: Path, program: Any) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        data = pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL)
        # Written beside, then renamed: a concurrent reader sees the old file or the new.
        fd, temp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except (OSError, pickle.PicklingError, RecursionError, TypeError):
        return
