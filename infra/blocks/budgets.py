"""Two AWS Budgets: the model's own spend, and the whole account as the backstop.

Budgets are slow (billing data lags by hours) and never stop anything: they are the check
that shares no code with the request path. The first is filtered on every service string the
model bills under: a third-party model on Bedrock may bill through AWS Marketplace under its
own name, which a filter on "Amazon Bedrock" alone would miss. The second has no filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from aws_cdk import aws_budgets as budgets
from aws_cdk import aws_sns as sns
from constructs import Construct

COST_METRIC = "UnblendedCost"
# (type, percent): actual 80 % and 100 %, forecasted 80 %.
NOTIFICATIONS = (("ACTUAL", 80), ("ACTUAL", 100), ("FORECASTED", 80))


def service_filter(services: Sequence[str]) -> budgets.CfnBudget.ExpressionProperty:
    """The model budget's filter: SERVICE equals any of the billing service strings.

    FilterExpression, not CostFilters: CloudFormation's AWS::Budgets::Budget BudgetData
    documents FilterExpression (an Expression, as in the Budgets API) beside the older
    CostFilters map, and aws-cdk-lib 2.275's CfnBudget.BudgetDataProperty types it
    (filter_expression, metrics). The two cannot be combined on one budget; the expression
    is the form the Budgets API describes today, and `chatguard billing-services` reads
    both forms back from a deployed budget.
    """
    return budgets.CfnBudget.ExpressionProperty(
        dimensions=budgets.CfnBudget.ExpressionDimensionValuesProperty(
            key="SERVICE", values=list(services), match_options=["EQUALS"]
        )
    )


class SpendBudgets(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name_prefix: str,
        model_budget_usd: Decimal,
        account_budget_usd: Decimal,
        billing_services: Sequence[str],
        topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        self.model_budget_name = f"{name_prefix}-model-monthly"
        self.model = self._budget(
            "Model",
            self.model_budget_name,
            model_budget_usd,
            topic,
            service_filter(billing_services),
        )
        self.account = self._budget(
            "Account", f"{name_prefix}-account-monthly", account_budget_usd, topic, None
        )

    def _budget(
        self,
        construct_id: str,
        name: str,
        amount: Decimal,
        topic: sns.ITopic,
        filter_expression: budgets.CfnBudget.ExpressionProperty | None,
    ) -> budgets.CfnBudget:
        return budgets.CfnBudget(
            self,
            construct_id,
            budget=budgets.CfnBudget.BudgetDataProperty(
                budget_name=name,
                budget_type="COST",
                time_unit="MONTHLY",
                budget_limit=budgets.CfnBudget.SpendProperty(amount=float(amount), unit="USD"),
                filter_expression=filter_expression,
                # FilterExpression budgets name the cost metric they sum (the console's
                # default); CostFilters budgets implied it.
                metrics=[COST_METRIC],
            ),
            notifications_with_subscribers=[
                budgets.CfnBudget.NotificationWithSubscribersProperty(
                    notification=budgets.CfnBudget.NotificationProperty(
                        notification_type=kind,
                        comparison_operator="GREATER_THAN",
                        threshold=percent,
                        threshold_type="PERCENTAGE",
                    ),
                    subscribers=[
                        budgets.CfnBudget.SubscriberProperty(
                            subscription_type="SNS", address=topic.topic_arn
                        )
                    ],
                )
                for kind, percent in NOTIFICATIONS
            ],
        )
