"""The deployed model budget's filter is the one `chatguard billing-services` reads back."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from ops import billing

pytestmark = pytest.mark.infra


def test_billing_services_reads_the_synthesized_filter_expression(synth) -> None:
    services = synth.context["chatguard/ops"]["billing_services"]
    (model,) = [
        b["Properties"]["Budget"]
        for b in synth.resources("AWS::Budgets::Budget").values()
        if "FilterExpression" in b["Properties"]["Budget"]
    ]
    client = boto3.client(
        "budgets", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    described = {
        "BudgetName": model["BudgetName"],
        "BudgetLimit": {"Amount": "15", "Unit": "USD"},
        "TimeUnit": "MONTHLY",
        "BudgetType": "COST",
        "FilterExpression": model["FilterExpression"],  # as the Budgets API returns it
        "Metrics": model["Metrics"],
    }
    with Stubber(client) as stub:
        stub.add_response(
            "describe_budget",
            {"Budget": described},
            {"AccountId": "111111111111", "BudgetName": model["BudgetName"]},
        )
        assert billing.budget_services(client, "111111111111", model["BudgetName"]) == services
