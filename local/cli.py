"""`chatguard`: one command, with subcommands contributed by the packages that own them."""

from __future__ import annotations

import argparse
import importlib
import sys

# Each module exposes register(subparsers); a subcommand sets `func` via set_defaults.
_PROVIDERS = ("indexer.cli", "local.commands", "ops.cli")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chatguard",
        description="A public AI chat backend that cannot surprise you with the bill.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _PROVIDERS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
