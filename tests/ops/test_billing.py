"""billing-services finds every service string model spend lands under (the Marketplace trap)."""

from __future__ import annotations

from datetime import date

from ops import billing

from .conftest import MARKETPLACE, canned_costs, cost_group

TODAY = date(2027, 1, 15)


def _bill(aws_env):
    canned_costs(
        [
            [
                cost_group("Amazon Bedrock", "0.40"),
                cost_group(MARKETPLACE, "3.10"),
                cost_group("AWS Lambda", "0.02"),
            ],
            [
                cost_group("Amazon Bedrock", "0.10"),
                cost_group(MARKETPLACE, "1.00"),
                cost_group("Amazon DynamoDB", "0"),
            ],
        ]
    )
    return billing.costs_by_service(aws_env.client("ce"), today=TODAY)


def _budget(aws_env, services):
    budgets = aws_env.client("budgets")
    account = aws_env.client("sts").get_caller_identity()["Account"]
    budgets.create_budget(
        AccountId=account,
        Budget={
            "BudgetName": "chatguard-model",
            "BudgetLimit": {"Amount": "15", "Unit": "USD"},
            "TimeUnit": "MONTHLY",
            "BudgetType": "COST",
            "CostFilters": {"Service": services},
        },
    )
    return billing.budget_services(budgets, account, "chatguard-model")


def test_costs_are_summed_per_service_over_the_last_30_days(aws_env):
    start, end, totals = _bill(aws_env)
    assert (start, end) == ("2026-12-16", "2027-01-15")
    assert totals[MARKETPLACE] == billing.Decimal("4.10")
    assert totals["Amazon Bedrock"] == billing.Decimal("0.50")


def test_a_budget_filtered_to_amazon_bedrock_alone_is_warned_about(aws_env):
    start, end, totals = _bill(aws_env)
    covered = _budget(aws_env, ["Amazon Bedrock"])
    report = billing.report(start, end, totals, covered, "budget chatguard-model")
    assert report["model_services"] == ["Amazon Bedrock", MARKETPLACE]
    assert report["missing"] == [MARKETPLACE]
    assert report["services"][0] == {"service": MARKETPLACE, "usd": "4.10"}
    assert "Amazon DynamoDB" not in [row["service"] for row in report["services"]]  # zero spend
    assert f"WARNING: model spend lands under {MARKETPLACE!r}" in billing.render(report)


def test_a_budget_listing_every_model_service_passes(aws_env):
    start, end, totals = _bill(aws_env)
    covered = _budget(aws_env, ["Amazon Bedrock", MARKETPLACE])
    report = billing.report(start, end, totals, covered, "budget chatguard-model")
    assert report["missing"] == []
    assert "WARNING" not in billing.render(report)


def test_pages_of_cost_explorer_are_all_read():
    class Paged:
        def __init__(self):
            self.tokens = []

        def get_cost_and_usage(self, **kwargs):
            self.tokens.append(kwargs.get("NextPageToken"))
            groups = (
                [cost_group("Amazon Bedrock", "1.00")]
                if len(self.tokens) == 1
                else [cost_group(MARKETPLACE, "2.00")]
            )
            page = {"ResultsByTime": [{"Groups": groups}]}
            if len(self.tokens) == 1:
                page["NextPageToken"] = "p2"
            return page

    client = Paged()
    _, _, totals = billing.costs_by_service(client, today=TODAY)
    assert client.tokens == [None, "p2"] and set(totals) == {"Amazon Bedrock", MARKETPLACE}
