"""One switch for every per-container cache (the local runtime and tests flip settings).

Knowledge is cleared only if its module was already imported: importing it here would pull
numpy into the gate steps.
"""

from __future__ import annotations

import sys

from ..money import spent_memo
from . import clients, secrets, settings


def reset_all() -> None:
    settings.settings.cache_clear()
    clients.cache_clear()
    secrets.cache_clear()
    spent_memo.CONTAINER.clear()
    knowledge = sys.modules.get("steps.lib.grounding.knowledge")
    if knowledge is not None:
        knowledge.load_knowledge.cache_clear()
