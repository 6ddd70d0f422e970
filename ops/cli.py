"""The operator's commands: spend, mode, rotate, billing-services, traces, trace, verify,
enable-model, doctor.

Each works against AWS (the usual credential chain, ``--profile``, ``--region``,
``--stack``) or, where it makes sense offline, against a local server (``--local URL``,
through its loopback-only ``/_admin/*`` routes). The logic lives in the sibling modules and
takes clients as arguments; this file only parses, picks the backend and prints. Each
command imports its module when it runs: building `chatguard`'s parser (for `chat` too)
imports none of them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ops.doctor import arguments as doctor_cli
from steps.lib.runtime.settings import edge_context

from .aws import (
    DEFAULT_STACK,
    Aws,
    OpsError,
    api_chat_url,
    model_budget_name,
    ops_context,
    project_settings,
    table_name,
)
from .secret_params import PARAMETERS

if TYPE_CHECKING:
    from . import verify

EXIT_FAILED = 1  # a check failed or a warning needs attention
EXIT_ERROR = 2  # the command could not run


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add the operator subcommands to `chatguard`."""
    aws_only = argparse.ArgumentParser(add_help=False)
    where = aws_only.add_argument_group("where")
    where.add_argument("--profile", help="AWS profile (default: the usual credential chain)")
    where.add_argument("--region", help="AWS region of the chat stack")
    where.add_argument("--stack", default=DEFAULT_STACK, help="stack whose outputs to read")
    # Commands that take --local: spend, mode, rotate and verify run against either side,
    # `trace last` reads a local server only, and enable-model refuses it in one line (it
    # calls Bedrock). billing-services and traces read AWS only.
    common = argparse.ArgumentParser(add_help=False, parents=[aws_only])
    common.add_argument("--local", metavar="URL", help="a local `chatguard serve` instead of AWS")
    local_only = argparse.ArgumentParser(add_help=False)
    local_only.add_argument(
        "--local", metavar="URL", required=True, help="the local `chatguard serve` to read"
    )

    p = sub.add_parser(
        "spend", parents=[common], help="totals beside ceilings, reservations, top visitors"
    )
    p.add_argument("--day", help="UTC day YYYY-MM-DD (default today)")
    p.add_argument("--month", help="month YYYY-MM (default the day's month)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_guard(cmd_spend))

    p = sub.add_parser("mode", parents=[common], help="show or set the operator switch")
    p.add_argument(
        "mode",
        nargs="?",
        choices=("normal", "degraded", "off"),
        help="the new mode, from the next message (leave it out to show the current one)",
    )
    p.set_defaults(func=_guard(cmd_mode))

    p = sub.add_parser("rotate", parents=[common], help="rotate a secret with overlap")
    p.add_argument("secret", choices=tuple(PARAMETERS), help="which secret to rotate")
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    p.add_argument("--force", action="store_true", help="rotate even inside the previous overlap")
    p.add_argument("--distribution-id", help="CloudFront distribution (default: stack output)")
    p.add_argument("--no-wait", action="store_true", help="skip the secret-cache wait (unsafe)")
    p.set_defaults(func=_guard(cmd_rotate))

    p = sub.add_parser(
        "billing-services", parents=[aws_only], help="where model spend lands on the bill"
    )
    p.add_argument(
        "--budget-name", help="the filtered budget (default: <stack>-<region>-model-monthly)"
    )
    p.set_defaults(func=_guard(cmd_billing))

    p = sub.add_parser("traces", parents=[aws_only], help="X-Ray traces filtered on step/decision")
    p.add_argument("--since", default="1h", help="look back this long (e.g. 30m, 1h; max 24h)")
    p.add_argument("--decision", help="only traces with this decision (e.g. degraded, limited)")
    p.add_argument("--step", help="only traces through this step (e.g. CostGate)")
    p.add_argument("--trace-id", help="the trace to draw (default: the newest match)")
    p.set_defaults(func=_guard(cmd_traces))

    p = sub.add_parser(
        "trace", parents=[local_only], help="waterfall of the last local request (on AWS: traces)"
    )
    p.add_argument("which", choices=("last",), help="the request to draw")
    p.set_defaults(func=_guard(cmd_trace_last))

    p = sub.add_parser(
        "enable-model",
        parents=[aws_only],
        help="once per account: the first model call, with your credentials",
    )
    p.set_defaults(func=_guard(cmd_enable_model))

    p = sub.add_parser("verify", parents=[common], help="re-test a deployment's defenses")
    p.add_argument("url", nargs="?", help="the site's public URL (default: stack output SiteUrl)")
    p.add_argument("--origin-url", help="the API Gateway stage URL (default: from output ApiId)")
    p.add_argument("--burst", type=int, help="most requests for the rate-rule check")
    p.set_defaults(func=_guard(cmd_verify))

    doctor_cli.register(sub, parents=[aws_only], guard=_guard)


def cmd_spend(args: argparse.Namespace) -> int:
    from . import spend

    day = args.day or spend.today()
    spend.check_period(day, args.month)
    if args.local:
        report = _admin(args.local, "POST", "/_admin/spend", {"day": day, "month": args.month})
    else:
        aws, s = Aws(args.profile, args.region, args.stack), project_settings()
        report = spend.collect(
            aws.client("dynamodb"), table_name(aws), s, day=day, month=args.month
        )
    print(json.dumps(report, indent=2) if args.json else spend.render(report))  # type: ignore[arg-type]
    return 0


def cmd_mode(args: argparse.Namespace) -> int:
    from . import mode

    if args.local:
        if args.mode is None:
            print("mode: " + _admin(args.local, "GET", "/_admin/mode")["mode"])
            return 0
        print(mode.render(_admin(args.local, "POST", "/_admin/mode", {"mode": args.mode})))  # type: ignore[arg-type]
        return 0
    aws = Aws(args.profile, args.region, args.stack)
    client, name = aws.client("dynamodb"), table_name(aws)
    if args.mode is None:
        print("mode: " + mode.read(client, name))
    else:
        print(mode.render(mode.write(client, name, args.mode)))
    return 0


def cmd_rotate(args: argparse.Namespace) -> int:
    from . import rotate

    if args.local:
        body = {"secret": args.secret, "dry_run": args.dry_run, "force": args.force}
        print(rotate.render(_admin(args.local, "POST", "/_admin/rotate", body)))
        return 0
    aws, s = Aws(args.profile, args.region, args.stack), project_settings()
    edge = None
    if args.secret == "origin-secret":
        distribution = args.distribution_id or aws.output("DistributionId")
        edge = rotate.CloudFrontEdge(
            aws.client("cloudfront", region="us-east-1"),
            distribution,
            wait_seconds=0 if args.no_wait else s.secret_cache_seconds,
            sleep=time.sleep,
        )
    result = rotate.run(
        aws.client("ssm"),
        args.secret,
        s,
        now=time.time(),
        dry_run=args.dry_run,
        force=args.force,
        edge=edge,
    )
    print(rotate.render(result))
    return 0


def cmd_billing(args: argparse.Namespace) -> int:
    from . import billing

    aws = Aws(args.profile, args.region, args.stack)
    start, end, totals = billing.costs_by_service(aws.client("ce", region="us-east-1"))
    covered, source = _budget_filter(aws, args.budget_name)
    result = billing.report(start, end, totals, covered, source)
    print(billing.render(result))
    return EXIT_FAILED if result["missing"] else 0


def cmd_traces(args: argparse.Namespace) -> int:
    from . import traces, waterfall

    aws = Aws(args.profile, args.region, args.stack)
    xray = aws.client("xray")
    expression = traces.filter_expression(decision=args.decision, step=args.step)
    found = traces.summaries(xray, since=traces.parse_since(args.since), expression=expression)
    print(
        f"{len(found)} traces in the last {args.since}"
        + (f" where {expression}" if expression else "")
    )
    print(traces.render_summaries(found))
    trace_id = args.trace_id or (found[0]["Id"] if found else None)
    if trace_id:
        print()
        print(waterfall.render(traces.trace_spans(xray, trace_id), title=f"trace {trace_id}"))
    return 0


def cmd_trace_last(args: argparse.Namespace) -> int:
    from . import waterfall

    result = _admin(args.local, "GET", "/_admin/trace/last")
    keys = ("depth", "name", "start_ms", "ms", "note")
    spans = [waterfall.Span(**{k: span[k] for k in keys}) for span in result.get("spans", [])]
    status, ms = result.get("status", "?"), float(result.get("ms", 0))
    title = f"request {result.get('request_id', '?')}: {status} in {ms:.1f} ms"
    print(waterfall.render(spans, title=title) if result.get("request_id") else "no request yet")
    return 0


def cmd_enable_model(args: argparse.Namespace) -> int:
    from . import first_call

    s = project_settings()
    region = args.region or ops_context().get("chat_region") or None
    aws = Aws(args.profile, region, args.stack)
    print(f"one Converse call to {s.model_id}, at most {first_call.MAX_TOKENS} output token")
    result = first_call.call(aws.client("bedrock-runtime"), s.model_id)
    print(first_call.render(result, s))
    return 0 if result.ok else EXIT_FAILED


def cmd_verify(args: argparse.Namespace) -> int:
    from . import verify

    target = _verify_target(args)
    blocker = verify.blocker(target)
    if blocker is not None:
        print(f"chatguard verify: {blocker}", file=sys.stderr)
        return verify.EXIT_INCOMPLETE
    print(verify.spend_notice(target), flush=True)
    checks = verify.run(target)
    print(verify.render(checks))
    return verify.exit_code(checks, EXIT_FAILED)


def _verify_target(args: argparse.Namespace) -> verify.Target:
    from steps.lib.money.pricing import largest_reserve_micros

    from . import verify

    s = project_settings()
    limit = int(edge_context().get("waf_rate_limit", 20))
    if args.local:
        base = args.local.rstrip("/")
        return verify.Target(
            base + "/chat", base + "/_origin/chat", args.burst or 3 * limit, 0.0,
            _local_reserve(base, s), admin_url=base + "/_admin",
        )  # fmt: skip
    aws = Aws(args.profile, args.region, args.stack)
    edge = _chat_url(args.url or aws.output("SiteUrl"))
    origin = _chat_url(args.origin_url) if args.origin_url else api_chat_url(aws)
    # WAF counts per window and acts within tens of seconds: spread the burst over ~90 s.
    return verify.Target(edge, origin, args.burst or 3 * limit, 90.0, largest_reserve_micros(s))


def _chat_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/chat") else base + "/chat"


def _local_reserve(base: str, s: Any) -> int:
    """The local server's own worst case per message (its ceilings may differ from cdk.json)."""
    from steps.lib.money.pricing import largest_reserve_micros

    try:
        return int(_admin(base, "GET", "/_admin/spend")["reserve_micros"])
    except (OpsError, OSError, KeyError, ValueError):
        return largest_reserve_micros(s)


def _budget_filter(aws: Aws, budget_name: str | None) -> tuple[list[str], str]:
    """The deployed budget's filter; cdk.json's list only when no budget is deployed."""
    from botocore.exceptions import ClientError

    from . import billing

    name = budget_name or model_budget_name(aws)
    account = aws.client("sts").get_caller_identity()["Account"]
    budgets = aws.client("budgets", region="us-east-1")
    try:
        return billing.budget_services(budgets, account, name), f"budget {name}"
    except ClientError as exc:
        if budget_name or exc.response.get("Error", {}).get("Code") != "NotFoundException":
            raise
    services = list(ops_context().get("billing_services", []))
    return services, f'cdk.json "chatguard/ops" billing_services (no budget {name})'


def _admin(base: str, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    from .http import request

    reply = request(method, base.rstrip("/") + path, payload=body)
    if reply.status != 200 or reply.body is None:
        raise OpsError(f"{method} {path} answered {reply.status}: {reply.error or 'no JSON body'}")
    return reply.body


def _guard(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn the errors an operator can fix into one clear line and exit code 2."""

    def run(args: argparse.Namespace) -> int:
        import urllib.error

        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            NoCredentialsError,
            NoRegionError,
        )

        from .mode import ModeError
        from .rotate import RotationRefused

        try:
            return command(args)
        except NoCredentialsError:
            print(
                f"chatguard {args.command}: no AWS credentials: run `aws configure` or "
                "`aws sso login`, or pass --profile NAME",
                file=sys.stderr,
            )
        except NoRegionError:
            offline = " (or --local URL for a local server)" if "local" in args else ""
            print(
                f"chatguard {args.command}: no AWS Region: pass --region REGION or set "
                f"AWS_REGION{offline}",
                file=sys.stderr,
            )
        except (OpsError, RotationRefused, ModeError, ValueError, LookupError) as exc:
            print(f"chatguard {args.command}: {exc}", file=sys.stderr)
        except (ClientError, BotoCoreError) as exc:
            print(f"chatguard {args.command}: AWS said: {exc}", file=sys.stderr)
        except OSError as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            where = getattr(args, "local", None)
            fix = (
                f"is `chatguard serve` running at {where}? Start it, or fix the --local URL"
                if where
                else "check the URL and your network"
            )
            print(f"chatguard {args.command}: cannot reach the server ({reason}): {fix}",
                  file=sys.stderr)  # fmt: skip
        return EXIT_ERROR

    return run
