"""`chatguard doctor` end to end on a stubbed account: what it reads from the deployed stack,
the order of its checks, one line each, and the exit code."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import ANY, Stubber

from chatguard.cli import main
from ops.aws import Aws

from . import doctor_accounts as acct
from .conftest import distribution_config

STACK = "ChatguardChat"
EDGE = "ChatguardEdge-eu-west-1"
TABLE = "ChatguardChat-LedgerTable1A2B-XYZ"
EDGE_ALARM = "ChatguardEdge-eu-west-1-RateBlocked-XYZ"
ROLE = f"arn:aws:iam::{acct.ACCOUNT}:role/ChatguardChat-{{step}}Role-XYZ"
EDGE_TOPIC = f"arn:aws:sns:us-east-1:{acct.ACCOUNT}:ChatguardEdge-eu-west-1-AlertsTopic-XYZ"
STEPS = ("OriginVerify", "Quota", "CostGate", "Retrieve", "Invoke", "Reconcile", "Degraded")
ENV = {
    "Quota": {"CHATGUARD_TABLE_NAME": TABLE},
    "CostGate": {"CHATGUARD_TABLE_NAME": TABLE, "CHATGUARD_MODEL_BACKEND": "bedrock"},
    "Reconcile": {"CHATGUARD_TABLE_NAME": TABLE},
    "Retrieve": {"CHATGUARD_MODEL_BACKEND": "bedrock", "CHATGUARD_EMBEDDING_DIMENSIONS": "1024"},
    "Invoke": {
        "CHATGUARD_MODEL_BACKEND": "bedrock",
        "CHATGUARD_MODEL_ID": acct.MODEL,
        "CHATGUARD_GUARDRAIL_ID": "gr-abc123",
        "CHATGUARD_GUARDRAIL_VERSION": "1",
        "POWERTOOLS_SERVICE_NAME": "chatguard",  # not a setting: ignored
    },
}


def _resource(logical: str, kind: str, physical: str) -> dict[str, Any]:
    return {
        "LogicalResourceId": logical,
        "PhysicalResourceId": physical,
        "ResourceType": kind,
        "LastUpdatedTimestamp": acct.LAST_CHANGE,
        "ResourceStatus": "CREATE_COMPLETE",
    }


CHAT_RESOURCES = [
    *(_resource(f"{s}Function1A2B3C4D", "AWS::Lambda::Function", f"fn-{s}") for s in STEPS),
    _resource("SecretsProviderFunction", "AWS::Lambda::Function", "fn-secrets"),
    _resource("InvokeAlarmsErrors", "AWS::CloudWatch::Alarm", acct.ALARM),
]
OUTPUTS = {
    "SiteUrl": "https://d111111abcdef8.cloudfront.net",
    "TableName": TABLE,
    "DistributionId": "E2EXAMPLE",
    "AlertTopicArn": acct.TOPIC,
    "ModelBudgetName": "ChatguardChat-eu-west-1-model-monthly",
}


def _alarm(stub: Stubber, name: str, summary: str) -> None:
    stub.add_response("describe_alarms", {"MetricAlarms": [acct.metric_alarm(name)]})
    stub.add_response("set_alarm_state", {})
    item = {**acct.action_item(summary), "AlarmName": name}
    stub.add_response("describe_alarm_history", {"AlarmHistoryItems": [item]})
    stub.add_response("set_alarm_state", {})


def _restubbed(stubs: dict[tuple[str, str], Stubber], service: str) -> Stubber:
    """A fresh Stubber on one us-east-1 client, replacing the one _account filled."""
    old = stubs[service, "us-east-1"]
    old.deactivate()
    stub = stubs[service, "us-east-1"] = Stubber(old.client)
    stub.activate()
    return stub


def _account(stubs: dict[tuple[str, str], Stubber], chat_alarm: str) -> None:
    """A deployed stack; every answer healthy except the chat alarm's action summary."""
    us = "us-east-1"
    cfn = stubs["cloudformation", acct.REGION]
    stack = {"StackName": STACK, "CreationTime": acct.LAST_CHANGE, "StackStatus": "UPDATE_COMPLETE"}
    outputs = [{"OutputKey": k, "OutputValue": v} for k, v in OUTPUTS.items()]
    cfn.add_response("describe_stacks", {"Stacks": [{**stack, "Outputs": outputs}]})
    cfn.add_response("list_stack_resources", {"StackResourceSummaries": CHAT_RESOURCES})
    for step in STEPS:
        variables = ENV.get(step, {})
        stubs["lambda", acct.REGION].add_response(
            "get_function_configuration",
            {"Environment": {"Variables": variables}, "Role": ROLE.format(step=step)},
            {"FunctionName": f"fn-{step}"},
        )
    stubs["dynamodb", acct.REGION].add_response(
        "describe_table", {"Table": {"TableStatus": "ACTIVE"}}, {"TableName": TABLE}
    )
    for stub, answer in _real_message():
        stub_for = stubs[stub, acct.REGION]
        stub_for.add_response(*answer)
    for need in _role_needs():
        result = {"EvalActionName": need.action, "EvalDecision": "allowed"}
        stubs["iam", acct.REGION].add_response(
            "simulate_principal_policy",
            {"EvaluationResults": [result]},
            {
                "PolicySourceArn": ROLE.format(step=need.step),
                "ActionNames": [need.action],
                "ResourceArns": [need.resource],
                "ContextEntries": ANY,
            },
        )
    runtime = stubs["bedrock-runtime", acct.REGION]
    runtime.add_response("converse", acct.CONVERSE_ANSWER)
    from .test_doctor_latency import converse_answer

    runtime.add_response("converse", converse_answer(512))  # a full-length reply, timed
    # Haiku 4.5 (the default) is metered by bytes: the catalogue says CountTokens does not
    # answer for it, so doctor passes that check without a call.
    from .test_doctor_prices import full_list

    prices = {"PriceList": full_list(), "FormatVersion": "aws_v1"}
    stubs["pricing", us].add_response("get_products", prices)
    runtime.add_response("apply_guardrail", acct.GUARDRAIL_PASSES)
    runtime.add_response("invoke_model", acct.titan_answer(1024))
    config = {**distribution_config("a" * 43), "WebACLId": acct.ACL_ARN}
    stubs["cloudfront", us].add_response(
        "get_distribution_config", {"DistributionConfig": config}, {"Id": "E2EXAMPLE"}
    )
    stubs["wafv2", us].add_response("get_web_acl", acct.web_acl(acct.OUR_RULES))
    # Same-origin (no /chat CORS policy): the blocks-name-origins check is not applicable.
    stubs["cloudfront", us].add_response(
        "get_distribution_config", {"DistributionConfig": config}, {"Id": "E2EXAMPLE"}
    )
    stubs["sts", acct.REGION].add_response("get_caller_identity", {"Account": acct.ACCOUNT})
    billed = ["Amazon Bedrock", acct.MARKETPLACE]
    stubs["budgets", us].add_response("describe_budget", acct.budget(billed))
    stubs["ce", us].add_response("get_cost_and_usage", acct.cost_groups(*billed))
    _alarm(stubs["cloudwatch", acct.REGION], acct.ALARM, chat_alarm)
    edge = [
        _resource("RateBlockedAlarm", "AWS::CloudWatch::Alarm", EDGE_ALARM),
        _resource("AlertsTopic", "AWS::SNS::Topic", EDGE_TOPIC),
    ]
    stubs["cloudformation", us].add_response(
        "list_stack_resources", {"StackResourceSummaries": edge}, {"StackName": EDGE}
    )
    _alarm(stubs["cloudwatch", us], EDGE_ALARM, acct.DELIVERED)
    _subscribed(stubs["sns", acct.REGION], acct.TOPIC)
    stubs["cloudformation", us].add_response(
        "list_stack_resources", {"StackResourceSummaries": edge}, {"StackName": EDGE}
    )
    _subscribed(stubs["sns", us], EDGE_TOPIC)


def _real_message() -> list[tuple[str, tuple[str, dict[str, Any]]]]:
    """The ledger's and X-Ray's answers for doctor's one real message (tests/ops/
    test_doctor_message.py has its cases)."""
    from .test_doctor_message import DECISIONS, reservation, trace

    return [
        ("dynamodb", ("update_item", reservation("settled"))),
        ("xray", ("batch_get_traces", trace(DECISIONS))),
    ]


def _role_needs() -> list[Any]:
    from ops.doctor.roles import Place, needs_of
    from steps.lib.runtime.settings import Settings

    table = f"arn:aws:dynamodb:{acct.REGION}:{acct.ACCOUNT}:table/{TABLE}"
    guardrail = f"arn:aws:bedrock:{acct.REGION}:{acct.ACCOUNT}:guardrail/gr-abc123"
    steps = {step: Settings.from_env(ENV.get(step, {})) for step in STEPS}
    return needs_of(steps, Place("aws", acct.REGION, acct.ACCOUNT, table, guardrail))


def _subscribed(stub: Stubber, topic: str) -> None:
    confirmed = {"SubscriptionArn": f"{topic}:0a1b2c3d", "Protocol": "email", "TopicArn": topic}
    stub.add_response(
        "list_subscriptions_by_topic", {"Subscriptions": [confirmed]}, {"TopicArn": topic}
    )


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch):
    """Aws.client hands out one stubbed client per (service, Region)."""
    clients: dict[tuple[str, str], Any] = {}
    stubs: dict[tuple[str, str], Stubber] = {}

    def client(self: Aws, service: str, *, region: str | None = None) -> Any:
        key = (service, region or self.region or acct.REGION)
        if key not in clients:
            clients[key] = acct.client(*key)
            stubs[key] = Stubber(clients[key])
            stubs[key].activate()
        return clients[key]

    monkeypatch.setattr(Aws, "client", client)
    # The account's stand-in has credentials: doctor refuses before any check without them.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    # The one real message: the site answers as a deployed chat does (no network).
    from .test_doctor_message import ANSWER

    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(
        "ops.doctor.command.request", lambda method, url, **kw: sent.append((method, url)) or ANSWER
    )
    for service, region in [
        ("cloudformation", acct.REGION), ("lambda", acct.REGION), ("dynamodb", acct.REGION),
        ("bedrock-runtime", acct.REGION), ("cloudfront", "us-east-1"), ("wafv2", "us-east-1"),
        ("sts", acct.REGION), ("budgets", "us-east-1"), ("ce", "us-east-1"),
        ("cloudwatch", acct.REGION), ("cloudformation", "us-east-1"), ("cloudwatch", "us-east-1"),
        ("sns", acct.REGION), ("sns", "us-east-1"), ("iam", acct.REGION), ("xray", acct.REGION),
        ("pricing", "us-east-1"),
    ]:  # fmt: skip
        client(Aws(), service, region=region)
    with ExitStack() as stack:
        for stub in stubs.values():
            stack.callback(stub.deactivate)
        yield stubs


def _titan_index(tmp_path: Path) -> Path:
    header = {"embedder": {"id": "bedrock:amazon.titan-embed-text-v2:0:1024", "dimensions": 1024}}
    (tmp_path / "knowledge.json").write_text(json.dumps(header))
    return tmp_path


def _doctor(tmp_path: Path) -> list[str]:
    return ["doctor", "--region", acct.REGION, "--knowledge", str(_titan_index(tmp_path))]


def test_a_healthy_deployment_passes_every_check(stubbed, tmp_path, capsys):
    _account(stubbed, acct.DELIVERED)
    code = main(_doctor(tmp_path))
    out = capsys.readouterr().out
    for stub in stubbed.values():
        stub.assert_no_pending_responses()
    assert code == 0, out
    checks = [line for line in out.splitlines() if line.startswith("PASS")]
    assert len(checks) == 15, out
    assert "15 pass" in out and "fix:" not in out


def test_a_topic_that_refuses_cloudwatch_fails_the_run_with_its_fix(stubbed, tmp_path, capsys):
    _account(stubbed, acct.NOT_AUTHORIZED)
    code = main(_doctor(tmp_path))
    out = capsys.readouterr().out
    assert code == 1
    failing = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert len(failing) == 1 and f"({STACK})" in failing[0] and "not authorized" in failing[0]
    assert "fix: let cloudwatch.amazonaws.com publish to the topic" in out
    assert "14 pass, 1 fail" in out


def test_a_read_the_operator_may_not_make_cannot_test_and_does_not_fail(stubbed, tmp_path, capsys):
    _account(stubbed, acct.DELIVERED)
    waf = _restubbed(stubbed, "wafv2")
    waf.add_client_error("get_web_acl", "WAFNonexistentItemException", "no such web ACL")
    code = main(_doctor(tmp_path))
    out = capsys.readouterr().out
    assert code == 0
    assert "CANNOT TEST     WAF blocks answer JSON: AWS said WAFNonexistentItemException" in out
    assert "fix: check --profile, --region and --stack" in out


def test_a_refused_read_names_the_call_to_allow(stubbed, tmp_path, capsys):
    _account(stubbed, acct.DELIVERED)
    ce = _restubbed(stubbed, "ce")
    ce.add_client_error("get_cost_and_usage", "AccessDeniedException", "not authorized", 403)
    assert main(_doctor(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "CANNOT TEST     budget service strings in Cost Explorer: AWS said AccessDenied" in out
    assert "fix: let your identity call GetCostAndUsage" in out


def test_a_missing_stack_is_one_line_and_exit_2(stubbed, capsys):
    stubbed["cloudformation", acct.REGION].add_client_error(
        "describe_stacks", "ValidationError", "Stack with id Nope does not exist"
    )
    stubbed["cloudformation", acct.REGION].add_client_error(
        "list_stack_resources", "ValidationError", "Stack with id Nope does not exist"
    )
    code = main(["doctor", "--region", acct.REGION, "--stack", "Nope"])
    err = capsys.readouterr().err
    assert code == 2 and "no stack 'Nope' in eu-west-1" in err and "Traceback" not in err


def test_every_doctor_option_has_help_and_the_help_ends_with_examples(capsys):
    import argparse

    from ops import cli

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    doctor = parser._subparsers._group_actions[0].choices["doctor"]  # type: ignore[union-attr]
    for action in doctor._actions:
        assert action.help, action.option_strings
    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    assert "examples:\n  chatguard doctor" in capsys.readouterr().out


def test_a_topic_nobody_confirmed_fails_the_run(stubbed, tmp_path, capsys):
    # The alarm reached the topic ("Successfully executed action") and yet nobody is told.
    _account(stubbed, acct.DELIVERED)
    sns = _restubbed(stubbed, "sns")
    pending = {"SubscriptionArn": "PendingConfirmation", "Protocol": "email"}
    sns.add_response("list_subscriptions_by_topic", {"Subscriptions": [pending]})
    assert main(_doctor(tmp_path)) == 1
    out = capsys.readouterr().out
    (failing,) = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert f"({EDGE})" in failing and "pending confirmation" in failing


def _refuse(stubbed, refused) -> None:
    """Answer IAM's simulator: implicitDeny (a key missing) for the needs ``refused`` picks."""
    iam = stubbed["iam", acct.REGION]
    iam.deactivate()
    fresh = stubbed["iam", acct.REGION] = Stubber(iam.client)
    fresh.activate()
    for need in _role_needs():
        key = (
            "dynamodb:LeadingKeys"
            if need.action.startswith("dynamodb")
            else "bedrock:InferenceProfileArn"
        )
        missing = [key] if refused(need) else []
        result = {"EvalActionName": need.action, "MissingContextValues": missing}
        result["EvalDecision"] = "implicitDeny" if missing else "allowed"
        fresh.add_response("simulate_principal_policy", {"EvaluationResults": [result]})


def test_a_step_role_refused_by_iam_fails_the_run(stubbed, tmp_path, capsys):
    # The operator's own calls pass; the Quota role's simulated table write does not.
    _account(stubbed, acct.DELIVERED)
    _refuse(stubbed, lambda need: need.step == "Quota" and need.action.startswith("dynamodb"))
    assert main(_doctor(tmp_path)) == 1
    out = capsys.readouterr().out
    (failing,) = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert (
        "each step's role may make its calls" in failing and "Quota dynamodb:UpdateItem" in failing
    )


def test_the_region_less_grant_is_settled_by_the_real_message(stubbed, tmp_path, capsys):
    # Refused by the simulator only for want of an undocumented key: the message went
    # through with these roles, so the run passes and the line says why.
    _account(stubbed, acct.DELIVERED)
    _refuse(stubbed, lambda need: need.resource.startswith("arn:aws:bedrock:::"))
    assert main(_doctor(tmp_path)) == 0
    out = capsys.readouterr().out
    (roles,) = [line for line in out.splitlines() if "each step's role" in line]
    assert roles.startswith("PASS") and "the real message reached the model" in roles
