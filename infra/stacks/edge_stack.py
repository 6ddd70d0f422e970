"""Edge stack, us-east-1: the CLOUDFRONT web ACL and the alarm on its rate rule."""

from __future__ import annotations

from aws_cdk import CfnOutput, Environment, Stack
from constructs import Construct

from infra.blocks.alert_topic import AlertTopic
from infra.blocks.edge_firewall import RATE_RULE, EdgeFirewall
from infra.blocks.monitoring import EdgeMonitoring
from infra.config import DeployConfig


class EdgeStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stack_name: str,
        config: DeployConfig,
        env: Environment,
    ) -> None:
        # cross_region_references: the chat stack (another Region) uses the web ACL's ARN.
        super().__init__(
            scope, construct_id, stack_name=stack_name, env=env, cross_region_references=True
        )
        firewall = EdgeFirewall(
            self,
            "Firewall",
            name=f"{self.stack_name}-chat",
            edge=config.edge,
            body_max_bytes=config.settings.body_max_bytes,
        )
        # Alarm actions must be in the alarm's Region: the edge has its own topic.
        alerts = AlertTopic(self, "Alerts", emails=config.ops.alert_emails, allow_budgets=False)
        EdgeMonitoring(
            self,
            "Monitoring",
            web_acl_name=firewall.web_acl_name,
            rule_name=RATE_RULE,
            threshold=config.edge.waf_blocked_alarm_threshold,
            topic=alerts.topic,
        )
        self.web_acl_arn = firewall.web_acl.attr_arn
        CfnOutput(self, "WebAclArn", value=self.web_acl_arn)
