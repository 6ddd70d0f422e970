"""Model ids and where exact metering exists: a leaf module (stdlib only) that S3, S5 and
the CDK app share, so the Region list and the profile-prefix rule live in one place."""

from __future__ import annotations

from ..money.pricing import Metering
from ..runtime.settings import Settings

# Geographic and global inference profile prefixes, e.g. "global.anthropic.claude-...".
PROFILE_PREFIXES = ("global", "us", "eu", "apac", "jp", "au", "ca", "us-gov")
# Regions that offer CountTokens (Bedrock user guide, "Monitor your token usage by counting
# tokens before running inference"). Elsewhere S5 does not even try: the byte bound decides.
COUNT_TOKENS_REGIONS = frozenset({
    "us-east-1", "us-east-2", "us-west-2", "ap-northeast-1", "ap-south-1", "ap-southeast-1",
    "ap-southeast-2", "eu-central-1", "eu-central-2", "eu-west-1", "eu-west-2", "sa-east-1",
})  # fmt: skip


def split_profile(model_id: str) -> tuple[str | None, str]:
    """("global", "anthropic.claude-...") for a profile id; (None, model_id) for a model id."""
    prefix, _, rest = model_id.partition(".")
    if rest and prefix in PROFILE_PREFIXES:
        return prefix, rest
    return None, model_id


def foundation_model_id(model_id: str) -> str:
    """The bare model id CountTokens takes: "anthropic.claude-haiku-4-5-..." for a profile."""
    return split_profile(model_id)[1]


def metering_for(s: Settings, region: str | None) -> Metering:
    """How S5 will meter input: exactly (CountTokens) where Bedrock offers it for this model
    in this Region, else by bytes.

    The model's side is the catalogue's (``s.model_terms.counts_tokens``, or cdk.json's
    ``model_metering`` for a model it does not know): Haiku 4.5, the default, is not on
    the user guide's CountTokens list, so the default deployment meters by bytes. S3 sizes
    the reserve for the same answer and S5 counts only when it says so, so a reserve sized
    for exact counts never meets a meter that has none.
    """
    exact = s.model_backend == "bedrock" and s.model_terms.counts_tokens
    return "count_tokens" if exact and region in COUNT_TOKENS_REGIONS else "bytes"
