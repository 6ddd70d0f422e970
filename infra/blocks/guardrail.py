"""The Bedrock guardrail: prompt attacks and harmful content on the visitor's current turn.

Only input policies are enabled. The Invoke step assesses the current message alone with
ApplyGuardrail (source INPUT) before the model call, so exactly that text is evaluated and
billed (text units x configured policies, which is what the cost reservation counts), and a
blocked message never reaches the model. Converse carries no guardrailConfig: it would also
bill the reply's characters, which no bound on tokens limits.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from aws_cdk import aws_bedrock as bedrock
from constructs import Construct

from infra.config import DeniedTopic

CONTENT_FILTERS = ("SEXUAL", "VIOLENCE", "HATE", "INSULTS", "MISCONDUCT")
BLOCKED_INPUT = "Sorry, I can't help with that. Please ask about this site's content."
BLOCKED_OUTPUT = "Sorry, I can't answer that here."


class ChatGuardrail(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        denied_topics: Sequence[DeniedTopic],
    ) -> None:
        super().__init__(scope, construct_id)
        filters = [
            bedrock.CfnGuardrail.ContentFilterConfigProperty(
                type="PROMPT_ATTACK", input_strength="HIGH", output_strength="NONE"
            )
        ] + [
            bedrock.CfnGuardrail.ContentFilterConfigProperty(
                type=kind,
                input_strength="HIGH",
                output_strength="NONE",
                input_enabled=True,
                output_enabled=False,
            )
            for kind in CONTENT_FILTERS
        ]
        topics = [
            bedrock.CfnGuardrail.TopicConfigProperty(
                name=topic.name,
                definition=topic.definition,
                type="DENY",
                input_enabled=True,
                output_enabled=False,
                input_action="BLOCK",
            )
            for topic in denied_topics
        ]
        self.guardrail = bedrock.CfnGuardrail(
            self,
            "Guardrail",
            name=name,
            description="chatguard: prompt attacks, harmful content and denied topics on input",
            blocked_input_messaging=BLOCKED_INPUT,
            blocked_outputs_messaging=BLOCKED_OUTPUT,
            content_policy_config=bedrock.CfnGuardrail.ContentPolicyConfigProperty(
                filters_config=filters
            ),
            topic_policy_config=(
                bedrock.CfnGuardrail.TopicPolicyConfigProperty(topics_config=topics)
                if topics
                else None
            ),
        )
        # A version is immutable: the Invoke step uses exactly what was reviewed and deployed.
        self.version = bedrock.CfnGuardrailVersion(
            self,
            "Version",
            guardrail_identifier=self.guardrail.attr_guardrail_id,
            # A version only changes when replaced: the config hash in its description makes
            # every guardrail change publish a new version.
            description=f"chatguard guardrail config {_fingerprint(denied_topics)}",
        )
        # Each configured policy is billed per text unit; the cost reservation multiplies by it.
        self.policy_count = 1 + (1 if topics else 0)


def _fingerprint(denied_topics: Sequence[DeniedTopic]) -> str:
    spec = {
        "filters": CONTENT_FILTERS,
        "topics": [(t.name, t.definition) for t in denied_topics],
        "messages": (BLOCKED_INPUT, BLOCKED_OUTPUT),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
