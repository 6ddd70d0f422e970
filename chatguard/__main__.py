"""`python -m chatguard ...`: the same command as the `chatguard` console script."""

from __future__ import annotations

from chatguard.cli import run

run()
