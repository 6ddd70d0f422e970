"""`chatguard chat`, `chatguard demo` and `chatguard serve`: the local runtime's commands.

Each checks what it needs before starting anything (the index, the site directory, the
settings) and says what is wrong in one line with exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from steps.lib.runtime.errors import SettingsError
from steps.lib.runtime.settings import ENV_PREFIX, Settings, cdk_context, edge_context

DEFAULT_IP = "192.0.2.1"  # a documentation address: the local visitor
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # the shell's convention for SIGINT


class CommandError(Exception):
    """Something the user must fix before the command can run: one line, exit code 2."""


def local_settings(**overrides: Any) -> Settings:
    """The project's settings (cdk.json), then CHATGUARD_* environment variables, then the
    command line; answered by the offline model stand-ins unless `model_backend` says
    bedrock."""
    from_cdk = {ENV_PREFIX + k.upper(): str(v) for k, v in cdk_context()["chatguard"].items()}
    base = Settings.from_env({**from_cdk, **os.environ})
    chosen = {k: v for k, v in overrides.items() if v is not None}
    return base.replace(**{"model_backend": "offline", **chosen})


def port_number(text: str) -> int:
    """argparse type: a TCP port (0 = any free port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0-65535; 0 = any free port)")
    return port


def positive(kind: type[int] | type[float]) -> Any:
    """argparse type: a number above zero."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} must be above zero")
        return value

    return parse


def _decimal_text(text: str, *, noun: str, example: str, ok: Any, rule: str) -> str:
    """A Decimal argument, kept as text for Settings; refused in one line with an example."""
    from decimal import Decimal, InvalidOperation

    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"{text!r} is not {noun}, e.g. {example}") from None
    if not value.is_finite() or not ok(value):
        raise argparse.ArgumentTypeError(f"{text} must be {rule}, e.g. {example}")
    return text


def usd_amount(text: str) -> str:
    """argparse type: an amount in USD above zero, e.g. 0.50 (kept as text for Settings)."""
    return _decimal_text(
        text, noun="an amount in USD", example="0.50", ok=lambda v: v > 0,
        rule="an amount above zero",
    )  # fmt: skip


def share(text: str) -> str:
    """argparse type: a share of the daily ceiling in (0, 1], e.g. 0.05."""
    return _decimal_text(
        text, noun="a share", example="0.05", ok=lambda v: 0 < v <= 1,
        rule="above 0 and at most 1",
    )  # fmt: skip


def _add_runtime_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_argument_group("what it answers from")
    where.add_argument(
        "--knowledge",
        type=Path,
        metavar="DIR",
        help="the index built by `chatguard index` (default: build/knowledge)",
    )
    where.add_argument(
        "--site",
        type=Path,
        metavar="DIR",
        help="your site's Markdown/HTML folder: served as the demo site, and named in "
        "the `chatguard index` hint (default: examples/site)",
    )


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    model = parser.add_argument_group("real answers")
    model.add_argument(
        "--model",
        choices=("offline", "bedrock"),
        default="offline",
        help="offline = the extractive stand-in, no AWS (default); bedrock = real Converse "
        "and Titan calls with your AWS credentials (each message is billed to your account)",
    )
    model.add_argument("--profile", help="AWS profile for --model bedrock")
    model.add_argument("--region", help="AWS Region for --model bedrock")
    model.add_argument(
        "--guardrail",
        metavar="ID[:VERSION]",
        help="a Bedrock guardrail for --model bedrock, as deployed (default: none)",
    )


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add chat, demo and serve to `chatguard`."""
    chat = sub.add_parser("chat", help="send one message through the whole state machine")
    chat.add_argument(
        "message",
        nargs="?",
        help="what the visitor asks; leave it out for a conversation (one question a line, "
        "follow-ups see the answers so far)",
    )
    chat.add_argument(
        "--history",
        type=Path,
        metavar="FILE",
        help="keep the conversation in FILE between runs (JSON turns, created if missing): "
        "each run sends it and appends its signed answer",
    )
    chat.add_argument("--page", help="the site path the visitor is on, e.g. /posts/waf")
    chat.add_argument("--ip", default=DEFAULT_IP, help="the visitor's IP (default %(default)s)")
    chat.add_argument("--json", action="store_true", help="print {status, body, steps}")
    chat.add_argument(
        "--server",
        metavar="URL",
        help="ask the `chatguard serve` already running at URL (e.g. http://127.0.0.1:8787) "
        "instead of starting the runtime here: an answer in a fraction of a second, from "
        "that server's index, limits and ledger (without it, chat always runs in-process)",
    )
    chat.add_argument("--verbose", action="store_true", help="show the steps' log lines")
    _add_runtime_options(chat)
    _add_model_options(chat)
    chat.set_defaults(func=run_chat)

    demo = sub.add_parser("demo", help="a scripted session where each layer refuses in turn")
    demo.add_argument("--verbose", action="store_true", help="show the steps' log lines")
    _add_runtime_options(demo)
    demo.set_defaults(func=run_demo_command)

    serve = sub.add_parser("serve", help="serve the chat API and demo site on loopback")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (%(default)s)")
    serve.add_argument(
        "--port", type=port_number, default=8787, help="port (%(default)s; 0 = any free port)"
    )
    serve.add_argument(
        "--trust-viewer-address",
        action="store_true",
        help="LOCAL ONLY: take the visitor from a CloudFront-Viewer-Address header",
    )
    logs = serve.add_mutually_exclusive_group()
    logs.add_argument("--quiet", action="store_true", help="no line per message")
    logs.add_argument(
        "--json-logs",
        action="store_true",
        help="every step's JSON log lines (as CloudWatch receives them) instead of one "
        "line per message",
    )
    _add_runtime_options(serve)
    _add_model_options(serve)
    money = serve.add_argument_group("limits (default: cdk.json)")
    money.add_argument(
        "--daily-ceiling-usd", type=usd_amount, metavar="USD", help="hard cap on a day's spend"
    )
    money.add_argument(
        "--monthly-ceiling-usd", type=usd_amount, metavar="USD", help="hard cap on a month's"
    )
    money.add_argument(
        "--visitor-message-limit",
        type=positive(int),
        metavar="N",
        help="messages per visitor per day",
    )
    money.add_argument(
        "--visitor-cost-share",
        type=share,
        metavar="SHARE",
        help="a visitor's share of the daily ceiling, in (0, 1]",
    )
    money.add_argument(
        "--body-max-bytes",
        type=positive(int),
        metavar="N",
        help="largest request body the edge accepts",
    )
    edge = edge_context()
    money.add_argument(
        "--rate-limit",
        type=positive(int),
        default=int(edge.get("waf_rate_limit", 20)),
        metavar="N",
        help="requests per address per window at the edge (default %(default)s)",
    )
    money.add_argument(
        "--rate-window",
        type=positive(float),
        default=float(edge.get("waf_window_seconds", 120)),
        metavar="SECONDS",
        help="the rate rule's window in seconds (default %(default)s)",
    )
    money.add_argument(
        "--worst-case-usage",
        action="store_true",
        help="bill every answer at the worst the provider could bill for what was sent "
        "(input at its byte bound, maxTokens of output): the money path's adversary",
    )
    money.add_argument("--pacing", choices=("on", "off"), help="release the day's ceiling "
                       "along a curve (steps/lib/money/pacing.py)")  # fmt: skip
    money.add_argument("--pacing-burst-share", metavar="SHARE", help="share released at 00:00")
    money.add_argument("--pacing-curve", metavar="W0,...,W23", help="24 hourly weights (UTC)")
    serve.add_argument(
        "--site-origin",
        action="append",
        metavar="ORIGIN",
        help="a site origin allowed to embed the widget cross-origin, e.g. "
        "https://www.example.com (repeatable; replaces cdk.json's site_origins)",
    )
    serve.set_defaults(func=run_serve)


def _model_overrides(args: argparse.Namespace) -> dict[str, Any]:
    model = getattr(args, "model", "offline")
    if model == "offline":
        given = [f"--{n}" for n in ("profile", "region", "guardrail") if getattr(args, n, None)]
        if given:
            raise CommandError(f"{', '.join(given)} need --model bedrock")
        return {}
    guardrail, _, version = (args.guardrail or "").partition(":")
    return {"model_backend": "bedrock", "guardrail_id": guardrail or None,
            "guardrail_version": version or None}  # fmt: skip


def settings_for(args: argparse.Namespace, **overrides: Any) -> Settings:
    """The command's settings, checked: the index must answer, the site must exist."""
    overrides = {**_model_overrides(args), **overrides}
    try:
        settings = local_settings(knowledge_dir=getattr(args, "knowledge", None), **overrides)
    except (SettingsError, ValueError, ArithmeticError) as exc:
        raise CommandError(str(exc)) from None
    from .preflight import knowledge_problem, pairing_problem, site_problem

    site = getattr(args, "site", None)
    region = getattr(args, "region", None)
    problem = (site and site_problem(site)) or knowledge_problem(settings, site, region)
    if problem:
        raise CommandError(problem)
    chosen = getattr(args, "knowledge", None) is not None
    problem, warning = pairing_problem(settings, site, region, chosen=chosen)
    if problem:
        raise CommandError(problem)
    if warning:
        print(warning, file=sys.stderr)
    return settings


def _one_line(command: Any) -> Any:
    """Run a command; a CommandError is its one line on stderr and exit code 2."""

    def run(args: argparse.Namespace) -> int:
        try:
            return int(command(args))
        except CommandError as exc:
            print(f"chatguard {args.command}: {exc}", file=sys.stderr)
            return EXIT_USAGE

    run.__doc__ = command.__doc__
    return run


def open_runtime(
    args: argparse.Namespace, settings: Settings, *, signing_key: str | None = None
) -> Any:
    """The local runtime; with --model bedrock, on the user's checked Bedrock access."""
    from local.engine.runtime import LocalRuntime

    if settings.model_backend != "bedrock":
        return LocalRuntime(settings, signing_key=signing_key)
    from local.engine.bedrock_access import BedrockSetupError, check_models, open_access

    try:
        access = open_access(args.profile, args.region, settings)
        check_models(access, settings)
    except BedrockSetupError as exc:
        raise CommandError(str(exc)) from None
    return LocalRuntime(settings, bedrock_client=access.runtime, signing_key=signing_key)


def backend_name(runtime: Any) -> str:
    region = runtime.bedrock_region
    return f"with Bedrock in {region}" if region else "offline"


@_one_line
def run_chat(args: argparse.Namespace) -> int:
    if args.server is not None:
        return _chat_with_server(args)
    from . import chat_session
    from .conversation import ConversationError, load, local_signing_key
    from .render import quiet_logs

    settings = settings_for(args)
    try:
        turns = load(args.history) if args.history else []
        key = local_signing_key() if args.history else None
    except ConversationError as exc:
        raise CommandError(str(exc)) from None
    with (
        quiet_logs(show_libraries=args.verbose, show_steps=args.verbose),
        open_runtime(args, settings, signing_key=key) as runtime,
    ):
        try:
            if args.message is None:
                return chat_session.session(runtime, args, turns)
            outcome, turns = chat_session.exchange(runtime, args, turns, args.message)
        except ConversationError as exc:  # the history file cannot be written
            raise CommandError(str(exc)) from None
    print(json.dumps(outcome.as_dict(), indent=2) if args.json else _shown(outcome))
    return 0 if outcome.status == 200 else 1


def _chat_with_server(args: argparse.Namespace) -> int:
    """One message to a running `serve`; nothing starts here (local/commands/remote_chat.py)."""
    from . import remote_chat

    problem = remote_chat.problem(args, DEFAULT_IP)
    if problem:
        raise CommandError(problem)
    try:
        status, body, ms = remote_chat.ask(args.server, args.message, args.page)
    except remote_chat.RemoteError as exc:
        raise CommandError(str(exc)) from None
    print(remote_chat.shown(args.server, status, body, ms, as_json=args.json))
    return 0 if status == 200 else 1


def _shown(outcome: Any) -> str:
    from .render import outcome_text

    return str(outcome_text(outcome))


@_one_line
def run_demo_command(args: argparse.Namespace) -> int:
    from local.engine.runtime import LocalRuntime

    from .demo import demo_settings, run_demo
    from .render import quiet_logs

    settings = settings_for(args)
    with (
        quiet_logs(show_libraries=args.verbose, show_steps=args.verbose),
        LocalRuntime(demo_settings(settings)) as runtime,
    ):
        outcomes = run_demo(runtime)
    expected = [403, 200, 200, 200, 503]
    return 0 if [o.status for o in outcomes] == expected else 1


@_one_line
def run_serve(args: argparse.Namespace) -> int:
    from local.server.listening import listen

    # The port first: a taken port is one line at once, not after the runtime's start.
    try:
        sock = listen((args.host, args.port))
    except OSError as exc:  # the port is taken, the host is not ours, ...
        raise CommandError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc} "
            "(choose another with --port, or 0 for any free port)"
        ) from None
    try:
        return _serve_on(sock, args)
    finally:
        sock.close()


def _serve_on(sock: Any, args: argparse.Namespace) -> int:
    from local.server.cors import OriginError, check_origins
    from local.server.routes import EdgeOptions, origins_line
    from local.server.uvicorn_server import ChatServer

    from .limits import summary
    from .preflight import index_permalinks
    from .render import message_lines, quiet_logs

    settings = settings_for(
        args,
        daily_ceiling_usd=args.daily_ceiling_usd,
        monthly_ceiling_usd=args.monthly_ceiling_usd,
        visitor_message_limit=args.visitor_message_limit,
        visitor_cost_share=args.visitor_cost_share,
        body_max_bytes=args.body_max_bytes,
        offline_usage="worst" if args.worst_case_usage else None,
        pacing=args.pacing, pacing_burst_share=args.pacing_burst_share,
        pacing_curve=args.pacing_curve,
    )  # fmt: skip
    origins = args.site_origin
    try:
        allowed = check_origins(
            edge_context().get("site_origins", []) if origins is None else origins
        )
    except OriginError as exc:
        raise CommandError(str(exc)) from None
    options = EdgeOptions(args.rate_limit, args.rate_window, args.trust_viewer_address, allowed)
    if args.host not in ("127.0.0.1", "::1", "localhost"):
        print("warning: serving beyond loopback; this server is for local use", file=sys.stderr)
    for line in summary(settings):
        print(line, file=sys.stderr)
    print(origins_line(allowed), file=sys.stderr)
    with (
        quiet_logs(show_libraries=False, show_steps=args.json_logs),
        message_lines(enabled=not (args.quiet or args.json_logs)),
        open_runtime(args, settings) as runtime,
    ):
        server = ChatServer(
            (args.host, args.port), runtime, options, site_dir=args.site, sock=sock,
            permalinks=index_permalinks(settings),  # the pages at the index's links
        )  # fmt: skip
        where = backend_name(runtime)
        print(f"chatguard serving {where} on {server.url} (Ctrl-C to stop)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            # uvicorn stopped gracefully, then re-raised the Ctrl-C: the shell's 130.
            print("chatguard serve: stopped", file=sys.stderr)
            return EXIT_INTERRUPTED
        finally:
            server.server_close()
    return 0
