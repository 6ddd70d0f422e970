"""`chatguard enable-model`: the one first call that enables the model for the account.

Bedrock no longer has a "Model access" page to click through: a third-party model (Claude
is sold through AWS Marketplace) is enabled for the account the first time anyone calls
it, and that first call subscribes with the *caller's* permissions
(``aws-marketplace:Subscribe``, ``Unsubscribe``, ``ViewSubscriptions``), after a one-time
Anthropic use-case form. The Invoke step's role deliberately has none of those: it would
keep a permission to buy Marketplace products for the stack's whole life to use it once.
So the operator makes that first call, with their own credentials, once per account: one
Converse call of a few tokens, ``maxTokens`` 1 (a hundredth of a cent at most).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from steps.lib.runtime.settings import Settings

PROMPT = "Reply with one word: ready"
MAX_TOKENS = 1
MODEL_ACCESS_DOC = "https://docs.aws.amazon.com/bedrock/latest/userguide/model-access.html"
# What the Bedrock user guide lists as the prerequisites of automatic model access.
PREREQUISITES = (
    "your identity may call aws-marketplace:Subscribe, aws-marketplace:Unsubscribe and "
    "aws-marketplace:ViewSubscriptions",
    "for Anthropic models, the use-case form was submitted once for the account (or the "
    "organization's management account): Bedrock console, Model catalog, the model",
    "the account has a valid payment method for AWS Marketplace purchases",
)


@dataclass(frozen=True, slots=True)
class FirstCall:
    ok: bool
    model_id: str
    region: str
    detail: str  # the model's reply, or what AWS said
    input_tokens: int = 0
    output_tokens: int = 0

    def cost_usd(self, s: Settings) -> Decimal:
        million = Decimal(1_000_000)
        return (
            self.input_tokens * s.model_terms.input_per_mtok
            + self.output_tokens * s.model_terms.output_per_mtok
        ) / million


def call(runtime: Any, model_id: str) -> FirstCall:
    """One minimal Converse call; AccessDenied and friends become a result, not a crash."""
    from botocore.exceptions import ClientError

    region = str(runtime.meta.region_name)
    try:
        answer = runtime.converse(
            modelId=model_id,
            messages=[{"role": "user", "content": [{"text": PROMPT}]}],
            inferenceConfig={"maxTokens": MAX_TOKENS},
        )
    except ClientError as exc:
        error = exc.response.get("Error", {})
        detail = f"{error.get('Code', 'Error')}: {error.get('Message', '')}".strip()
        return FirstCall(False, model_id, region, detail)
    blocks = answer.get("output", {}).get("message", {}).get("content", [])
    text = "".join(str(block.get("text", "")) for block in blocks)
    usage = answer.get("usage", {})
    return FirstCall(
        True,
        model_id,
        region,
        text,
        int(usage.get("inputTokens", 0)),
        int(usage.get("outputTokens", 0)),
    )


def render(result: FirstCall, s: Settings) -> str:
    where = f"{result.model_id} in {result.region}"
    if result.ok:
        return (
            f"{where} answered ({result.input_tokens} + {result.output_tokens} tokens, "
            f"USD {result.cost_usd(s):.6f}).\n"
            "Bedrock now finishes the Marketplace subscription in the background (up to 15 "
            "minutes); until then the chat may still get AccessDenied and answer 503."
        )
    lines = [f"{where} refused the first call: {result.detail}", "Check, then run it again:"]
    lines += [f"  - {item}" for item in PREREQUISITES]
    lines.append(f"  (Bedrock user guide, model access: {MODEL_ACCESS_DOC})")
    lines.append("After a fix, the subscription can take about 2 minutes to complete.")
    return "\n".join(lines)
