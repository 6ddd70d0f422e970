"""API Gateway REST (REGIONAL): POST /chat starts the Express workflow synchronously.

Bad bodies are refused by the request validator against the contract's schema before any
execution starts; the integration response turns the execution's ``{statusCode, body}``
into the HTTP reply. Access logs hold no IP address (API Gateway only ever sees
CloudFront's, and chatguard logs none at all).
"""

from __future__ import annotations

import json

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra import nag, vtl
from infra.contract_schema import request_schema

from .alarms import FIVE_MINUTES, alarm

STAGE = "prod"
JSON = "application/json"
ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "time": "$context.requestTimeEpoch",
    "method": "$context.httpMethod",
    "path": "$context.resourcePath",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "latencyMs": "$context.responseLatency",
    "integrationLatencyMs": "$context.integrationLatency",
    "integrationStatus": "$context.integration.status",
    "error": "$context.error.messageString",
    "validationError": "$context.error.validationErrorString",
}
GATEWAY_ERRORS = {
    apigw.ResponseType.BAD_REQUEST_BODY: "The request body does not match the chat contract.",
    apigw.ResponseType.THROTTLED: "The chat is busy right now. Please try again in a moment.",
    apigw.ResponseType.DEFAULT_4_XX: "The request was refused.",
    apigw.ResponseType.DEFAULT_5_XX: vtl.UNAVAILABLE,
}


class ChatApi(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine: sfn.IStateMachine,
        throttle_rate: int,
        throttle_burst: int,
        integration_timeout: Duration,
        cross_origin: bool,
        log_retention: logs.RetentionDays,
        topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
        )
        self.api = apigw.RestApi(
            self,
            "Api",
            # Named after the stack: the 5XX alarm filters on ApiName, so a generic name would
            # let any other API of that name in the account and Region feed it.
            rest_api_name=Stack.of(self).stack_name,
            description="chatguard chat API behind CloudFront",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=True,
            deploy_options=apigw.StageOptions(
                stage_name=STAGE,
                throttling_rate_limit=throttle_rate,
                throttling_burst_limit=throttle_burst,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS)),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,  # would log request bodies: visitors' messages
                metrics_enabled=True,
                tracing_enabled=True,
            ),
        )
        self._gateway_responses()
        self.invoke_role = iam.Role(
            self,
            "StartSyncExecutionRole",
            assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"),
            description="chatguard API: start the chat workflow synchronously, nothing else",
        )
        self.invoke_role.add_to_policy(
            iam.PolicyStatement(
                actions=["states:StartSyncExecution"], resources=[state_machine.state_machine_arn]
            )
        )
        self.method = self._chat_method(state_machine, integration_timeout)
        if cross_origin:
            self._preflight()
        self.server_errors = alarm(
            self,
            "Api5xx",
            metric=self.api.metric_server_error(period=FIVE_MINUTES, statistic="Sum"),
            threshold=1,
            description="API Gateway answered 5XX (workflow failed, timed out, or mapping error).",
            topic=topic,
        )
        self._suppressions()

    def _chat_method(self, state_machine: sfn.IStateMachine, timeout: Duration) -> apigw.Method:
        integration = apigw.AwsIntegration(
            service="states",
            action="StartSyncExecution",
            integration_http_method="POST",
            options=apigw.IntegrationOptions(
                credentials_role=self.invoke_role,
                passthrough_behavior=apigw.PassthroughBehavior.NEVER,
                request_templates={JSON: vtl.request_template(state_machine.state_machine_arn)},
                timeout=timeout,
                integration_responses=[
                    apigw.IntegrationResponse(
                        status_code="200", response_templates={JSON: vtl.response_template()}
                    ),
                    apigw.IntegrationResponse(
                        selection_pattern=r"[45]\d{2}",
                        status_code="503",
                        response_templates={JSON: vtl.error_template()},
                    ),
                ],
            ),
        )
        model = apigw.Model(
            self,
            "ChatRequestModel",
            rest_api=self.api,
            content_type=JSON,
            description=(
                "POST /chat body: steps/lib/request/openapi.json ChatRequest with $refs inlined"
            ),
            schema=apigw.JsonSchema(type=apigw.JsonSchemaType.OBJECT),
        )
        # The typed JsonSchema cannot hold the contract as-is; the generated one replaces it.
        model.node.default_child.add_property_override("Schema", request_schema())  # type: ignore[union-attr]
        validator = apigw.RequestValidator(
            self,
            "BodyValidator",
            rest_api=self.api,
            validate_request_body=True,
            validate_request_parameters=True,
        )
        responses = [
            apigw.MethodResponse(status_code=code, response_models={JSON: apigw.Model.EMPTY_MODEL})
            for code in ("200", "400", "403", "429", "503")
        ]
        return self.api.root.add_resource("chat").add_method(
            "POST",
            integration,
            authorization_type=apigw.AuthorizationType.NONE,
            request_validator=validator,
            request_models={JSON: model},
            method_responses=responses,
        )

    def _preflight(self) -> None:
        """OPTIONS /chat answers 204 by itself (a mock integration): a CORS preflight never
        starts an execution. Which origin may read the answers is CloudFront's CORS
        configuration (site_distribution.py); this only makes the preflight succeed."""
        chat = self.api.root.get_resource("chat")
        assert chat is not None
        chat.add_method(
            "OPTIONS",
            apigw.MockIntegration(
                passthrough_behavior=apigw.PassthroughBehavior.NEVER,
                request_templates={JSON: json.dumps({"statusCode": 204})},
                integration_responses=[apigw.IntegrationResponse(status_code="204")],
            ),
            authorization_type=apigw.AuthorizationType.NONE,
            method_responses=[apigw.MethodResponse(status_code="204")],
        )

    def _gateway_responses(self) -> None:
        for kind, message in GATEWAY_ERRORS.items():
            self.api.add_gateway_response(
                f"Gateway{kind.response_type}",
                type=kind,
                templates={JSON: json.dumps({"error": message})},
            )

    def _suppressions(self) -> None:
        public = (
            "The chat is public and anonymous by design; every request must carry the secret "
            "origin header that only CloudFront adds, and the workflow checks it first."
        )
        nag.suppress(self.api, "APIG4", public)
        nag.suppress(self.api, "COG4", public)
        nag.suppress(
            self.api,
            "APIG3",
            "The web ACL is attached to the CloudFront distribution in front of this API, where "
            "the rate rule sees the viewer's address; direct calls fail the origin check.",
        )
        nag.suppress(
            self.api,
            "IAM4",
            "API Gateway's account-level logging role uses the AWS managed policy made for "
            "exactly that purpose.",
            applies_to=[
                "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AmazonAPIGatewayPushToCloudWatchLogs"
            ],
        )
