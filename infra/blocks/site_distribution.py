"""CloudFront in front of everything: the widget bucket by default, the chat API on /chat*.

The /chat* behavior is the wiring that lets the edge layers apply to the chat route: caching
disabled (a reply is never served to another visitor), every method allowed (POST), the
viewer address forwarded only through an origin request policy, the secret origin header
added on the way to API Gateway, security headers on the way back. ``Host`` is never
forwarded: API Gateway routes on its own host name.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from infra import nag
from infra.vtl import ORIGIN_HEADER, VIEWER_ADDRESS
from steps.lib.request.cors import ALLOWED_HEADERS, ALLOWED_METHODS, PREFLIGHT_MAX_AGE_SECONDS

CHAT_PATH = "/chat*"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
NO_IP_LOGS = (
    "Access logs would store viewer IP addresses, which chatguard never stores; WAF metrics "
    "and sampled requests, API access logs and per-step logs cover operations."
)


class SiteDistribution(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        api: apigw.RestApi,
        name_prefix: str,
        site_origins: tuple[str, ...],
        origin_secret: str,
        web_acl_arn: str,
        origin_timeout: Duration,
        widget_dir: Path,
        demo_page: Path,
    ) -> None:
        super().__init__(scope, construct_id)
        # CloudFront policies and origin access controls are named per account, not per
        # Region: the prefix (stack and Region) lets a second copy deploy in another Region.
        self.name_prefix = name_prefix
        self.site_origins = site_origins
        self.bucket = s3.Bucket(
            self,
            "Assets",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            # Only rebuildable files live here (the widget and the demo page).
            removal_policy=RemovalPolicy.DESTROY,
            auto_delete_objects=True,
        )
        security = self._security_headers("SecurityHeaders", no_store=False)
        self.distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment="chatguard: widget and chat API",
            default_root_object="index.html",
            web_acl_id=web_acl_arn,
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.S3BucketOrigin.with_origin_access_control(
                    self.bucket,
                    origin_access_control=cloudfront.S3OriginAccessControl(
                        self,
                        "AssetsAccess",
                        origin_access_control_name=f"{name_prefix}-assets",
                        description="chatguard: CloudFront reads the widget bucket",
                    ),
                ),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
                cache_policy=cloudfront.CachePolicy.CACHING_OPTIMIZED,
                response_headers_policy=security,
                compress=True,
            ),
            additional_behaviors={
                CHAT_PATH: self._chat_behavior(api, origin_secret, origin_timeout),
            },
        )
        self._deploy_assets(widget_dir, demo_page)
        nag.suppress(self.bucket, "S1", NO_IP_LOGS)
        nag.suppress(self.distribution, "CFR3", NO_IP_LOGS)
        nag.suppress(
            self.distribution,
            "CFR1",
            "A public website chat is meant for every country; abuse is limited by the rate "
            "rule, the per-visitor quota and the cost ceilings instead.",
        )
        nag.suppress(
            self.distribution,
            "CFR4",
            "The default cloudfront.net certificate allows older TLS versions for viewers; "
            "attach a custom domain and certificate to enforce TLS 1.2 (README: Deploy to AWS).",
        )

    def _chat_behavior(
        self, api: apigw.RestApi, origin_secret: str, origin_timeout: Duration
    ) -> cloudfront.BehaviorOptions:
        api_origin = origins.HttpOrigin(
            f"{api.rest_api_id}.execute-api.{api.env.region}.amazonaws.com",
            origin_path=f"/{api.deployment_stage.stage_name}",
            protocol_policy=cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
            origin_ssl_protocols=[cloudfront.OriginSslPolicy.TLS_V1_2],
            # CloudFront replaces any viewer-sent header of the same name with this value.
            custom_headers={ORIGIN_HEADER: origin_secret},
            read_timeout=origin_timeout,
        )
        forwarded = cloudfront.OriginRequestPolicy(
            self,
            "ChatOriginRequest",
            origin_request_policy_name=f"{self.name_prefix}-chat-origin-request",
            comment="chatguard /chat: viewer address and content type only (never Host)",
            header_behavior=cloudfront.OriginRequestHeaderBehavior.allow_list(
                VIEWER_ADDRESS, "Content-Type"
            ),
            query_string_behavior=cloudfront.OriginRequestQueryStringBehavior.none(),
            cookie_behavior=cloudfront.OriginRequestCookieBehavior.none(),
        )
        return cloudfront.BehaviorOptions(
            origin=api_origin,
            viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
            allowed_methods=cloudfront.AllowedMethods.ALLOW_ALL,
            cache_policy=cloudfront.CachePolicy.CACHING_DISABLED,
            origin_request_policy=forwarded,
            response_headers_policy=self._security_headers(
                "ChatSecurityHeaders", no_store=True, cors_origins=self.site_origins
            ),
            compress=False,
        )

    def _security_headers(
        self, construct_id: str, *, no_store: bool, cors_origins: tuple[str, ...] = ()
    ) -> cloudfront.ResponseHeadersPolicy:
        custom = (
            cloudfront.ResponseCustomHeadersBehavior(
                custom_headers=[
                    cloudfront.ResponseCustomHeader(
                        header="Cache-Control", value="no-store", override=True
                    )
                ]
            )
            if no_store
            else None
        )
        return cloudfront.ResponseHeadersPolicy(
            self,
            construct_id,
            response_headers_policy_name=f"{self.name_prefix}-{construct_id}",
            comment="chatguard security headers" + (" (chat: no-store)" if no_store else ""),
            security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
                content_security_policy=cloudfront.ResponseHeadersContentSecurityPolicy(
                    content_security_policy=CONTENT_SECURITY_POLICY, override=True
                ),
                content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
                frame_options=cloudfront.ResponseHeadersFrameOptions(
                    frame_option=cloudfront.HeadersFrameOption.DENY, override=True
                ),
                referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(
                    referrer_policy=cloudfront.HeadersReferrerPolicy.STRICT_ORIGIN_WHEN_CROSS_ORIGIN,
                    override=True,
                ),
                strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                    access_control_max_age=Duration.days(730),
                    include_subdomains=True,
                    override=True,
                ),
            ),
            custom_headers_behavior=custom,
            cors_behavior=_cors(cors_origins),
        )

    def _deploy_assets(self, widget_dir: Path, demo_page: Path) -> None:
        s3deploy.BucketDeployment(
            self,
            "Widget",
            sources=[s3deploy.Source.asset(str(widget_dir))],
            destination_bucket=self.bucket,
            destination_key_prefix="widget/",
            distribution=self.distribution,
            distribution_paths=["/widget/*"],
        )
        s3deploy.BucketDeployment(
            self,
            "DemoPage",
            sources=[s3deploy.Source.asset(str(demo_page.parent))],
            destination_bucket=self.bucket,
            prune=False,  # the widget deployment owns widget/; never delete it from here
            distribution=self.distribution,
            distribution_paths=["/index.html"],
        )
        # BucketDeployment's function is a stack-level singleton created by CDK.
        for child in Stack.of(self).node.children:
            if child.node.id.startswith("Custom::CDKBucketDeployment"):
                nag.suppress_cdk_helper(child)


def _cors(origins: tuple[str, ...]) -> cloudfront.ResponseHeadersCorsBehavior | None:
    """The /chat allow-list (cdk.json site_origins), applied by CloudFront: it answers
    Access-Control-Allow-Origin only when the request's Origin is one of them, never "*",
    never with credentials. Empty: no CORS headers at all (same-origin only)."""
    if not origins:
        return None
    return cloudfront.ResponseHeadersCorsBehavior(
        access_control_allow_origins=list(origins),
        access_control_allow_methods=list(ALLOWED_METHODS),
        access_control_allow_headers=list(ALLOWED_HEADERS),
        access_control_allow_credentials=False,
        access_control_max_age=Duration.seconds(PREFLIGHT_MAX_AGE_SECONDS),
        origin_override=True,
    )
