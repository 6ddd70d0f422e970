"""One copy of each botocore data file per process, shared by every botocore Loader.

botocore caches what a Loader reads on that Loader only, and the local runtime has many:
each boto3 or botocore Session builds one, moto builds a fresh one for every service model
its responses serialise with, and moto's backends list Regions through a Session of their
own. A one-shot `chatguard chat` so parsed the SSM model four times and the endpoints file
four times (about a third of its CPU; docs/benchmarks.md, "CLI").

`share()` makes every Loader keep its cache in one process-wide dict, keyed by what decides
the answer: the Loader's class (moto's merges its own extras), its search paths as they
are at the call (boto3 appends its data directory after the Loader is built) and its
extras types. Two Loaders that would read the same files answer with the same objects,
which is what one Loader already does for every client of its Session, so nothing that
was safe becomes unsafe. Installed once and for good: a Loader built before still caches
on its own.
"""

from __future__ import annotations

import threading
from typing import Any

_SHARED: dict[tuple[Any, ...], Any] = {}
_LOCK = threading.Lock()
_installed = False


class _SharedCache:
    """The ``_cache`` of one Loader, answered from the shared dict (botocore's
    ``instance_cache`` uses ``in``, ``[key]`` and ``[key] = value`` only)."""

    __slots__ = ("_loader",)

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def _key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        loader = self._loader
        return (type(loader), tuple(loader.search_paths), tuple(loader.extras_types), key)

    def __contains__(self, key: tuple[Any, ...]) -> bool:
        return self._key(key) in _SHARED

    def __getitem__(self, key: tuple[Any, ...]) -> Any:
        return _SHARED[self._key(key)]

    def __setitem__(self, key: tuple[Any, ...], value: Any) -> None:
        with _LOCK:  # the first value stored wins, so every caller sees one object
            _SHARED.setdefault(self._key(key), value)


def share() -> None:
    """Every botocore Loader built from now on caches in the process-wide dict."""
    global _installed
    with _LOCK:
        if _installed:
            return
        from botocore import loaders

        original = loaders.Loader.__init__

        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            self._cache = _SharedCache(self)

        loaders.Loader.__init__ = init
        _installed = True
