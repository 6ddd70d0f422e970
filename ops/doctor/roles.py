"""`chatguard doctor`: can each step's role make the calls the step makes?

The other checks call AWS with the operator's credentials, which prove the account and the
model, not the steps: a grant missing from a step's role, or one that holds only under a
condition AWS does not meet, fails every visitor's message while doctor passes. This asks
IAM's policy simulator about the deployed role of each step, for each call that step makes
on the deployed resources (iam:SimulatePrincipalPolicy evaluates the role's identity
policies; https://docs.aws.amazon.com/IAM/latest/APIReference/API_SimulatePrincipalPolicy.html),
giving only the context keys AWS documents for that request:

- ``dynamodb:LeadingKeys``: the partition keys a request touches
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html);
- ``bedrock:InferenceProfileArn`` on a Regional foundation model reached through an
  inference profile (https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-prereq.html).
  No page we found says Bedrock sends it for the Region-less foundation-model ARN a global
  profile uses; so it is not given there, and a grant that needs it there is a FAIL (the
  real message check then shows what Bedrock does).

A decision other than "allowed" is a FAIL naming the step, the call, the resource and the
context keys the role's conditions wanted but the request does not carry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from steps.lib.providers.embedder_choice import embedder_kind
from steps.lib.providers.model_ids import split_profile
from steps.lib.runtime.settings import Settings

from .result import Check, failed, passed

NAME = "each step's role may make its calls"
Context = tuple[tuple[str, tuple[str, ...]], ...]  # (key, values); values are a string list


@dataclass(frozen=True, slots=True)
class Need:
    step: str
    action: str
    resource: str
    context: Context = ()
    # False when AWS documents no context key for this request, so a grant conditioned on
    # one is unproven: the real message through the workflow then decides.
    documented: bool = True


@dataclass(frozen=True, slots=True)
class Place:
    partition: str
    region: str
    account: str
    table_arn: str
    guardrail_arn: str | None = None


def _items(step: str, place: Place, action: str, *keys: str) -> Need:
    # One representative item per key family the step touches (ledger_items.py's keys).
    return Need(step, f"dynamodb:{action}", place.table_arn, (("dynamodb:LeadingKeys", keys),))


def _parameter(step: str, place: Place, name: str) -> Need:
    arn = f"arn:{place.partition}:ssm:{place.region}:{place.account}:parameter/{name.lstrip('/')}"
    return Need(step, "ssm:GetParameter", arn)


def _model(place: Place, model: str, region: str) -> str:
    return f"arn:{place.partition}:bedrock:{region}::foundation-model/{model}"


def _converse(s: Settings, place: Place) -> list[Need]:
    prefix, model = split_profile(s.model_id)
    invoke = "bedrock:InvokeModel"  # Converse is authorized as InvokeModel
    if prefix is None:
        return [Need("Invoke", invoke, _model(place, model, place.region))]
    profile = (
        f"arn:{place.partition}:bedrock:{place.region}:{place.account}"
        f":inference-profile/{s.model_id}"
    )
    through = (("bedrock:InferenceProfileArn", (profile,)),)
    needs = [
        Need("Invoke", invoke, profile),
        Need("Invoke", invoke, _model(place, model, place.region), through),
    ]
    if prefix == "global":
        needs.append(Need("Invoke", invoke, _model(place, model, ""), documented=False))
    return needs


def needs_of(steps: Mapping[str, Settings], place: Place) -> list[Need]:
    """The calls each deployed step makes, on the deployed resources."""
    out: list[Need] = []
    if (s := steps.get("OriginVerify")) is not None:
        out.append(_parameter("OriginVerify", place, s.origin_secret_param))
    if (s := steps.get("Quota")) is not None:
        out += [
            _items("Quota", place, "UpdateItem", "VISITOR#0"),
            _parameter("Quota", place, s.salt_param),
        ]
    if "CostGate" in steps:
        out += [
            _items("CostGate", place, "UpdateItem", "GLOBAL", "VISITOR#0"),
            _items("CostGate", place, "PutItem", "RES#0"),
            _items("CostGate", place, "ConditionCheckItem", "CONFIG"),
        ]
    if (s := steps.get("Retrieve")) is not None and embedder_kind(s) == "titan":
        out.append(
            Need(
                "Retrieve", "bedrock:InvokeModel", _model(place, s.embedding_model_id, place.region)
            )
        )
    if (s := steps.get("Invoke")) is not None:
        out += _converse(s, place)
        out.append(_parameter("Invoke", place, s.signing_key_param))
        if place.guardrail_arn and s.guardrail_id:
            out.append(Need("Invoke", "bedrock:ApplyGuardrail", place.guardrail_arn))
    if "Reconcile" in steps:
        out += [
            _items("Reconcile", place, "UpdateItem", "RES#0"),
            _items("Reconcile", place, "PutItem", "RES#0"),  # a failed S3's id, voided
            _items("Reconcile", place, "UpdateItem", "GLOBAL", "VISITOR#0"),
        ]
    return out


def simulate(iam: object, role_arn: str, need: Need) -> tuple[str, list[str]]:
    """IAM's decision for one call, and the context keys its conditions missed."""
    entries = [
        {"ContextKeyName": key, "ContextKeyValues": list(values), "ContextKeyType": "stringList"}
        for key, values in need.context
    ]
    answer = iam.simulate_principal_policy(  # type: ignore[attr-defined]
        PolicySourceArn=role_arn,
        ActionNames=[need.action],
        ResourceArns=[need.resource],
        ContextEntries=entries,
    )
    (result,) = answer["EvaluationResults"]
    return str(result["EvalDecision"]), list(result.get("MissingContextValues", []))


def roles_allow(
    iam: object, roles: Mapping[str, str], needs: Sequence[Need], *, went_through: bool = False
) -> Check:
    """PASS when every step's role is allowed every call it makes. A refusal only for want
    of a key no AWS page documents there is a FAIL too, unless ``went_through``: the real
    message reached the model with these roles, so Bedrock met the condition in practice."""
    refused, unproven = [], []
    for need in needs:
        role = roles.get(need.step)
        if role is None:
            refused.append(f"{need.step}: no role found for the step")
            continue
        decision, missing = simulate(iam, role, need)
        if decision == "allowed":
            continue
        wanted = f" (its condition wants {', '.join(missing)})" if missing else ""
        line = f"{need.step} {need.action} on {need.resource}: {decision}{wanted}"
        (unproven if missing and not need.documented and went_through else refused).append(line)
    if refused:
        return failed(
            NAME,
            f"{len(refused)} of {len(needs)} calls refused: " + "; ".join(refused),
            "grant the call on the step's role (infra/permissions.py) without a condition "
            "the request cannot meet, then deploy; for a condition on a key no AWS page "
            "documents for that request, the real-message check shows whether AWS sends it",
        )
    steps = sorted({n.step for n in needs})
    detail = f"{len(needs) - len(unproven)} calls allowed for {len(steps)} step roles"
    if unproven:
        detail += (
            f"; {'; '.join(unproven)}, a key no AWS page documents there, but the real "
            "message reached the model with these roles"
        )
    return passed(NAME, detail)
