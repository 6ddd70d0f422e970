"""`chatguard`: one command, with subcommands contributed by the packages that own them.

Whatever goes wrong reaches the user as one line and an exit code, never a traceback:
a bad argument (2), Ctrl-C (130, the shell's convention for SIGINT), and a reader that
stops early (`chatguard chat ... | head -1`: quietly, as other command-line tools do).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from importlib import metadata
from typing import NoReturn

# Each module exposes register(subparsers); a subcommand sets `func` via set_defaults.
# indexer: index; local: chat, demo, serve; ops: spend, mode, rotate, billing-services,
# traces, trace, enable-model, verify.
_PROVIDERS = ("indexer.cli", "local.commands", "ops.cli")
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line that points at --help."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def version() -> str:
    try:
        return metadata.version("chatguard")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="chatguard",
        description="A public AI chat backend that cannot surprise you with the bill.",
    )
    parser.add_argument("--version", action="version", version=f"chatguard {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _PROVIDERS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except KeyboardInterrupt:
        print("\nchatguard: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader left (`| head -1`); point stdout at nothing so the interpreter's
        # final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
