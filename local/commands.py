"""`chatguard chat`, `chatguard demo` and `chatguard serve`: the offline runtime's commands."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ops.aws import edge_context
from steps.lib.errors import ChatguardError, SettingsError
from steps.lib.settings import ENV_PREFIX, Settings, cdk_context

DEFAULT_IP = "192.0.2.1"  # a documentation address: the local visitor


def local_settings(**overrides: Any) -> Settings:
    """The project's settings (cdk.json), then CHATGUARD_* environment variables, then the
    command line; always answered by the offline model stand-ins."""
    from_cdk = {ENV_PREFIX + k.upper(): str(v) for k, v in cdk_context()["chatguard"].items()}
    base = Settings.from_env({**from_cdk, **os.environ})
    chosen = {k: v for k, v in overrides.items() if v is not None}
    return base.replace(model_backend="offline", **chosen)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add chat, demo and serve to `chatguard`."""
    chat = sub.add_parser("chat", help="send one message through the whole state machine")
    chat.add_argument("message")
    chat.add_argument("--page", help="the site path the visitor is on, e.g. /posts/waf")
    chat.add_argument("--ip", default=DEFAULT_IP, help="the visitor's IP (default %(default)s)")
    chat.add_argument("--json", action="store_true", help="print {status, body, steps}")
    chat.add_argument("--verbose", action="store_true", help="show the steps' log lines")
    chat.set_defaults(func=run_chat)

    demo = sub.add_parser("demo", help="a scripted session where each layer refuses in turn")
    demo.add_argument("--verbose", action="store_true", help="show the steps' log lines")
    demo.set_defaults(func=run_demo_command)

    serve = sub.add_parser("serve", help="serve the chat API and demo site on loopback")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8787)
    serve.add_argument(
        "--trust-viewer-address",
        action="store_true",
        help="LOCAL ONLY: take the visitor from a CloudFront-Viewer-Address header",
    )
    serve.add_argument("--daily-ceiling-usd")
    serve.add_argument("--monthly-ceiling-usd")
    serve.add_argument("--visitor-message-limit", type=int)
    serve.add_argument("--body-max-bytes", type=int)
    edge = edge_context()
    serve.add_argument(
        "--rate-limit",
        type=int,
        default=int(edge.get("waf_rate_limit", 20)),
        help="requests per address per window at the edge (default %(default)s)",
    )
    serve.add_argument(
        "--rate-window",
        type=float,
        default=float(edge.get("waf_window_seconds", 120)),
        help="the rate rule's window in seconds (default %(default)s)",
    )
    serve.add_argument("--quiet", action="store_true", help="no step log lines")
    serve.set_defaults(func=run_serve)


def index_problem(settings: Settings) -> str | None:
    """Why the bundled index cannot serve this runtime (one line), or None."""
    from steps.lib import knowledge, models

    try:
        knowledge.load_knowledge(
            settings.knowledge_dir, embedder=models.query_embedder(settings).id
        )
    except ChatguardError as exc:
        return str(exc)
    return None


def run_chat(args: argparse.Namespace) -> int:
    from .edge import EdgeRefusal, parse_body
    from .render import outcome_text, quiet_logs
    from .runtime import LocalRuntime, Outcome

    request: dict[str, Any] = {"message": args.message}
    if args.page:
        request["page"] = args.page
    with (
        quiet_logs(show_libraries=args.verbose, show_steps=args.verbose),
        LocalRuntime(local_settings()) as runtime,
    ):
        try:
            body = parse_body(json.dumps(request).encode(), runtime.settings)
            outcome = runtime.send(body, ip=args.ip)
        except EdgeRefusal as refusal:  # what API Gateway's validator would answer
            outcome = Outcome(refusal.status, {"error": refusal.message}, ())
    print(json.dumps(outcome.as_dict(), indent=2) if args.json else outcome_text(outcome))
    return 0 if outcome.status == 200 else 1


def run_demo_command(args: argparse.Namespace) -> int:
    from .demo import demo_settings, run_demo
    from .render import quiet_logs
    from .runtime import LocalRuntime

    with (
        quiet_logs(show_libraries=args.verbose, show_steps=args.verbose),
        LocalRuntime(demo_settings(local_settings())) as runtime,
    ):
        outcomes = run_demo(runtime)
    expected = [403, 200, 200, 200, 503]
    return 0 if [o.status for o in outcomes] == expected else 1


def run_serve(args: argparse.Namespace) -> int:
    from .render import quiet_logs
    from .runtime import LocalRuntime
    from .server import ChatServer, EdgeOptions

    try:
        settings = local_settings(
            daily_ceiling_usd=args.daily_ceiling_usd,
            monthly_ceiling_usd=args.monthly_ceiling_usd,
            visitor_message_limit=args.visitor_message_limit,
            body_max_bytes=args.body_max_bytes,
        )
        options = EdgeOptions(args.rate_limit, args.rate_window, args.trust_viewer_address)
    except (SettingsError, ValueError) as exc:
        print(f"chatguard serve: {exc}", file=sys.stderr)
        return 2
    problem = index_problem(settings)
    if problem:  # said once, at start, rather than as a 503 on every message
        print(f"chatguard serve: {problem}", file=sys.stderr)
        return 2
    if args.host not in ("127.0.0.1", "::1", "localhost"):
        print("warning: serving beyond loopback; this server is for local use", file=sys.stderr)
    with (
        quiet_logs(show_libraries=False, show_steps=not args.quiet),
        LocalRuntime(settings) as runtime,
    ):
        try:
            server = ChatServer((args.host, args.port), runtime, options)
        except OSError as exc:  # the port is taken, the host is not ours, ...
            print(
                f"chatguard serve: cannot listen on {args.host}:{args.port}: {exc.strerror}",
                file=sys.stderr,
            )
            return 2
        print(f"chatguard serving offline on {server.url} (Ctrl-C to stop)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
    return 0
