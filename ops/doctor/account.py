"""`chatguard doctor`'s account checks: the budget's service strings and the ledger table.

The budget filter is only as good as its strings: one Cost Explorer never bills under
matches nothing, and the model's spend slips past the budget (ops/billing.py finds the
strings; this judges them). The ledger table must exist and every step that reads it must
be told its name: a step without CHATGUARD_TABLE_NAME silently uses the default name.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from infra.step_wiring import STEP_SETTINGS
from ops import billing
from steps.lib.runtime.settings import ENV_PREFIX

from .result import Check, cannot_test, failed, passed

TABLE_VARIABLE = ENV_PREFIX + "TABLE_NAME"
BUDGET_NAME = "budget service strings in Cost Explorer"
LEDGER_NAME = "ledger table and the steps' table name"


def service_strings_verdict(
    totals: Mapping[str, Decimal], covered: list[str], budget: str
) -> Check:
    """Every model service Cost Explorer bills is in the filter: that alone decides.

    A filter string nobody billed under (a typo, a guess, the previous model's Marketplace
    name, "Amazon Bedrock" on a stack whose only Bedrock use is a Marketplace model) can
    only widen what the budget counts, never let spend slip past it, so it is named in
    the PASS line for the operator to tidy, not failed.
    """
    model = sorted(s for s in totals if billing.MODEL_MARKER in s.lower())
    if not model:
        return cannot_test(
            BUDGET_NAME,
            f"no model spend in Cost Explorer's last {billing.LOOKBACK_DAYS} days (it lags a day)",
            "run doctor again after the first day with real messages",
        )
    missing = [s for s in model if s not in covered]
    if missing:
        return failed(
            BUDGET_NAME,
            f"model spend lands under {', '.join(missing)}, which budget {budget} misses",
            'add it to "chatguard/ops" billing_services in cdk.json, then make deploy',
        )
    unbilled = [s for s in covered if s not in totals]
    detail = f"budget {budget} covers every model service Cost Explorer billed ({len(model)})"
    if unbilled:
        detail += (
            f"; it also filters on {', '.join(map(repr, unbilled))}, never billed in the last "
            f"{billing.LOOKBACK_DAYS} days (harmless: it only widens the budget)"
        )
    return passed(BUDGET_NAME, detail)


def budget_strings_billed(ce: Any, budgets: Any, account: str, budget: str) -> Check:
    from botocore.exceptions import ClientError

    try:
        covered = billing.budget_services(budgets, account, budget)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "NotFoundException":
            raise
        return failed(BUDGET_NAME, f"no budget named {budget}", "make deploy (it creates it)")
    _, _, totals = billing.costs_by_service(ce)
    return service_strings_verdict(totals, covered, budget)


def ledger_matches(
    dynamodb: Any, table: str | None, environments: Mapping[str, Mapping[str, str]]
) -> Check:
    """The stack's table exists and every step that reads the ledger is told its name."""
    readers = [step for step, names in STEP_SETTINGS.items() if "table_name" in names]
    told = {step: environments.get(step, {}).get(TABLE_VARIABLE) for step in readers}
    expected = table or next((name for name in told.values() if name), None)
    if expected is None:
        return failed(LEDGER_NAME, "no stack output and no step names a table", "make deploy")
    wrong = sorted(f"{step}={name or 'unset'}" for step, name in told.items() if name != expected)
    if wrong:
        return failed(
            LEDGER_NAME,
            f"the stack's table is {expected}, but {', '.join(wrong)}",
            "make deploy, so every step's CHATGUARD_TABLE_NAME is the stack's table",
        )
    from botocore.exceptions import ClientError

    try:
        status = dynamodb.describe_table(TableName=expected)["Table"]["TableStatus"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
        return failed(LEDGER_NAME, f"table {expected} does not exist", "make deploy")
    if status != "ACTIVE":
        return failed(LEDGER_NAME, f"table {expected} is {status}", "wait, then run doctor again")
    return passed(LEDGER_NAME, f"table {expected} is ACTIVE; {', '.join(readers)} use it")
