"""Each `chatguard doctor` check against a stubbed account that passes and one that fails.

Stubber refuses any call it was not told to expect, so a check that calls AWS where it
should not (byte metering, no guardrail) fails its test too.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from botocore.stub import ANY, Stubber

from ops.doctor import account as doctor_account
from ops.doctor import alarm as doctor_alarm
from ops.doctor import bedrock as doctor_bedrock
from ops.doctor import deployed
from ops.doctor import waf as doctor_waf
from ops.doctor.deployed import IndexHeader
from steps.lib.runtime.settings import Settings

from . import doctor_accounts as acct

NAME = "alert topic takes a CloudWatch alarm"
INVOKE = Settings(model_id=acct.MODEL, guardrail_id="gr-abc123", guardrail_version="1")
# The catalogue says CountTokens works for Sonnet 4 (not for Haiku 4.5, the default).
COUNTED = Settings(model_id="us.anthropic.claude-sonnet-4-20250514-v1:0")
TITAN_INDEX = IndexHeader("bedrock:amazon.titan-embed-text-v2:0:1024", 1024)


# --- the alert topic accepts a CloudWatch alarm -------------------------------------------


def _drive_alarm(alarms, history_pages):
    """Run the alarm check on a stubbed CloudWatch; returns (check, calls made)."""
    cw = acct.client("cloudwatch")
    slept: list[float] = []
    with Stubber(cw) as stub:
        stub.add_response("describe_alarms", {"MetricAlarms": alarms}, {"AlarmNames": [acct.ALARM]})
        chosen = alarms[0]
        if chosen["StateValue"] != "ALARM":
            stub.add_response(
                "set_alarm_state",
                {},
                {
                    "AlarmName": acct.ALARM,
                    "StateValue": "ALARM",
                    "StateReason": doctor_alarm.REASON,
                },
            )
            for items in history_pages:
                stub.add_response(
                    "describe_alarm_history",
                    {"AlarmHistoryItems": items},
                    {
                        "AlarmName": acct.ALARM,
                        "HistoryItemType": "Action",
                        "StartDate": acct.LAST_CHANGE,
                        "ScanBy": "TimestampDescending",
                    },
                )
            stub.add_response(  # always back to where it was
                "set_alarm_state",
                {},
                {
                    "AlarmName": acct.ALARM,
                    "StateValue": chosen["StateValue"],
                    "StateReason": doctor_alarm.RESTORE,
                },
            )
        check = doctor_alarm.alarm_reaches_topic(
            cw, [acct.ALARM], name=NAME, topic_arn=acct.TOPIC, sleep=slept.append
        )
        stub.assert_no_pending_responses()
    return check, slept


def test_an_alarm_whose_action_reached_the_topic_passes():
    check, _ = _drive_alarm([acct.metric_alarm()], [[acct.action_item(acct.DELIVERED)]])
    assert check.outcome == "PASS" and "Successfully executed action" in check.detail


def test_an_alarm_the_topic_policy_refuses_fails_with_the_knowledge_center_fix():
    check, _ = _drive_alarm([acct.metric_alarm()], [[acct.action_item(acct.NOT_AUTHORIZED)]])
    assert check.outcome == "FAIL"
    assert "is not authorized to perform: SNS:Publish" in check.detail
    assert "cloudwatch.amazonaws.com" in check.fix
    assert "cloudwatch-receive-sns-for-alarm-trigger" in check.fix


def test_the_history_is_polled_until_the_action_shows_and_the_state_is_restored():
    alarm = acct.metric_alarm(state="INSUFFICIENT_DATA")
    check, slept = _drive_alarm([alarm], [[], [], [acct.action_item(acct.NOT_AUTHORIZED)]])
    assert check.outcome == "FAIL" and slept == [doctor_alarm.POLL_SECONDS] * 2


def test_an_action_from_before_the_test_is_not_mistaken_for_it():
    old = acct.action_item(acct.DELIVERED, when=acct.LAST_CHANGE)
    pages = [[old]] * (int(doctor_alarm.WAIT_SECONDS / doctor_alarm.POLL_SECONDS) + 1)
    check, _ = _drive_alarm([acct.metric_alarm()], pages)
    assert check.outcome == "CANNOT TEST" and "no action showed" in check.detail


def test_an_alarm_already_in_alarm_is_not_driven():
    check, _ = _drive_alarm([acct.metric_alarm(state="ALARM")], [])
    assert check.outcome == "CANNOT TEST"


def test_the_stacks_own_topic_is_preferred():
    other = acct.metric_alarm("other", AlarmActions=["arn:aws:sns:eu-west-1:1:elsewhere"])
    ours = acct.metric_alarm()
    assert doctor_alarm.pick_alarm([other, ours], acct.TOPIC) is ours
    assert doctor_alarm.pick_alarm([acct.metric_alarm(ActionsEnabled=False)], None) is None


# --- the model answers --------------------------------------------------------------------


def test_the_model_answering_passes_and_a_refusal_fails_with_enable_model():
    runtime = acct.client("bedrock-runtime")
    with Stubber(runtime) as stub:
        stub.add_response("converse", acct.CONVERSE_ANSWER)
        good = doctor_bedrock.model_answers(runtime, INVOKE)
        stub.add_client_error("converse", "AccessDeniedException", "Model access is denied", 403)
        bad = doctor_bedrock.model_answers(runtime, INVOKE)
    assert good.outcome == "PASS" and "14 + 1 tokens" in good.detail
    assert bad.outcome == "FAIL" and "AccessDeniedException: Model access is denied" in bad.detail
    assert "chatguard enable-model" in bad.fix


# --- CountTokens answers, or the stack meters by bytes ------------------------------------


def test_count_tokens_answering_for_the_bare_model_passes():
    runtime = acct.client("bedrock-runtime")
    with Stubber(runtime) as stub:
        expected = {"modelId": "anthropic.claude-sonnet-4-20250514-v1:0", "input": ANY}
        stub.add_response("count_tokens", {"inputTokens": 17}, expected)
        check = doctor_bedrock.count_tokens_or_bytes(runtime, COUNTED, "count_tokens")
    assert check.outcome == "PASS" and "17 tokens" in check.detail


def test_exact_metering_for_a_model_count_tokens_refuses_fails():
    runtime = acct.client("bedrock-runtime")
    with Stubber(runtime) as stub:
        stub.add_client_error(
            "count_tokens",
            "ValidationException",
            "The provided model doesn't support counting tokens",
        )
        check = doctor_bedrock.count_tokens_or_bytes(runtime, COUNTED, "count_tokens")
    assert check.outcome == "FAIL"
    assert "doesn't support counting tokens" in check.detail and "bytes" in check.fix


def test_byte_metering_passes_without_calling_count_tokens():
    runtime = acct.client("bedrock-runtime")
    with Stubber(runtime):  # no response queued: any call would raise
        check = doctor_bedrock.count_tokens_or_bytes(runtime, INVOKE, "bytes")
    assert check.outcome == "PASS" and "byte metering" in check.detail


# --- ApplyGuardrail answers ---------------------------------------------------------------


def test_the_deployed_guardrail_answering_passes_and_a_missing_one_fails():
    runtime = acct.client("bedrock-runtime")
    expected = {
        "guardrailIdentifier": "gr-abc123",
        "guardrailVersion": "1",
        "source": "INPUT",
        "content": [{"text": {"text": doctor_bedrock.PROBE}}],
    }
    with Stubber(runtime) as stub:
        stub.add_response("apply_guardrail", acct.GUARDRAIL_PASSES, expected)
        good = doctor_bedrock.guardrail_answers(runtime, INVOKE)
        stub.add_client_error(
            "apply_guardrail", "ResourceNotFoundException", "no guardrail gr-abc123"
        )
        bad = doctor_bedrock.guardrail_answers(runtime, INVOKE)
    assert good.outcome == "PASS" and "2 units" in good.detail
    assert bad.outcome == "FAIL" and "ResourceNotFoundException: no guardrail" in bad.detail


def test_no_guardrail_configured_is_not_applicable():
    runtime = acct.client("bedrock-runtime")
    with Stubber(runtime):
        check = doctor_bedrock.guardrail_answers(runtime, INVOKE.replace(guardrail_id=""))
    assert check.outcome == "NOT APPLICABLE"


# --- Titan's dimensions match the index ---------------------------------------------------


def _embed(dimensions: int):
    runtime = acct.client("bedrock-runtime")
    with Stubber(runtime) as stub:
        stub.add_response("invoke_model", acct.titan_answer(dimensions))
        return doctor_bedrock.embedding_matches_index(runtime, Settings(), TITAN_INDEX)


def test_titan_vectors_of_the_index_dimensions_pass_and_others_fail():
    assert _embed(1024).outcome == "PASS"
    bad = _embed(512)
    assert bad.outcome == "FAIL" and "512 dimensions; the index has 1024" in bad.detail
    assert "--embedder titan" in bad.fix


def test_a_stack_that_embeds_locally_is_not_applicable():
    runtime = acct.client("bedrock-runtime")
    with Stubber(runtime):
        check = doctor_bedrock.embedding_matches_index(
            runtime, Settings(model_backend="offline"), TITAN_INDEX
        )
    assert check.outcome == "NOT APPLICABLE"


def test_the_offline_sample_index_cannot_stand_for_the_deployed_one():
    runtime = acct.client("bedrock-runtime")
    with Stubber(runtime):
        check = doctor_bedrock.embedding_matches_index(
            runtime, Settings(), IndexHeader("hashing-v2", 1024)
        )
    assert check.outcome == "CANNOT TEST" and "--knowledge" in check.fix


def test_the_index_header_is_read_from_the_knowledge_folder(tmp_path: Path):
    (tmp_path / "knowledge.json").write_text('{"embedder": {"id": "e", "dimensions": 8}}')
    assert deployed.index_header(tmp_path) == IndexHeader("e", 8)


# --- the budget's service strings exist in Cost Explorer ----------------------------------


def _budget_check(filter_services, billed_services):
    ce, budgets = acct.client("ce", "us-east-1"), acct.client("budgets", "us-east-1")
    name = "ChatguardChat-eu-west-1-model-monthly"
    with Stubber(ce) as ce_stub, Stubber(budgets) as budgets_stub:
        budgets_stub.add_response(
            "describe_budget",
            acct.budget(filter_services),
            {"AccountId": acct.ACCOUNT, "BudgetName": name},
        )
        ce_stub.add_response("get_cost_and_usage", acct.cost_groups(*billed_services))
        return doctor_account.budget_strings_billed(ce, budgets, acct.ACCOUNT, name)


def test_a_budget_filter_on_every_billed_model_string_passes():
    billed = ["Amazon Bedrock", acct.MARKETPLACE, "AWS Lambda"]
    assert _budget_check(["Amazon Bedrock", acct.MARKETPLACE], billed).outcome == "PASS"


def test_model_spend_under_a_string_the_budget_misses_fails():
    check = _budget_check(["Amazon Bedrock"], ["Amazon Bedrock", acct.MARKETPLACE])
    assert check.outcome == "FAIL" and acct.MARKETPLACE in check.detail


def test_a_filter_string_cost_explorer_never_billed_passes_and_is_named():
    # Over-inclusion only widens the budget (it counts more spend, never less): the default
    # filter on an account whose model has not billed its Marketplace string yet, or a
    # guessed string beside the right one, is no defense failure.
    guessed = "Claude Haiku 4.5 (Bedrock Edition)"
    check = _budget_check(["Amazon Bedrock", guessed], ["Amazon Bedrock"])
    assert check.outcome == "PASS" and guessed in check.detail and "harmless" in check.detail


def test_a_guessed_string_instead_of_the_billed_one_still_fails():
    guessed = "Claude Haiku 4.5 (Bedrock Edition)"
    check = _budget_check(["Amazon Bedrock", guessed], ["Amazon Bedrock", acct.MARKETPLACE])
    assert check.outcome == "FAIL" and acct.MARKETPLACE in check.detail


def test_no_model_spend_yet_cannot_test():
    check = doctor_account.service_strings_verdict({"AWS Lambda": Decimal(1)}, ["x"], "b")
    assert check.outcome == "CANNOT TEST"


# --- WAF's blocks come back as JSON -------------------------------------------------------

COMMON = "AWSManagedRulesCommonRuleSet"
XSS_BLOCKS = {"Rules": [{"Name": "CrossSiteScripting_BODY", "Action": {"Block": {}}}]}


def _waf(acl, groups=()):
    wafv2 = acct.client("wafv2", "us-east-1")
    name, acl_id = doctor_waf.parse_web_acl_arn(acct.ACL_ARN)
    with Stubber(wafv2) as stub:
        stub.add_response("get_web_acl", acl, {"Name": name, "Scope": "CLOUDFRONT", "Id": acl_id})
        for group in groups:
            stub.add_response("describe_managed_rule_group", group)
        check = doctor_waf.waf_blocks_answer_json(wafv2, acct.ACL_ARN)
        stub.assert_no_pending_responses()
    return check


def test_json_blocks_and_a_counting_managed_group_pass():
    rules = [*acct.OUR_RULES, acct.managed_rule(COMMON, {"Count": {}})]
    assert _waf(acct.web_acl(rules)).outcome == "PASS"


def test_a_managed_group_overridden_to_json_blocks_passes():
    override = [
        {"Name": "CrossSiteScripting_BODY", "ActionToUse": acct.block_with("chat-rate-blocked")}
    ]
    rule = acct.managed_rule(COMMON, {"None": {}}, RuleActionOverrides=override)
    assert _waf(acct.web_acl([*acct.OUR_RULES, rule]), [XSS_BLOCKS]).outcome == "PASS"


def test_a_managed_group_blocking_with_wafs_default_403_fails():
    rule = acct.managed_rule(COMMON, {"None": {}})
    check = _waf(acct.web_acl([*acct.OUR_RULES, rule]), [XSS_BLOCKS])
    assert check.outcome == "FAIL" and f"{COMMON}/CrossSiteScripting_BODY" in check.detail


def test_a_rule_blocking_without_a_json_body_fails():
    rules = [acct.own_rule("ChatRateLimit", {"Block": {}})]
    assert _waf(acct.web_acl(rules)).outcome == "FAIL"
    html = {"chat-rate-blocked": {"ContentType": "TEXT_HTML", "Content": "<p>no</p>"}}
    rules = [acct.own_rule("ChatRateLimit", acct.block_with("chat-rate-blocked"))]
    assert _waf(acct.web_acl(rules, bodies=html)).outcome == "FAIL"


# --- the ledger table exists and every step is told its name ------------------------------

TABLE = "ChatguardChat-LedgerTable1A2B-XYZ"
TOLD = {step: {"CHATGUARD_TABLE_NAME": TABLE} for step in ("Quota", "CostGate", "Reconcile")}


def _ledger(table, environments, status="ACTIVE", missing=False):
    dynamodb = acct.client("dynamodb")
    with Stubber(dynamodb) as stub:
        if missing:
            stub.add_client_error("describe_table", "ResourceNotFoundException", "not found")
        else:
            stub.add_response(
                "describe_table", {"Table": {"TableStatus": status}}, {"TableName": table}
            )
        return doctor_account.ledger_matches(dynamodb, table, environments)


def test_the_stacks_table_told_to_every_step_passes():
    assert _ledger(TABLE, TOLD).outcome == "PASS"


def test_a_step_told_another_table_or_none_fails():
    wrong = {**TOLD, "CostGate": {"CHATGUARD_TABLE_NAME": "chatguard"}, "Reconcile": {}}
    dynamodb = acct.client("dynamodb")
    with Stubber(dynamodb):  # fails before reading the table
        check = doctor_account.ledger_matches(dynamodb, TABLE, wrong)
    assert check.outcome == "FAIL"
    assert "CostGate=chatguard" in check.detail and "Reconcile=unset" in check.detail


def test_a_missing_or_inactive_table_fails():
    assert _ledger(TABLE, TOLD, missing=True).outcome == "FAIL"
    assert _ledger(TABLE, TOLD, status="DELETING").outcome == "FAIL"


@pytest.mark.parametrize(
    ("logical_id", "step"),
    [
        ("InvokeFunction1A2B3C4D", "Invoke"),
        ("QuotaFunctionABCDEF12", "Quota"),
        ("SecretsProvider", None),
    ],
)
def test_step_functions_are_known_by_their_logical_id(logical_id, step):
    assert deployed.step_of(logical_id) == step


def test_the_alarm_goes_back_to_its_state_when_its_history_cannot_be_read():
    cw = acct.client("cloudwatch")
    with Stubber(cw) as stub:
        stub.add_response("describe_alarms", {"MetricAlarms": [acct.metric_alarm()]})
        stub.add_response("set_alarm_state", {})
        stub.add_client_error("describe_alarm_history", "AccessDenied", "not allowed", 403)
        restore = {"AlarmName": acct.ALARM, "StateValue": "OK", "StateReason": ANY}
        stub.add_response("set_alarm_state", {}, restore)
        check = doctor_alarm.alarm_reaches_topic(cw, [acct.ALARM], name=NAME, sleep=print)
        stub.assert_no_pending_responses()
    assert check.outcome == "CANNOT TEST" and "AccessDenied" in check.detail


def test_a_step_with_unreadable_settings_is_one_clear_error():
    from ops.aws import OpsError

    broken = deployed.Deployed(
        "s", acct.REGION, {}, {"Invoke": {"CHATGUARD_MAX_OUTPUT_TOKENS": "many"}}, ()
    )
    with pytest.raises(OpsError, match="deployed Invoke step has unreadable settings"):
        broken.settings_of("Invoke")


def test_every_page_of_the_stacks_alarms_is_read():
    cw = acct.client("cloudwatch")
    with Stubber(cw) as stub:
        alarming = acct.metric_alarm("first", state="ALARM")
        stub.add_response("describe_alarms", {"MetricAlarms": [alarming], "NextToken": "n"})
        stub.add_response(
            "describe_alarms",
            {"MetricAlarms": [acct.metric_alarm()]},
            {"AlarmNames": ["first", acct.ALARM], "NextToken": "n"},
        )
        stub.add_response("set_alarm_state", {})
        delivered = {"AlarmHistoryItems": [acct.action_item(acct.DELIVERED)]}
        stub.add_response("describe_alarm_history", delivered)
        stub.add_response("set_alarm_state", {})
        check = doctor_alarm.alarm_reaches_topic(cw, ["first", acct.ALARM], name=NAME)
        stub.assert_no_pending_responses()
    assert check.outcome == "PASS" and acct.ALARM in check.detail
