"""Chat stack: data, secrets, guardrail, the seven steps, workflow, API, CDN, budgets, alarms.

Each step's grants sit in ``_steps``, one list per step. The settings each step is told
(its CHATGUARD_* environment variables, among them the names of what it was granted) are
listed in infra/step_wiring.py, which a test keeps equal to what each step's code reads
(tests/infra/test_step_wiring.py); ``_environment`` turns that list into variables.
"""

from __future__ import annotations

from aws_cdk import Annotations, CfnOutput, Duration, Environment, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import index_check, nag
from infra import permissions as allow
from infra.blocks.alert_topic import AlertTopic
from infra.blocks.budgets import SpendBudgets
from infra.blocks.chat_api import ChatApi
from infra.blocks.guardrail import ChatGuardrail
from infra.blocks.ledger_table import LEDGER_TABLE_OUTPUT, LedgerTable
from infra.blocks.monitoring import ChatMonitoring
from infra.blocks.pipeline_step import PipelineStep
from infra.blocks.secrets import GeneratedSecrets
from infra.blocks.site_distribution import SiteDistribution
from infra.blocks.workflow import ChatWorkflow
from infra.bundling import (
    index_carries,
    index_embedder,
    index_site,
    stage_embedder,
    step_asset,
    step_code,
)
from infra.config import RETENTION_DAYS, DeployConfig
from infra.step_wiring import STEP_SETTINGS
from steps.lib.money.ledger_items import shard_pks
from steps.lib.providers.models import embedder_kind
from steps.lib.runtime.settings import MAX_SHARDS, PROJECT_ROOT, Settings, cdk_context
from steps.lib.runtime.stages import STAGES, Stage

WIDGET_DIR = PROJECT_ROOT / "widget"
DEMO_PAGE = PROJECT_ROOT / "infra" / "site" / "index.html"


class ChatStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        env: Environment,
        web_acl_arn: str,
        read_nonce: str,
        stand_in_index: bool = False,
    ) -> None:
        super().__init__(scope, construct_id, env=env, cross_region_references=True)
        s, ops, edge = config.settings, config.ops, config.edge
        # Names unique per account (budgets, CloudFront policies): stack and Region, so a
        # second copy can deploy in another Region of the same account.
        account_unique = f"{self.stack_name}-{self.region}"
        self.retention = getattr(logs.RetentionDays, RETENTION_DAYS[ops.log_retention_days])
        self.alerts = AlertTopic(self, "Alerts", emails=ops.alert_emails, allow_budgets=True)
        self.ledger = LedgerTable(self, "Ledger", deletion_protection=ops.deletion_protection)
        self.secrets = GeneratedSecrets(
            self,
            "Secrets",
            names={
                "origin_secret": s.origin_secret_param,
                "visitor_salt": s.salt_param,
                "signing_key": s.signing_key_param,
            },
            exposed="origin_secret",
            read_nonce=read_nonce,
            log_retention=self.retention,
        )
        self.guardrail = ChatGuardrail(
            self, "Guardrail", name=f"{self.stack_name}-chat", denied_topics=ops.denied_topics
        )
        runtime = s.replace(
            # Named by CloudFormation (blocks/ledger_table.py): the steps read it from here.
            table_name=self.ledger.table.table_name,
            guardrail_id=self.guardrail.guardrail.attr_guardrail_id,
            guardrail_version=self.guardrail.version.attr_version,
            guardrail_policy_count=self.guardrail.policy_count,
        )
        runtime = self._check_index(runtime, stand_in_index)
        self.steps = self._steps(runtime, config)
        self.workflow = ChatWorkflow(
            self,
            "Workflow",
            functions={state: step.target for state, step in self.steps.items()},
            # Shorter than API Gateway waits, so a TIMED_OUT execution maps to its 503.
            timeout=Duration.seconds(edge.workflow_timeout_seconds),
            log_retention=self.retention,
            topic=self.alerts.topic,
        )
        self.api = ChatApi(
            self,
            "ChatApi",
            state_machine=self.workflow.state_machine,
            throttle_rate=edge.api_throttle_rate,
            throttle_burst=edge.api_throttle_burst,
            integration_timeout=Duration.seconds(edge.integration_timeout_seconds),
            cross_origin=bool(edge.site_origins),
            log_retention=self.retention,
            topic=self.alerts.topic,
        )
        self.site = SiteDistribution(
            self,
            "Site",
            api=self.api.api,
            name_prefix=account_unique,
            site_origins=edge.site_origins,
            origin_secret=self.secrets.exposed_value,
            web_acl_arn=web_acl_arn,
            origin_timeout=Duration.seconds(edge.origin_timeout_seconds),
            widget_dir=WIDGET_DIR,
            demo_page=DEMO_PAGE,
        )
        self.budgets = SpendBudgets(
            self,
            "Budgets",
            name_prefix=account_unique,
            model_budget_usd=ops.budget_usd,
            account_budget_usd=ops.account_budget_usd,
            billing_services=ops.billing_services,
            topic=self.alerts.topic,
        )
        self.monitoring = ChatMonitoring(
            self,
            "Monitoring",
            steps=list(self.steps.values()),
            state_machine=self.workflow.state_machine,
            api=self.api.api,
            settings=s,
            ops=ops,
            topic=self.alerts.topic,
        )
        self._outputs()

    def _steps(self, runtime: Settings, config: DeployConfig) -> dict[str, PipelineStep]:
        table = self.ledger.table.table_arn
        params = {name: allow.parameter_arn(self, name) for name in self.secrets.names.values()}
        # The day/month totals: GLOBAL and GLOBAL#1..15, every shard that can exist, not only
        # this deploy's ceiling_shards: a month keeps the count recorded by its first
        # reservation (ledger_items.py), so after N is lowered mid-month the steps still
        # settle and reserve on the higher shards until the month ends, not 503.
        totals = shard_pks(MAX_SHARDS)
        grants: dict[str, list[iam.PolicyStatement]] = {
            "OriginVerify": [allow.read_parameter(params[runtime.origin_secret_param])],
            "Quota": [
                allow.items(table, ["UpdateItem"], ["VISITOR#*"]),
                allow.read_parameter(params[runtime.salt_param]),
            ],
            "CostGate": [
                allow.items(table, ["UpdateItem"], [*totals, "VISITOR#*"]),
                # The month's opening checks every shard's month item (month_opening.py).
                allow.items(table, ["ConditionCheckItem"], totals),
                allow.items(table, ["PutItem"], ["RES#*"]),
                allow.items(table, ["ConditionCheckItem", "GetItem"], ["CONFIG"]),
            ],
            "Retrieve": allow.embed(runtime),
            "Invoke": [
                *allow.converse(runtime.model_id),
                *allow.count_tokens(runtime),
                allow.apply_guardrail(self.guardrail.guardrail.attr_guardrail_arn),
                allow.read_parameter(params[runtime.signing_key_param]),
            ],
            "Reconcile": [
                # PutItem: a cut S3's request id is voided when it reserved nothing
                # (ledger.release_by_request), so a late transaction cannot land.
                allow.items(table, ["UpdateItem", "GetItem", "PutItem"], ["RES#*"]),
                allow.items(table, ["UpdateItem"], [*totals, "VISITOR#*"]),
            ],
            "Degraded": [],  # the bundled index only: no AWS call at all
        }
        assets = {s.state: step_asset(s, stage_embedder(s, runtime)) for s in STAGES}
        codes = {asset: step_code(asset) for asset in set(assets.values())}
        steps = {
            stage.state: PipelineStep(
                self,
                stage.state,
                stage=stage,
                code=codes[assets[stage.state]],
                environment=_environment(runtime, stage),
                statements=grants[stage.state],
                log_retention=self.retention,
                reserved_concurrency=config.ops.reserved_concurrency.get(stage.state),
                topic=self.alerts.topic,
                snap_start=config.ops.snap_start,
            )
            for stage in STAGES
        }
        nag.suppress(
            steps["Invoke"].role,
            "IAM5",
            "An inference profile routes the call to the same model in other Regions, so the "
            "model ARN has a Region wildcard; the condition only allows it through this profile.",
            applies_to=[
                nag.regex(r"^Resource::arn:<AWS::Partition>:bedrock:\*?::foundation-model/.*$")
            ],
        )
        return steps

    def _check_index(self, runtime: Settings, stand_in_allowed: bool) -> Settings:
        """Stop synthesis when the bundled index was embedded by another model than Retrieve
        uses (every message would fail closed), lacks the local model's vectors the
        degraded answer ranks with, or is stale: built from another site than the one
        deployed, or before its pages last changed. A stand-in allowed on purpose is a
        warning. Returns the settings with how S7 ranks, as the index allows."""
        wanted = index_check.wanted_embedder(
            runtime.model_backend,
            runtime.embedding_model_id,
            runtime.embedding_dimensions,
            runtime.embedder,
        )
        shown = str(
            self.node.try_get_context(index_check.SITE_DIR_CONTEXT)
            or cdk_context().get("chatguard/index", {}).get("site_dir")
            or "examples/site"
        )
        warning = index_check.check(
            index_embedder(),
            wanted=wanted,
            dimensions=index_check.wanted_dimensions(
                runtime.embedding_dimensions, runtime.embedder
            ),
            stand_in_allowed=stand_in_allowed,
            site=shown,
        )
        if warning:
            Annotations.of(self).add_warning_v2("chatguard:index-embedder", warning)
        stale = index_check.check_site(
            index_site(),
            PROJECT_ROOT / shown,
            shown=shown,
            stand_in_allowed=stand_in_allowed,
            command=index_check.rebuild_command(wanted),
        )
        if stale:
            Annotations.of(self).add_warning_v2("chatguard:index-site", stale)
        degraded, lexical = index_check.check_degraded(
            index_carries(),
            embedder=embedder_kind(runtime),
            degraded_embedder=runtime.degraded_embedder,
            stand_in_allowed=stand_in_allowed,
            site=shown,
        )
        if lexical:
            Annotations.of(self).add_warning_v2("chatguard:index-degraded", lexical)
        return runtime.replace(degraded_embedder=degraded)

    def _outputs(self) -> None:
        CfnOutput(self, "SiteUrl", value=f"https://{self.site.distribution.domain_name}")
        CfnOutput(self, "DistributionId", value=self.site.distribution.distribution_id)
        CfnOutput(self, "ApiId", value=self.api.api.rest_api_id)
        # Not a secret: a direct call without the origin header is refused (chatguard verify).
        CfnOutput(self, "ApiUrl", value=self.api.api.url_for_path("/chat"))
        CfnOutput(self, "ModelBudgetName", value=self.budgets.model_budget_name)
        CfnOutput(self, LEDGER_TABLE_OUTPUT, value=self.ledger.table.table_name)
        CfnOutput(self, "StateMachineArn", value=self.workflow.state_machine.state_machine_arn)
        CfnOutput(self, "AlertTopicArn", value=self.alerts.topic.topic_arn)


def _environment(runtime: Settings, stage: Stage) -> dict[str, str]:
    names = STEP_SETTINGS[stage.state]
    env = runtime.to_env(*names) if names else {}  # to_env() with no name means every one
    # Powertools: JSON logs at INFO (one line in, one out), EMF metrics under our namespace.
    env["POWERTOOLS_SERVICE_NAME"] = "chatguard"
    env["POWERTOOLS_LOG_LEVEL"] = "INFO"
    return env
