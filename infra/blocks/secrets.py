"""The three SSM SecureString secrets, generated at deploy time by a custom resource.

The values never pass through CDK: the template holds only parameter names, and the origin
secret reaches CloudFront as a NoEcho attribute of the custom resource (the README's
"Deploy to AWS" says where it is then visible and how `chatguard rotate` keeps both sides
in step).
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import CustomResource, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import nag
from infra.permissions import parameter_arn

from .pipeline_step import ARCHITECTURE, RUNTIME

CODE_DIR = Path(__file__).resolve().parents[1] / "secret_generator"
RESOURCE_TYPE = "Custom::ChatguardSecret"


class GeneratedSecrets(Construct):
    """One generator function, one custom resource per parameter name."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        names: dict[str, str],
        exposed: str,
        read_nonce: str,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        arns = [parameter_arn(self, name) for name in names.values()]
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="chatguard secret generator: create, read and delete its three parameters",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["ssm:PutParameter", "ssm:GetParameter", "ssm:DeleteParameter"],
                resources=arns,
            )
        )
        log_group = logs.LogGroup(
            self, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
        )
        log_group.grant_write(role)
        self.function = lambda_.Function(
            self,
            "Generator",
            description="chatguard: generates SecureString secrets at deploy time",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler="index.handler",
            code=lambda_.Code.from_asset(str(CODE_DIR), exclude=["__pycache__", "*.pyc"]),
            timeout=Duration.seconds(60),
            memory_size=128,
            role=role,
            log_group=log_group,
        )
        self.parameters: dict[str, CustomResource] = {}
        for key, name in names.items():
            self.parameters[key] = CustomResource(
                self,
                key.title().replace("_", ""),
                service_token=self.function.function_arn,
                resource_type=RESOURCE_TYPE,
                properties={
                    "ParameterName": name,
                    "Description": f"chatguard {key.replace('_', ' ')}: JSON current/previous",
                    **({"Expose": "current", "ReadNonce": read_nonce} if key == exposed else {}),
                },
            )
        self.names = dict(names)
        self.exposed_value = self.parameters[exposed].get_att_string("Value")
        nag.suppress(self.function, "L1", nag.RUNTIME_REASON)
