"""`--model bedrock`: the real Bedrock clients for the local runtime, checked before start.

The local state machine, ledger and secrets stay on moto; only the model seams reach AWS,
through the same adapters as deployed (steps/lib/providers/bedrock.py) and a client configured like
steps/lib/runtime/clients.py's (explicit timeouts, no retries: one reservation pays for one call).

The session is opened here, before the runtime starts: moto replaces the environment's
credentials with fakes while it runs, so the user's own chain (``--profile``, environment,
SSO, instance role) must be resolved first. Every way this can go wrong before the first
message (no credentials, an unknown profile, no Region, a Region without Bedrock, a model
not granted to the account) is one line, raised as `BedrockSetupError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from steps.lib.runtime.settings import Settings

# Cross-Region inference profile prefixes: the foundation model is the id without them.
GEO_PREFIXES = ("global", "us", "us-gov", "eu", "apac", "jp", "au", "ca")
_REJECTED_CREDENTIALS = (
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "ExpiredTokenException",
    "InvalidClientTokenId",
)


class BedrockSetupError(Exception):
    """Bedrock cannot answer from this machine: one line saying why and what to do."""


@dataclass(frozen=True, slots=True)
class BedrockAccess:
    session: Any  # boto3.Session with the user's credentials resolved
    region: str
    runtime: Any  # the bedrock-runtime client the steps call
    control: Any  # the bedrock control-plane client (model availability)


def foundation_model(model_id: str) -> str:
    """``global.anthropic.claude-...`` -> ``anthropic.claude-...``: the model behind a profile."""
    head, _, rest = model_id.partition(".")
    return rest if head in GEO_PREFIXES and "." in rest else model_id


def open_access(profile: str | None, region: str | None, settings: Settings) -> BedrockAccess:
    """The user's session and the two clients, or BedrockSetupError."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ProfileNotFound

    try:
        session = boto3.Session(profile_name=profile, region_name=region)
    except ProfileNotFound:
        raise BedrockSetupError(
            f"AWS profile {profile!r} not found: see `aws configure list-profiles`"
        ) from None
    chosen = session.region_name
    if not chosen:
        raise BedrockSetupError("no AWS Region for Bedrock: pass --region REGION")
    try:
        credentials = session.get_credentials()
    except BotoCoreError as exc:  # an SSO token expired, a broken credential process
        raise BedrockSetupError(f"AWS credentials could not be loaded: {exc}") from None
    if credentials is None:
        raise BedrockSetupError(
            "no AWS credentials found: run `aws configure` (or `aws sso login`), or pass "
            "--profile NAME; offline, drop --model bedrock"
        )
    config = Config(
        connect_timeout=settings.bedrock_connect_timeout_seconds,
        read_timeout=settings.bedrock_read_timeout_seconds,
        retries={"total_max_attempts": 1, "mode": "standard"},
    )
    try:
        runtime = session.client("bedrock-runtime", region_name=chosen, config=config)
        control = session.client("bedrock", region_name=chosen)
    except (BotoCoreError, ValueError) as exc:  # InvalidRegionError is a ValueError too
        raise BedrockSetupError(f"{chosen!r} is not a usable AWS Region: {exc}") from None
    return BedrockAccess(session, chosen, runtime, control)


def check_models(access: BedrockAccess, settings: Settings) -> None:
    """Ask Bedrock (a free control-plane call, no model is invoked) whether this account
    may call the answer and embedding models in this Region."""
    for model_id in (settings.model_id, settings.embedding_model_id):
        _check_one(access, foundation_model(model_id))


def _check_one(access: BedrockAccess, model: str) -> None:
    from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

    region = access.region
    try:
        answer = access.control.get_foundation_model_availability(modelId=model)
    except EndpointConnectionError:
        raise BedrockSetupError(
            f"cannot reach Bedrock in {region}: check the Region (--region) and the network"
        ) from None
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "ClientError")
        if code in _REJECTED_CREDENTIALS:
            raise BedrockSetupError(
                f"AWS rejected the credentials ({code}): refresh them or pass --profile NAME"
            ) from None
        if code == "AccessDeniedException":
            raise BedrockSetupError(
                f"these credentials may not check Bedrock model access in {region} "
                "(bedrock:GetFoundationModelAvailability is denied)"
            ) from None
        if code in ("ResourceNotFoundException", "ValidationException"):
            raise BedrockSetupError(
                f"Bedrock in {region} does not offer {model}: pick a Region that has it"
            ) from None
        raise BedrockSetupError(f"Bedrock in {region} answered {code} for {model}") from None
    except BotoCoreError as exc:
        raise BedrockSetupError(f"cannot reach Bedrock in {region}: {exc}") from None
    if answer.get("regionAvailability") != "AVAILABLE":
        raise BedrockSetupError(f"{model} is not available in {region}: pick another Region")
    if (
        answer.get("authorizationStatus") != "AUTHORIZED"
        or answer.get("entitlementAvailability") != "AVAILABLE"
    ):
        raise BedrockSetupError(
            f"this account has no access to {model} in {region}: enable it with "
            f"`chatguard enable-model --region {region}` (README, Before you start)"
        )
