"""`chatguard`: one command, with subcommands contributed by the packages that own them.

Whatever goes wrong reaches the user as one line and an exit code, never a traceback:
a bad argument (2), Ctrl-C (130, the shell's convention for SIGINT), and a reader that
stops early (`chatguard chat ... | head -1`: quietly, as other command-line tools do).
"""

from __future__ import annotations

import argparse
import difflib
import gc
import importlib
import os
import sys
from importlib import metadata
from typing import NoReturn

# Each module exposes register(subparsers); a subcommand sets `func` via set_defaults.
# indexer: index; local: chat, demo, serve; ops: spend, mode, rotate, billing-services,
# traces, trace, enable-model, verify.
_PROVIDERS = ("indexer.cli", "local.commands.chat_demo_serve", "ops.cli")
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
# Allocations between two collections of the youngest generation (CPython 3.11: 700).
# Start-up allocates some 170,000 objects that live as long as the process (moto, botocore,
# numpy); at 700 a chat ran about 370 collections, two of them full ones walking every
# object, about 150 ms of its main thread; at 10,000 about 26 and no full one, about 110 ms
# (gc.callbacks, three runs). Garbage in cycles waits a little longer to be freed.
GC_THRESHOLD = 10_000
# One example per subcommand, shown at the end of its --help (tests/test_cli_help.py runs
# each through the parser).
EXAMPLES = {
    "index": "chatguard index examples/site --out build/knowledge",
    "chat": 'chatguard chat "How do I pick a WAF rate limit?" --page /posts/waf-rate-limiting',
    "demo": "chatguard demo",
    "serve": "chatguard serve --port 8788 --daily-ceiling-usd 0.50",
    "spend": "chatguard spend --local http://127.0.0.1:8787",
    "mode": "chatguard mode degraded --local http://127.0.0.1:8787",
    "rotate": "chatguard rotate origin-secret --dry-run",
    "billing-services": "chatguard billing-services --region eu-west-1",
    "traces": "chatguard traces --since 1h --decision degraded",
    "trace": "chatguard trace last --local http://127.0.0.1:8787",
    "enable-model": "chatguard enable-model --region eu-west-1",
    "verify": "chatguard verify --local http://127.0.0.1:8787",
    "doctor": "chatguard doctor --region eu-west-1 --profile prod",
}


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
    for name, command in sub.choices.items():
        command.formatter_class = argparse.RawDescriptionHelpFormatter
        if name in EXAMPLES:
            command.epilog = _with_example(EXAMPLES[name], command.epilog)
    return parser


def _with_example(example: str, epilog: str | None) -> str:
    """One examples section: a command's own (doctor's variants) takes the example in,
    first and once, rather than standing as a second section beside it."""
    own, heading = (epilog or "").strip(), "examples:\n"
    if not own.startswith(heading):
        return f"example:\n  {example}" + (f"\n\n{own}" if own else "")
    variants = [line for line in own[len(heading) :].splitlines() if line.strip() != example]
    lines = [f"  {example}", *(line for line in variants if not line.startswith(f"  {example} "))]
    return heading + "\n".join(lines)


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse; an unknown option is reported by its subcommand, with the closest option it
    takes (`serve --ceiling 1`: did you mean --daily-ceiling-usd?) and its --help."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = _subparsers(parser)[args.command]
        known = [o for a in command._actions for o in a.option_strings]
        given = extra[0].split("=")[0]
        close = [o for o in known if len(given) > 3 and given.lstrip("-") in o][:1]
        close += difflib.get_close_matches(given, known, n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]}?" if close and extra[0].startswith("-") else ""
        command.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    return args


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse(build_parser(), argv)
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


def run() -> NoReturn:
    """The `chatguard` process itself (the console script, `python -m chatguard`): main(),
    with fewer collections during start-up (`GC_THRESHOLD`), then an exit that skips the
    interpreter's last garbage collections.

    At exit CPython's last collections walk every object still alive (moto, botocore,
    numpy: some 170,000 tracked objects) only to free memory the OS takes back at once;
    for a one-shot `chatguard chat` that was about half a second of CPU (a stack sampler
    on one run; docs/benchmarks.md, "CLI"). `gc.freeze()` moves what is alive into the permanent
    generation, which no collection walks. The rest of exit is unchanged: atexit handlers
    (logging's flush), the wait for non-daemon threads, the flush of stdout and stderr.
    Only objects in reference cycles are no longer finalized at exit, which CPython never
    promised; every file a command writes is closed before `main` returns. Tests call
    `main`, so their process is never frozen.
    """
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
