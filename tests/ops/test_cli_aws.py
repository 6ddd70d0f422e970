"""The CLI against AWS (moto): stack outputs, defaults from cdk.json, exit codes."""

from __future__ import annotations

import json

import pytest

from chatguard.cli import main
from local.engine.tables import create_ledger_table
from ops.aws import Aws, api_chat_url, find_output, stack_outputs
from steps.lib.runtime.secrets import parse_secret

from .conftest import MARKETPLACE, TABLE, canned_costs, cost_group

REGION = ["--region", "us-east-1"]


def _run(capsys, *argv):
    code = main([*argv, *REGION])
    out, err = capsys.readouterr()
    return code, out, err


def test_stack_outputs_are_found_with_or_without_cdk_hash_suffixes(aws_env):
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {
            "DataTableName1A2B3C4D": {"Value": "chatguard-prod"},
            "DistributionId": {"Value": "E2EXAMPLE"},
        },
    }
    aws_env.client("cloudformation").create_stack(
        StackName="Chatguard", TemplateBody=json.dumps(template)
    )
    outputs = stack_outputs(aws_env.client("cloudformation"), "Chatguard")
    assert find_output(outputs, "TableName") == "chatguard-prod"
    assert find_output(outputs, "DistributionId") == "E2EXAMPLE"
    assert find_output(outputs, "ApiUrl") is None
    assert stack_outputs(aws_env.client("cloudformation"), "NoSuchStack") == {}


def test_the_origin_url_is_built_from_the_stack_api_id(aws_env):
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {"ApiId": {"Value": "a1b2c3"}, "SiteUrl": {"Value": "https://d1.example"}},
    }
    aws_env.client("cloudformation").create_stack(
        StackName="ChatguardChat", TemplateBody=json.dumps(template)
    )
    aws = Aws(region="us-east-1", session=aws_env)
    assert api_chat_url(aws) == "https://a1b2c3.execute-api.us-east-1.amazonaws.com/prod/chat"


def test_billing_services_reads_the_deployed_model_budget_by_default(aws_env, capsys):
    canned_costs([[cost_group("Amazon Bedrock", "0.40"), cost_group(MARKETPLACE, "3.10")], []])
    account = aws_env.client("sts").get_caller_identity()["Account"]
    aws_env.client("budgets").create_budget(AccountId=account, Budget={
        "BudgetName": "ChatguardChat-us-east-1-model-monthly",
        "BudgetLimit": {"Amount": "15", "Unit": "USD"}, "TimeUnit": "MONTHLY", "BudgetType": "COST",
        "CostFilters": {"Service": ["Amazon Bedrock"]}})  # fmt: skip
    code, out, _ = _run(capsys, "billing-services")
    assert code == 1 and "budget ChatguardChat-us-east-1-model-monthly" in out and "WARNING" in out


def _deployed_stack(aws_env, outputs: dict[str, str]) -> None:
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    aws_env.client("cloudformation").create_stack(
        StackName="ChatguardChat", TemplateBody=json.dumps(template)
    )


def test_spend_and_mode_use_the_table_the_stack_output_names(aws_env, capsys):
    # CloudFormation names the table; a "chatguard" table left by an old stack is ignored.
    deployed = "ChatguardChat-LedgerTable1A2B3C4D-XYZ"
    for name in (TABLE, deployed):
        create_ledger_table(aws_env.client("dynamodb"), name)
    _deployed_stack(aws_env, {"LedgerTableName": deployed})
    code, out, _ = _run(capsys, "mode", "off")
    assert code == 0 and "normal -> off" in out
    assert _run(capsys, "mode")[1].strip() == "mode: off"
    code, out, _ = _run(capsys, "spend", "--day", "2027-01-15")
    assert code == 0 and "mode: off" in out and "$1.00" in out and "$15.00" in out
    key = {"pk": {"S": "CONFIG"}, "sk": {"S": "MODE"}}
    dynamodb = aws_env.client("dynamodb")
    assert dynamodb.get_item(TableName=deployed, Key=key)["Item"]["mode"]["S"] == "off"
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key=key)


def test_a_stack_deployed_before_the_output_was_renamed_still_names_its_table(aws_env, capsys):
    create_ledger_table(aws_env.client("dynamodb"), TABLE)
    _deployed_stack(aws_env, {"TableName": TABLE})
    assert _run(capsys, "mode", "degraded")[0] == 0


def test_without_a_deployed_stack_spend_and_mode_refuse_in_one_line(dynamodb, capsys):
    for argv in (("mode", "off"), ("spend",)):
        code, out, err = _run(capsys, *argv)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "no output 'LedgerTableName'" in err
        assert "Traceback" not in err
    key = {"pk": {"S": "CONFIG"}, "sk": {"S": "MODE"}}
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key=key)


def test_rotate_origin_secret_updates_ssm_and_the_distribution(ssm, settings, cloudfront, capsys):
    client, distribution = cloudfront
    code, out, _ = _run(
        capsys, "rotate", "origin-secret", "--distribution-id", distribution, "--no-wait"
    )
    assert code == 0 and "rotated origin-secret" in out
    value = parse_secret(
        ssm.get_parameter(Name=settings.origin_secret_param, WithDecryption=True)["Parameter"][
            "Value"
        ]
    )
    config = client.get_distribution_config(Id=distribution)["DistributionConfig"]
    header = config["Origins"]["Items"][1]["CustomHeaders"]["Items"][0]
    assert header["HeaderValue"] == value.current and value.previous == "a" * 43
    assert value.current not in out  # fingerprints only


def test_rotate_origin_secret_without_a_distribution_is_a_clear_error(ssm, capsys):
    code, _, err = _run(capsys, "rotate", "origin-secret")
    assert code == 2 and "DistributionId" in err


def test_billing_services_exits_non_zero_when_the_budget_misses_a_model_service(aws_env, capsys):
    canned_costs([[cost_group("Amazon Bedrock", "0.40"), cost_group(MARKETPLACE, "3.10")], []])
    account = aws_env.client("sts").get_caller_identity()["Account"]
    aws_env.client("budgets").create_budget(AccountId=account, Budget={
        "BudgetName": "model", "BudgetLimit": {"Amount": "15", "Unit": "USD"},
        "TimeUnit": "MONTHLY", "BudgetType": "COST",
        "CostFilters": {"Service": ["Amazon Bedrock"]}})  # fmt: skip
    code, out, _ = _run(capsys, "billing-services", "--budget-name", "model")
    assert code == 1 and "WARNING" in out and MARKETPLACE in out


def test_billing_services_falls_back_to_the_cdk_json_filter(aws_env, capsys):
    canned_costs([[cost_group("Amazon Bedrock", "0.40"), cost_group(MARKETPLACE, "3.10")], []])
    code, out, _ = _run(capsys, "billing-services")
    assert code == 0 and 'cdk.json "chatguard/ops"' in out and "WARNING" not in out


def test_traces_lists_nothing_on_a_quiet_account(aws_env, capsys):
    code, out, _ = _run(capsys, "traces", "--since", "30m")
    assert code == 0 and out.startswith("0 traces in the last 30m")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["verify"], "no output 'SiteUrl'"),
        (["spend", "--day", "yesterday"], "YYYY-MM-DD"),
        (["traces", "--since", "3d"], "at most 24h"),
    ],
)
def test_usage_errors_exit_2_with_one_clear_line(aws_env, capsys, argv, message):
    code, _, err = _run(capsys, *argv)
    assert code == 2 and message in err and "Traceback" not in err
