"""`chatguard doctor`: after `make deploy`, test the cloud's side of every assumption.

The offline twin proves the code; it cannot prove what the account does. Each check here
asks the deployed account one question the stack's design depends on, with the operator's
credentials, and prints one line (PASS / FAIL / CANNOT TEST with why / NOT APPLICABLE) and,
when not passed, the fix in one line. Exit 1 on any FAIL.

The checks live by role beside this module (bedrock.py, latency.py, prices.py, roles.py,
message.py, alarm.py, subscribers.py, waf.py, account.py), each a small function over
injected clients (tested with Stubber); what they are told about the stack comes from
deployed.py. This module only runs them in order, turns an AWS refusal of the operator's
own read into CANNOT TEST, and renders.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ops.aws import Aws, OpsError, find_output, ledger_output, model_budget_name
from ops.http import Reply, request
from steps.lib.providers.model_ids import metering_for
from steps.lib.runtime.settings import Settings

from . import bedrock, deployed
from .account import BUDGET_NAME, LEDGER_NAME, budget_strings_billed, ledger_matches
from .alarm import alarm_reaches_topic
from .latency import NAME as LATENCY_NAME
from .latency import fits_read_timeout
from .message import NAME as MESSAGE_NAME
from .message import one_real_message, payload
from .notice import SPEND_NOTICE
from .prices import NAME as PRICES_NAME
from .prices import charges_no_more
from .result import Check, cannot_test
from .roles import NAME as ROLES_NAME
from .roles import Place, needs_of, roles_allow
from .subscribers import topic_tells_a_person
from .waf import NAME as WAF_NAME
from .waf import waf_blocks_answer_json
from .waf_cors import NAME as WAF_CORS_NAME
from .waf_cors import blocks_name_origins


def guarded(name: str, check: Callable[[], Check]) -> Check:
    """Run one check; the operator's own read refused or unreachable is CANNOT TEST."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return check()
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "Error"))
        said = f"AWS said {code}: {error.get('Message', '')}"
        if any(word in code for word in ("AccessDenied", "Unauthorized", "NotAuthorized")):
            return cannot_test(name, said, f"let your identity call {exc.operation_name}")
        return cannot_test(name, said, "check --profile, --region and --stack")
    except (BotoCoreError, OpsError, ValueError) as exc:
        return cannot_test(name, str(exc), "check --profile, --region and --stack")


def run(
    aws: Aws, *, knowledge_dir: Path, sleep: Callable[[float], None] = time.sleep
) -> Iterator[Check]:
    """Each check's result as soon as it is known (the alarm checks wait up to a minute)."""
    cloudformation, functions = aws.client("cloudformation"), aws.client("lambda")
    chat = deployed.discover(cloudformation, functions, aws.stack, aws.outputs())
    invoke, retrieve = chat.settings_of("Invoke"), chat.settings_of("Retrieve")
    if invoke is None or retrieve is None:
        raise OpsError(f"stack {aws.stack!r} has no Invoke or Retrieve step; pass --stack")
    runtime = aws.client("bedrock-runtime", region=chat.region)
    metering = metering_for(invoke, chat.region)  # the model catalogue's claim, checked here
    edge_stack = deployed.edge_stack_name(chat.region)
    done: dict[str, Check] = {}
    checks: list[tuple[str, Callable[[], Check]]] = [
        (LEDGER_NAME, lambda: _ledger(aws, chat)),
        # The real message first: a call the simulator refuses only for want of a key no
        # AWS page documents is settled by whether that message went through.
        (MESSAGE_NAME, lambda: _message(aws, chat, sleep)),
        (ROLES_NAME, lambda: _roles(aws, chat, done.get(MESSAGE_NAME))),
        (bedrock.MODEL, lambda: bedrock.model_answers(runtime, invoke)),
        (LATENCY_NAME, lambda: fits_read_timeout(runtime, invoke)),
        (bedrock.COUNT, lambda: bedrock.count_tokens_or_bytes(runtime, invoke, metering)),
        (PRICES_NAME, lambda: _prices(aws, invoke, chat.region)),
        (bedrock.GUARDRAIL, lambda: bedrock.guardrail_answers(runtime, invoke)),
        (bedrock.EMBEDDING, lambda: _embedding(runtime, retrieve, knowledge_dir)),
        (WAF_NAME, lambda: _waf(aws, chat)),
        (WAF_CORS_NAME, lambda: _waf_cors(aws, chat)),
        (BUDGET_NAME, lambda: _budget(aws, chat)),
        (_alarm_name(chat.stack), lambda: _chat_alarm(aws, chat, sleep)),
        (_alarm_name(edge_stack), lambda: _edge_alarm(aws, edge_stack, sleep)),
        (_people_name(chat.stack), lambda: _chat_people(aws, chat)),
        (_people_name(edge_stack), lambda: _edge_people(aws, edge_stack)),
    ]
    for name, check in checks:
        done[name] = guarded(name, check)
        yield done[name]


def _ledger(aws: Aws, chat: deployed.Deployed) -> Check:
    table = ledger_output(chat.outputs)
    return ledger_matches(aws.client("dynamodb", region=chat.region), table, chat.environments)


def _roles(aws: Aws, chat: deployed.Deployed, message: Check | None) -> Check:
    if not chat.roles:
        raise OpsError(f"stack {chat.stack!r}: no step function reports its role")
    # arn:<partition>:iam::<account>:role/...: where the deployed resources live.
    partition, account = next(iter(chat.roles.values())).split(":")[1::3]
    table = ledger_output(chat.outputs)
    steps = {state: s for state in chat.environments if (s := chat.settings_of(state))}
    invoke = steps.get("Invoke")
    guardrail = invoke.guardrail_id if invoke else ""
    place = Place(
        partition,
        chat.region,
        account,
        table_arn=f"arn:{partition}:dynamodb:{chat.region}:{account}:table/{table}",
        guardrail_arn=f"arn:{partition}:bedrock:{chat.region}:{account}:guardrail/{guardrail}"
        if guardrail
        else None,
    )
    iam = aws.client("iam", region=chat.region)
    went_through = message is not None and message.outcome == "PASS"
    return roles_allow(iam, chat.roles, needs_of(steps, place), went_through=went_through)


def _message(aws: Aws, chat: deployed.Deployed, sleep: Callable[[float], None]) -> Check:
    site, table = find_output(chat.outputs, "SiteUrl"), ledger_output(chat.outputs)
    if not site or not table:
        raise OpsError(f"stack {chat.stack!r} has no output SiteUrl or TableName")

    def send() -> Reply:
        return request("POST", site.rstrip("/") + "/chat", payload=payload(), timeout=60.0)

    dynamodb = aws.client("dynamodb", region=chat.region)
    xray = aws.client("xray", region=chat.region)
    return one_real_message(send, dynamodb=dynamodb, table=table, xray=xray, sleep=sleep)


def _prices(aws: Aws, invoke: Settings, region: str) -> Check:
    # The Price List API answers from us-east-1 (and ap-south-1), for every Region.
    return charges_no_more(aws.client("pricing", region=deployed.EDGE_REGION), invoke, region)


def _embedding(runtime: Any, retrieve: Settings, knowledge_dir: Path) -> Check:
    return bedrock.embedding_matches_index(runtime, retrieve, deployed.index_header(knowledge_dir))


def _waf(aws: Aws, chat: deployed.Deployed) -> Check:
    distribution = find_output(chat.outputs, "DistributionId")
    if not distribution:
        raise OpsError(f"stack {chat.stack!r} has no output DistributionId")
    cloudfront = aws.client("cloudfront", region=deployed.EDGE_REGION)
    arn = deployed.web_acl_arn(cloudfront, distribution)
    return waf_blocks_answer_json(aws.client("wafv2", region=deployed.EDGE_REGION), arn)


def _waf_cors(aws: Aws, chat: deployed.Deployed) -> Check:
    distribution = find_output(chat.outputs, "DistributionId")
    if not distribution:
        raise OpsError(f"stack {chat.stack!r} has no output DistributionId")
    cloudfront = aws.client("cloudfront", region=deployed.EDGE_REGION)
    wafv2 = aws.client("wafv2", region=deployed.EDGE_REGION)
    return blocks_name_origins(cloudfront, wafv2, distribution)


def _budget(aws: Aws, chat: deployed.Deployed) -> Check:
    account = aws.client("sts", region=chat.region).get_caller_identity()["Account"]
    ce = aws.client("ce", region=deployed.EDGE_REGION)  # both global, served in us-east-1
    budgets = aws.client("budgets", region=deployed.EDGE_REGION)
    return budget_strings_billed(ce, budgets, account, model_budget_name(aws))


def _alarm_name(stack: str) -> str:
    return f"alert topic takes a CloudWatch alarm ({stack})"


def _chat_alarm(aws: Aws, chat: deployed.Deployed, sleep: Callable[[float], None]) -> Check:
    cloudwatch = aws.client("cloudwatch", region=chat.region)
    topic = find_output(chat.outputs, "AlertTopicArn")
    return alarm_reaches_topic(
        cloudwatch, chat.alarms, name=_alarm_name(chat.stack), topic_arn=topic, sleep=sleep
    )


def _edge_alarm(aws: Aws, edge_stack: str, sleep: Callable[[float], None]) -> Check:
    """The edge stack (us-east-1) has its own topic: alarms publish in their own Region."""
    cloudformation = aws.client("cloudformation", region=deployed.EDGE_REGION)
    resources = deployed.stack_resources(cloudformation, edge_stack)
    alarms = deployed.physical_ids(resources, "AWS::CloudWatch::Alarm")
    cloudwatch = aws.client("cloudwatch", region=deployed.EDGE_REGION)
    return alarm_reaches_topic(cloudwatch, alarms, name=_alarm_name(edge_stack), sleep=sleep)


def _people_name(stack: str) -> str:
    return f"a person is subscribed to the alert topic ({stack})"


def _chat_people(aws: Aws, chat: deployed.Deployed) -> Check:
    topic = find_output(chat.outputs, "AlertTopicArn")
    if not topic:
        raise OpsError(f"stack {chat.stack!r} has no output AlertTopicArn")
    sns = aws.client("sns", region=chat.region)
    return topic_tells_a_person(sns, topic, name=_people_name(chat.stack))


def _edge_people(aws: Aws, edge_stack: str) -> Check:
    cloudformation = aws.client("cloudformation", region=deployed.EDGE_REGION)
    resources = deployed.stack_resources(cloudformation, edge_stack)
    (topic,) = deployed.physical_ids(resources, "AWS::SNS::Topic")  # a topic's id is its ARN
    sns = aws.client("sns", region=deployed.EDGE_REGION)
    return topic_tells_a_person(sns, topic, name=_people_name(edge_stack))


WIDTH = len("NOT APPLICABLE")


def render_one(c: Check) -> str:
    """The check's line, and below a FAIL or CANNOT TEST its fix."""
    line = f"{c.outcome:<{WIDTH}}  {c.name}: {c.detail}"
    if c.fix and c.outcome in ("FAIL", "CANNOT TEST"):
        line += f"\n{'':<{WIDTH}}  fix: {c.fix}"
    return line


def summary(checks: Sequence[Check]) -> str:
    counts = {o: sum(c.outcome == o for c in checks) for o in ("PASS", "FAIL", "CANNOT TEST")}
    return ", ".join(f"{n} {o.lower()}" for o, n in counts.items() if n) or "no checks"


def exit_code(checks: Sequence[Check]) -> int:
    return 1 if any(c.outcome == "FAIL" for c in checks) else 0


def _credentials_then_region(aws: Aws) -> None:
    """Refuse before the cost notice, credentials first: without them the Region is not
    the operator's first problem (a run used to ask for it, then for credentials)."""
    from botocore.exceptions import NoCredentialsError, NoRegionError

    if aws.session is None:
        import boto3

        aws.session = boto3.Session(profile_name=aws.profile, region_name=aws.region)
    if aws.session.get_credentials() is None:
        raise NoCredentialsError
    if not (aws.region or aws.session.region_name):
        raise NoRegionError


def command(args: argparse.Namespace) -> int:
    from ops.aws import ops_context

    region = args.region or ops_context().get("chat_region") or None
    aws = Aws(args.profile, region, args.stack)
    _credentials_then_region(aws)
    print(SPEND_NOTICE, flush=True)
    checks = []
    for check in run(aws, knowledge_dir=args.knowledge):
        print(render_one(check), flush=True)
        checks.append(check)
    print(summary(checks))
    return exit_code(checks)
