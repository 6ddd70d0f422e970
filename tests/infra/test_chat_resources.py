"""Chat stack: table, secrets, step Lambdas, workflow, guardrail, budgets, alarms."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match

from infra.step_wiring import STEP_SETTINGS
from statemachine import loader
from steps.lib.providers.local_embedder import MODEL_ID as LOCAL_MODEL_ID
from steps.lib.runtime.settings import ENV_PREFIX
from steps.lib.runtime.stages import STAGES
from tests.infra.conftest import INVOKE_CONCURRENCY, function_of

pytestmark = pytest.mark.infra


def test_table_is_on_demand_with_ttl_pitr_and_deletion_protection(synth):
    synth.chat.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": {
                # CloudFormation names it: a retained table with a fixed name would make a
                # first deploy that rolled back fail again with "already exists".
                "TableName": Match.absent(),
                "BillingMode": "PAY_PER_REQUEST",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                "TimeToLiveSpecification": {"AttributeName": "expiresAt", "Enabled": True},
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "DeletionProtectionEnabled": True,
            },
            "DeletionPolicy": "Retain",
        },
    )


def test_the_steps_and_the_operator_read_the_table_name_cloudformation_chose(synth):
    from ops.aws import LEDGER_TABLE_OUTPUT, find_output

    (table,) = synth.resources("AWS::DynamoDB::Table")
    ref = {"Ref": table}
    readers = {state for state, names in STEP_SETTINGS.items() if "table_name" in names}
    assert readers == {"Quota", "CostGate", "Reconcile"}
    for state in readers:
        env = function_of(synth, state)[1]["Properties"]["Environment"]["Variables"]
        assert env[ENV_PREFIX + "TABLE_NAME"] == ref, state
    outputs = {k: v["Value"] for k, v in synth.chat_json["Outputs"].items()}
    assert find_output(outputs, LEDGER_TABLE_OUTPUT) == ref


def test_three_secrets_come_from_the_generator_and_no_parameter_value_is_templated(synth):
    settings = synth.context["chatguard"]
    names = {settings[k] for k in ("origin_secret_param", "salt_param", "signing_key_param")}
    secrets = synth.resources("Custom::ChatguardSecret")
    assert {r["Properties"]["ParameterName"] for r in secrets.values()} == names
    exposed = [r for r in secrets.values() if r["Properties"].get("Expose") == "current"]
    assert [r["Properties"]["ParameterName"] for r in exposed] == [settings["origin_secret_param"]]
    assert synth.resources("AWS::SSM::Parameter") == {}


def test_every_step_is_python313_arm64_traced_with_its_timeout_and_memory(synth):
    for stage in STAGES:
        _, fn = function_of(synth, stage.state)
        props = fn["Properties"]
        assert props["Runtime"] == "python3.13"
        assert props["Architectures"] == ["arm64"]
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["Timeout"] == stage.timeout_seconds
        assert props["MemorySize"] == stage.memory_mb
        assert props["Handler"] == stage.handler_path
        assert "LoggingConfig" in props  # its own log group, with retention below


def test_step_log_groups_keep_the_configured_retention(synth):
    days = synth.context["chatguard/ops"]["log_retention_days"]
    groups = synth.resources("AWS::Logs::LogGroup")
    assert groups and all(g["Properties"]["RetentionInDays"] == days for g in groups.values())


def test_reserved_concurrency_only_where_the_context_asks(synth):
    for stage in STAGES:
        _, fn = function_of(synth, stage.state)
        expected = INVOKE_CONCURRENCY if stage.state == "Invoke" else None
        assert fn["Properties"].get("ReservedConcurrentExecutions") == expected, stage.state


def test_each_step_gets_only_its_own_settings_and_secret_names(synth):
    secret_params = {"ORIGIN_SECRET_PARAM", "SALT_PARAM", "SIGNING_KEY_PARAM"}
    for stage in STAGES:
        _, fn = function_of(synth, stage.state)
        env = fn["Properties"]["Environment"]["Variables"]
        ours = {k.removeprefix(ENV_PREFIX) for k in env if k.startswith(ENV_PREFIX)}
        assert ours == {n.upper() for n in STEP_SETTINGS[stage.state]}, stage.state
        for key in ours & secret_params:
            assert env[ENV_PREFIX + key].startswith("/"), "a parameter name, never a value"
    owners = {
        "ORIGIN_SECRET_PARAM": "OriginVerify",
        "SALT_PARAM": "Quota",
        "SIGNING_KEY_PARAM": "Invoke",
    }
    for key, owner in owners.items():
        holders = [s.state for s in STAGES if key.lower() in STEP_SETTINGS[s.state]]
        assert holders == [owner]


def test_invoke_is_told_the_deployed_guardrail_and_its_version(synth):
    _, fn = function_of(synth, "Invoke")
    env = fn["Properties"]["Environment"]["Variables"]
    (guardrail_id,) = synth.resources("AWS::Bedrock::Guardrail")
    (version_id,) = synth.resources("AWS::Bedrock::GuardrailVersion")
    assert env["CHATGUARD_GUARDRAIL_ID"] == {"Fn::GetAtt": [guardrail_id, "GuardrailId"]}
    assert env["CHATGUARD_GUARDRAIL_VERSION"] == {"Fn::GetAtt": [version_id, "Version"]}


def test_state_machine_definition_is_the_asl_with_every_placeholder_substituted(synth):
    (machine,) = synth.resources("AWS::StepFunctions::StateMachine").values()
    props = machine["Properties"]
    assert props["StateMachineType"] == "EXPRESS"
    subs = props["DefinitionSubstitutions"]
    assert set(subs) == loader.placeholders()
    for stage in STAGES:
        logical_id, _ = function_of(synth, stage.state)
        assert subs[stage.placeholder] == {"Fn::GetAtt": [logical_id, "Arn"]}
    body = props["DefinitionString"]
    text = (
        body
        if isinstance(body, str)
        else "".join(p if isinstance(p, str) else "" for p in body["Fn::Join"][1])
    )
    deployed = json.loads(text)
    # CDK drops StateMachine(timeout=...) for a string definition: the ASL must carry it
    # (its order against the API's timeout: test_timeout_order.py).
    assert isinstance(deployed.pop("TimeoutSeconds"), int)
    assert deployed == json.loads(loader.definition_text())
    rendered = loader.substitute(
        {k: f"arn:aws:lambda:eu-west-1:123456789012:function:{k}" for k in subs}
    )
    assert "${" not in rendered
    assert json.loads(rendered)["StartAt"] == "OriginVerify"


def test_state_machine_logs_all_without_execution_data_and_traces(synth):
    synth.chat.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "LoggingConfiguration": {
                "Level": "ALL",
                "IncludeExecutionData": False,
                "Destinations": Match.any_value(),
            },
            "TracingConfiguration": {"Enabled": True},
        },
    )


def test_guardrail_blocks_prompt_attacks_and_denied_topics_on_input(synth):
    topic = synth.context["chatguard/ops"]["denied_topics"][0]
    synth.chat.has_resource_properties(
        "AWS::Bedrock::Guardrail",
        {
            "ContentPolicyConfig": {
                "FiltersConfig": Match.array_with(
                    [{"Type": "PROMPT_ATTACK", "InputStrength": "HIGH", "OutputStrength": "NONE"}]
                )
            },
            "TopicPolicyConfig": {
                "TopicsConfig": [
                    Match.object_like(
                        {"Name": topic["name"], "Definition": topic["definition"], "Type": "DENY"}
                    )
                ]
            },
        },
    )
    synth.chat.resource_count_is("AWS::Bedrock::GuardrailVersion", 1)


def test_two_budgets_one_per_billing_service_list_and_one_unfiltered(synth):
    services = synth.context["chatguard/ops"]["billing_services"]
    budgets = [b["Properties"] for b in synth.resources("AWS::Budgets::Budget").values()]
    assert len(budgets) == 2
    filtered = [b for b in budgets if b["Budget"].get("FilterExpression")]
    unfiltered = [b for b in budgets if not b["Budget"].get("FilterExpression")]
    assert [b["Budget"]["FilterExpression"] for b in filtered] == [
        {"Dimensions": {"Key": "SERVICE", "Values": services, "MatchOptions": ["EQUALS"]}}
    ]
    assert all("CostFilters" not in b["Budget"] for b in budgets)  # never both forms
    assert all(b["Budget"]["Metrics"] == ["UnblendedCost"] for b in budgets)
    assert len(unfiltered) == 1
    for budget in budgets:
        kinds = sorted(
            (n["Notification"]["NotificationType"], n["Notification"]["Threshold"])
            for n in budget["NotificationsWithSubscribers"]
        )
        assert kinds == [("ACTUAL", 80), ("ACTUAL", 100), ("FORECASTED", 80)]
        for n in budget["NotificationsWithSubscribers"]:
            assert n["Subscribers"][0]["SubscriptionType"] == "SNS"


def test_every_step_has_error_throttle_and_p99_duration_alarms(synth):
    alarms = synth.resources("AWS::CloudWatch::Alarm").values()
    for stage in STAGES:
        logical_id, _ = function_of(synth, stage.state)
        mine = [
            a["Properties"]
            for a in alarms
            if {"Name": "FunctionName", "Value": {"Ref": logical_id}}
            in a["Properties"].get("Dimensions", [])
        ]
        metrics = sorted(
            (a["MetricName"], a.get("Statistic") or a.get("ExtendedStatistic")) for a in mine
        )
        assert metrics == [("Duration", "p99"), ("Errors", "Sum"), ("Throttles", "Sum")], (
            stage.state
        )
        assert all(a["AlarmActions"] for a in mine)


def test_workflow_decision_and_api_alarms_exist(synth):
    alarms = [a["Properties"] for a in synth.resources("AWS::CloudWatch::Alarm").values()]
    names = {(a.get("Namespace"), a["MetricName"]) for a in alarms}
    assert {m for ns, m in names if ns == "AWS/States"} == {"ExecutionsTimedOut"}
    for metric in ("OriginRejected", "FailClosed", "Degraded", "CostMicros", "ReservationOpen"):
        assert ("Chatguard", metric) in names
    assert ("AWS/ApiGateway", "5XXError") in names
    spend = next(a for a in alarms if a["MetricName"] == "CostMicros")
    assert spend["Period"] == 3600
    assert spend["Threshold"] == 250_000  # 0.25 x $1.00 daily ceiling, in micro-USD


def test_dashboard_has_one_row_per_stage(synth):
    (dashboard,) = synth.resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for stage in STAGES:
        assert f"{stage.key} {stage.state}: invocations" in body


def test_the_stand_in_index_synthesized_on_purpose_is_marked_not_deployable(synth):
    from aws_cdk.assertions import Annotations

    # The sample index uses the local model (the offline default); Retrieve on AWS embeds
    # with Titan by default.
    # The tests allow it explicitly (chatguard/stand_in_index); without that, synthesis
    # refuses (test_deploy_sequence.py).
    Annotations.from_stack(synth.chat_stack).has_warning(
        "*", Match.string_like_regexp(f".*embedded by '{LOCAL_MODEL_ID}'.*not deployable.*")
    )
