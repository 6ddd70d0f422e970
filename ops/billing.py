"""`chatguard billing-services`: where does the model spend actually land on the bill?

A third-party model on Bedrock can bill through AWS Marketplace under its own service
string (e.g. "Claude Haiku 4.5 (Amazon Bedrock Edition)"), not "Amazon Bedrock". A budget
filtered to "Amazon Bedrock" alone would then miss the biggest line item. This command
groups the last 30 days of Cost Explorer by SERVICE, lists every string that looks like
model spend, and warns about each one the filtered budget does not cover.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, TypedDict

from .render import table

MODEL_MARKER = "bedrock"
LOOKBACK_DAYS = 30


class BillingReport(TypedDict):
    start: str
    end: str
    services: list[dict[str, str]]  # every service with spend, dearest first
    model_services: list[str]
    budget_source: str
    budget_services: list[str]
    missing: list[str]


def costs_by_service(ce: Any, *, today: date | None = None) -> tuple[str, str, dict[str, Decimal]]:
    """Unblended cost per SERVICE over the last 30 days (all pages, all periods summed)."""
    end = today or datetime.now(UTC).date()
    start = end - timedelta(days=LOOKBACK_DAYS)
    kwargs: dict[str, Any] = {
        "TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()},
        "Granularity": "MONTHLY",
        "Metrics": ["UnblendedCost"],
        "GroupBy": [{"Type": "DIMENSION", "Key": "SERVICE"}],
    }
    totals: dict[str, Decimal] = defaultdict(Decimal)
    while True:
        page = ce.get_cost_and_usage(**kwargs)
        for period in page.get("ResultsByTime", []):
            for group in period.get("Groups", []):
                amount = group.get("Metrics", {}).get("UnblendedCost", {}).get("Amount", "0")
                totals[group["Keys"][0]] += Decimal(amount)
        token = page.get("NextPageToken")
        if not token:
            return start.isoformat(), end.isoformat(), dict(totals)
        kwargs["NextPageToken"] = token


def budget_services(budgets: Any, account_id: str, budget_name: str) -> list[str]:
    """The SERVICE values the budget is filtered to (CostFilters, or the newer FilterExpression)."""
    budget = budgets.describe_budget(AccountId=account_id, BudgetName=budget_name)["Budget"]
    services = list(budget.get("CostFilters", {}).get("Service", []))
    dimension = (budget.get("FilterExpression") or {}).get("Dimensions") or {}
    if dimension.get("Key") == "SERVICE":
        services += dimension.get("Values", [])
    return services


def report(
    start: str, end: str, totals: dict[str, Decimal], covered: list[str], source: str
) -> BillingReport:
    model = sorted(s for s in totals if MODEL_MARKER in s.lower())
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    return BillingReport(
        start=start,
        end=end,
        services=[{"service": s, "usd": f"{v:.2f}"} for s, v in ranked if v > 0 or s in model],
        model_services=model,
        budget_source=source,
        budget_services=sorted(covered),
        missing=[s for s in model if s not in covered],
    )


def render(r: BillingReport) -> str:
    rows = [
        [row["service"], "$" + row["usd"], "model" if row["service"] in r["model_services"] else ""]
        for row in r["services"]
    ]
    lines = [f"cost by service, {r['start']} .. {r['end']} (Cost Explorer, UnblendedCost)"]
    lines.append(table(["service", "cost", ""], rows) if rows else "  (no spend in the period)")
    lines.append("")
    lines.append(
        f"filtered budget ({r['budget_source']}) covers: {', '.join(r['budget_services']) or '-'}"
    )
    for service in r["missing"]:
        lines.append(
            f"WARNING: model spend lands under {service!r}, which the filtered budget misses"
        )
    if not r["missing"]:
        lines.append("ok: every service string the model spend lands under is in the budget filter")
    return "\n".join(lines)
