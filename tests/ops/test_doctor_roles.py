"""doctor's role check on stubbed accounts: IAM's simulator asked about each step's deployed
role, with the documented context keys only; a grant that needs a key the request does not
carry is a FAIL that names the key."""

from __future__ import annotations

from botocore.stub import Stubber

from ops.doctor import roles as doctor_roles
from ops.doctor.roles import Need, Place
from steps.lib.runtime.settings import Settings

from . import doctor_accounts as acct

TABLE_ARN = f"arn:aws:dynamodb:{acct.REGION}:{acct.ACCOUNT}:table/ChatguardChat-Ledger-XYZ"
PLACE = Place("aws", acct.REGION, acct.ACCOUNT, TABLE_ARN)
PROFILE_ARN = f"arn:aws:bedrock:{acct.REGION}:{acct.ACCOUNT}:inference-profile/{acct.MODEL}"
BARE = acct.MODEL.removeprefix("global.")
REGION_LESS = f"arn:aws:bedrock:::foundation-model/{BARE}"
STEPS = {s: Settings() for s in ("OriginVerify", "Quota", "CostGate", "Invoke", "Reconcile")}
ROLES = {s: f"arn:aws:iam::{acct.ACCOUNT}:role/ChatguardChat-{s}Role-XYZ" for s in STEPS}


def simulated(decision: str, need: Need, missing: list[str] | None = None) -> dict:
    result = {"EvalActionName": need.action, "EvalResourceName": need.resource}
    result |= {"EvalDecision": decision, "MissingContextValues": missing or []}
    return {"EvaluationResults": [result]}


def expected(need: Need) -> dict:
    entries = [
        {"ContextKeyName": k, "ContextKeyValues": list(v), "ContextKeyType": "stringList"}
        for k, v in need.context
    ]
    return {
        "PolicySourceArn": ROLES[need.step],
        "ActionNames": [need.action],
        "ResourceArns": [need.resource],
        "ContextEntries": entries,
    }


def run(decide) -> doctor_roles.Check:
    needs = doctor_roles.needs_of(STEPS, PLACE)
    iam = acct.client("iam", "us-east-1")
    with Stubber(iam) as stub:
        for need in needs:
            stub.add_response("simulate_principal_policy", decide(need), expected(need))
        check = doctor_roles.roles_allow(iam, ROLES, needs)
        stub.assert_no_pending_responses()
    return check


def test_the_invoke_calls_carry_only_the_documented_context_keys() -> None:
    needs = [n for n in doctor_roles.needs_of(STEPS, PLACE) if n.action == "bedrock:InvokeModel"]
    by_resource = {n.resource: dict(n.context) for n in needs}
    assert by_resource == {
        PROFILE_ARN: {},
        f"arn:aws:bedrock:{acct.REGION}::foundation-model/{BARE}": {
            "bedrock:InferenceProfileArn": (PROFILE_ARN,)
        },
        REGION_LESS: {},  # no page says Bedrock sends the profile's ARN there
    }


def test_every_table_call_names_the_partition_keys_it_touches() -> None:
    table = [n for n in doctor_roles.needs_of(STEPS, PLACE) if n.action.startswith("dynamodb:")]
    assert table and all(dict(n.context)["dynamodb:LeadingKeys"] for n in table)
    assert {n.step for n in table} == {"Quota", "CostGate", "Reconcile"}


def test_roles_that_allow_every_call_pass() -> None:
    check = run(lambda need: simulated("allowed", need))
    assert check.outcome == "PASS" and "step roles" in check.detail


def test_a_grant_that_needs_a_key_the_request_lacks_fails_and_names_it() -> None:
    # What the Invoke role's condition on the Region-less ARN does if Bedrock sends no key.
    def decide(need: Need) -> dict:
        if need.resource == REGION_LESS:
            return simulated("implicitDeny", need, ["bedrock:InferenceProfileArn"])
        return simulated("allowed", need)

    check = run(decide)
    assert check.outcome == "FAIL"
    assert f"Invoke bedrock:InvokeModel on {REGION_LESS}: implicitDeny" in check.detail
    assert "wants bedrock:InferenceProfileArn" in check.detail


def test_an_explicit_deny_fails() -> None:
    def decide(need: Need) -> dict:
        deny = need.step == "Quota" and need.action == "ssm:GetParameter"
        return simulated("explicitDeny" if deny else "allowed", need)

    check = run(decide)
    assert check.outcome == "FAIL" and "Quota ssm:GetParameter" in check.detail


def test_a_step_without_a_role_fails() -> None:
    needs = [Need("Quota", "dynamodb:UpdateItem", TABLE_ARN)]
    check = doctor_roles.roles_allow(acct.client("iam", "us-east-1"), {}, needs)
    assert check.outcome == "FAIL" and "no role found" in check.detail


def test_an_undocumented_key_is_settled_by_the_real_message() -> None:
    # The same refusal on the Region-less ARN: the real message reached the model with
    # these roles, so Bedrock met the condition; said in the line, not hidden.
    needs = doctor_roles.needs_of(STEPS, PLACE)
    iam = acct.client("iam", "us-east-1")
    with Stubber(iam) as stub:
        for need in needs:
            missing = ["bedrock:InferenceProfileArn"] if need.resource == REGION_LESS else []
            decision = "implicitDeny" if missing else "allowed"
            stub.add_response("simulate_principal_policy", simulated(decision, need, missing))
        check = doctor_roles.roles_allow(iam, ROLES, needs, went_through=True)
    assert check.outcome == "PASS"
    assert "the real message reached the model" in check.detail and REGION_LESS in check.detail


def test_a_documented_call_refused_fails_even_after_the_real_message() -> None:
    def decide(need: Need) -> dict:
        deny = need.step == "Reconcile"
        return simulated(
            "implicitDeny" if deny else "allowed", need, ["dynamodb:LeadingKeys"] if deny else []
        )

    needs = doctor_roles.needs_of(STEPS, PLACE)
    iam = acct.client("iam", "us-east-1")
    with Stubber(iam) as stub:
        for need in needs:
            stub.add_response("simulate_principal_policy", decide(need))
        check = doctor_roles.roles_allow(iam, ROLES, needs, went_through=True)
    assert check.outcome == "FAIL" and "Reconcile dynamodb:UpdateItem" in check.detail
