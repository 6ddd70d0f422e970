"""Placeholder: the owning issue replaces this module with its subcommands."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: argparse._SubParsersAction[Any]) -> None:  # noqa: ARG001
    """Add this module's subcommands to `chatguard`."""
