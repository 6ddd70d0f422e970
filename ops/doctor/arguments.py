"""`chatguard doctor`'s arguments: what `chatguard`'s parser needs, without the checks.

The checks (ops/doctor/command.py, with the steps' settings and pricing behind them) load when the
command runs, so building the parser for another command never imports them."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from steps.lib.runtime.settings import DEFAULT_KNOWLEDGE_DIR

from .notice import SPEND_NOTICE

# Shown after the one example chatguard/cli.py's EXAMPLES gives every command.
EXAMPLES = """examples:
  chatguard doctor                               # the stack of cdk.json's chat_region
  chatguard doctor --region eu-west-1 --profile prod
  chatguard doctor --knowledge build/titan-knowledge   # the index bundled at the last deploy
  chatguard doctor --cold                        # the first message after a quiet spell"""


def register(
    sub: argparse._SubParsersAction[Any],
    *,
    parents: list[argparse.ArgumentParser],
    guard: Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]],
) -> None:
    """Add `chatguard doctor` (ops/cli.py passes its --profile/--region/--stack parent)."""
    p = sub.add_parser(
        "doctor",
        parents=parents,
        help="after make deploy: test the account's side of every assumption",
        description="One line per check (PASS, FAIL, CANNOT TEST, NOT APPLICABLE) and the fix;\n"
        "exit 1 on any FAIL.\n\n" + SPEND_NOTICE,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--knowledge",
        type=Path,
        default=DEFAULT_KNOWLEDGE_DIR,
        metavar="DIR",
        help="the index folder bundled at the last deploy (default: build/knowledge)",
    )
    p.add_argument(
        "--cold",
        action="store_true",
        help="instead: one real message with every step cold, each Init Duration beside the "
        "cold model's (ops/doctor/cold.py)",
    )
    p.set_defaults(func=guard(_command))


def _command(args: argparse.Namespace) -> int:
    if getattr(args, "cold", False):
        from .cold import cli

        return cli(args)
    from .command import command

    return command(args)
