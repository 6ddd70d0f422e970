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
    chat.add_argument("message", help="what the visitor asks")
    chat.add_argument("--page", help="the site path the visitor is on, e.g. /posts/waf")
    chat.add_argument("--ip", default=DEFAULT_IP, help="the visitor's IP (default %(default)s)")
    chat.add_argument("--json", action="store_true", help="print {status, body, steps}")
    chat.add_argument("--verbose", action="store_true", help="show the steps' log lines")
    _add_runtime_options(chat)
    _add_model_options(chat)
    chat.set_defaults(func=run_chat)

    demo = sub.add_parser("demo", help="a scripted session where each layer refuses in turn")
    demo.add_argument("--verbose", action="store_true", help="show the steps' log lines")
    demo.add_argument(
        "--knowledge", type=Path, metavar="DIR", help="the index (default: build/knowledge)"
    )
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
    serve.add_argument("--quiet", action="store_true", help="no step log lines")
    _add_runtime_options(serve)
    _add_model_options(serve)
    money = serve.add_argument_group("limits (default: cdk.json)")
    money.add_argument("--daily-ceiling-usd", metavar="USD", help="hard cap on a day's spend")
    money.add_argument("--monthly-ceiling-usd", metavar="USD", help="hard cap on a month's")
    money.add_argument(
        "--visitor-message-limit",
        type=positive(int),
        metavar="N",
        help="messages per visitor per day",
    )
    money.add_argument(
        "--visitor-cost-share",
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
    from .preflight import knowledge_problem, site_problem

    site = getattr(args, "site", None)
    region = getattr(args, "region", None)
    problem = (site and site_problem(site)) or knowledge_problem(settings, site, region)
    if problem:
        raise CommandError(problem)
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


def open_runtime(args: argparse.Namespace, settings: Settings) -> Any:
    """The local runtime; with --model bedrock, on the user's checked Bedrock access."""
    from .runtime import LocalRuntime

    if settings.model_backend != "bedrock":
        return LocalRuntime(settings)
    from .bedrock_access import BedrockSetupError, check_models, open_access

    try:
        access = open_access(args.profile, args.region, settings)
        check_models(access, settings)
    except BedrockSetupError as exc:
        raise CommandError(str(exc)) from None
    return LocalRuntime(settings, bedrock_client=access.runtime)


def backend_name(runtime: Any) -> str:
    region = runtime.bedrock_region
    return f"with Bedrock in {region}" if region else "offline"


@_one_line
def run_chat(args: argparse.Namespace) -> int:
    from .edge import EdgeRefusal, parse_body
    from .render import outcome_text, quiet_logs
    from .runtime import Outcome

    settings = settings_for(args)
    request: dict[str, Any] = {"message": args.message}
    if args.page:
        request["page"] = args.page
    with (
        quiet_logs(show_libraries=args.verbose, show_steps=args.verbose),
        open_runtime(args, settings) as runtime,
    ):
        try:
            body = parse_body(json.dumps(request).encode(), runtime.settings)
            outcome = runtime.send(body, ip=args.ip)
        except EdgeRefusal as refusal:  # what API Gateway's validator would answer
            outcome = Outcome(refusal.status, {"error": refusal.message}, ())
    print(json.dumps(outcome.as_dict(), indent=2) if args.json else outcome_text(outcome))
    return 0 if outcome.status == 200 else 1


@_one_line
def run_demo_command(args: argparse.Namespace) -> int:
    from .demo import demo_settings, run_demo
    from .render import quiet_logs
    from .runtime import LocalRuntime

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
    from .cors import OriginError, check_origins
    from .limits import summary
    from .render import quiet_logs
    from .routes import EdgeOptions
    from .server import ChatServer

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
    with (
        quiet_logs(show_libraries=False, show_steps=not args.quiet),
        open_runtime(args, settings) as runtime,
    ):
        try:
            server = ChatServer((args.host, args.port), runtime, options, site_dir=args.site)
        except OSError as exc:  # the port is taken, the host is not ours, ...
            raise CommandError(
                f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
            ) from None
        where = backend_name(runtime)
        print(f"chatguard serving {where} on {server.url} (Ctrl-C to stop)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass  # uvicorn stopped gracefully, then re-raised the Ctrl-C
        finally:
            server.server_close()
    return 0
