"""`chatguard doctor`'s Bedrock checks: the calls S5 and S4 make, sent by the operator.

Each check goes through the step's own adapter (BedrockResponder, TitanEmbedder) with the
settings the deployed step runs with, so it sends the request the step sends. The operator's
identity is not the step's role: a refusal here can also mean the operator may not call
Bedrock, which the fix line says. Cost: one Converse call with maxTokens 1, one
ApplyGuardrail of one text unit per policy, one Titan embedding of a few tokens;
CountTokens is free.
"""

from __future__ import annotations

from typing import Any

from ops import first_call
from steps.lib.grounding.knowledge import bedrock_embedder_id
from steps.lib.money.pricing import Metering
from steps.lib.providers.bedrock import BedrockResponder, TitanEmbedder
from steps.lib.providers.interface import CountUnavailable
from steps.lib.providers.model_ids import foundation_model_id
from steps.lib.runtime.errors import EmbeddingError, ModelError
from steps.lib.runtime.settings import Settings

from .deployed import IndexHeader
from .result import Check, aws_said, cannot_test, failed, not_applicable, passed

PROBE = "Hello, which page covers rate limiting?"
MODEL = "model answers"
COUNT = "CountTokens or byte metering"
GUARDRAIL = "ApplyGuardrail answers"
EMBEDDING = "embedding dimensions match the index"
REBUILD = "chatguard index SITE --out build/knowledge --embedder titan, then make deploy"


def model_answers(runtime: Any, s: Settings) -> Check:
    """The model answers a Converse call (the same minimal call as enable-model)."""
    name = MODEL
    result = first_call.call(runtime, s.model_id)
    if result.ok:
        tokens = f"{result.input_tokens} + {result.output_tokens} tokens"
        return passed(name, f"{s.model_id} answered ({tokens})")
    return failed(
        name,
        f"{s.model_id} in {result.region}: {result.detail}",
        "run `chatguard enable-model` and check the three prerequisites it prints "
        "(or your identity may not call bedrock:InvokeModel)",
    )


def count_tokens_or_bytes(runtime: Any, s: Settings, metering: Metering) -> Check:
    """S3 sizes the reserve for exact counts only when CountTokens will answer in S5."""
    name = COUNT
    if metering == "bytes":
        return passed(name, "byte metering: S5 bounds the input by its bytes, no CountTokens")
    model = foundation_model_id(s.model_id)
    messages = [{"role": "user", "content": [{"text": PROBE}]}]
    try:
        tokens = BedrockResponder(s, runtime).count_tokens("Answer briefly.", messages)
    except CountUnavailable as exc:
        return failed(
            name,
            f"exact metering is set, but CountTokens refused {model}: {aws_said(exc)}",
            "meter this model by bytes (the model catalogue) or pick a model CountTokens "
            "supports: else every reserve is sized for counts S5 cannot get, and answers "
            "lose their grounding",
        )
    return passed(name, f"CountTokens counted {tokens} tokens for {model}")


def guardrail_answers(runtime: Any, s: Settings) -> Check:
    """ApplyGuardrail answers for the deployed guardrail id and version."""
    name = GUARDRAIL
    if not s.guardrail_id:
        return not_applicable(name, "the Invoke step has no guardrail configured")
    which = f"guardrail {s.guardrail_id} version {s.guardrail_version or 'DRAFT'}"
    try:
        verdict = BedrockResponder(s, runtime).guard(PROBE)
    except ModelError as exc:
        return failed(
            name,
            f"{which}: {aws_said(exc)}",
            "deploy again so the guardrail and the Invoke step's CHATGUARD_GUARDRAIL_* "
            "agree (or your identity may not call bedrock:ApplyGuardrail)",
        )
    said = "intervened" if verdict.blocked else "let it pass"
    return passed(name, f"{which} assessed a probe ({said}, {verdict.units} units)")


def embeds_with_titan(retrieve: Settings) -> bool:
    """Whether the deployed Retrieve embeds queries on Bedrock (else it embeds locally)."""
    return retrieve.model_backend == "bedrock"


def embedding_matches_index(runtime: Any, retrieve: Settings, index: IndexHeader) -> Check:
    """The embedding model returns vectors of the bundled index's dimensions."""
    name = EMBEDDING
    if not embeds_with_titan(retrieve):
        return not_applicable(name, "Retrieve embeds queries locally, not with Bedrock")
    wanted = bedrock_embedder_id(retrieve.embedding_model_id, retrieve.embedding_dimensions)
    if not index.embedder.startswith("bedrock:"):
        return cannot_test(
            name,
            f"the local index was built by {index.embedder!r}, not the deployed one ({wanted!r})",
            "pass --knowledge DIR: the folder that was bundled at the last deploy",
        )
    try:
        vector, _ = TitanEmbedder(retrieve, runtime).embed_query(PROBE)
    except EmbeddingError as exc:
        return failed(
            name,
            f"{retrieve.embedding_model_id}: {aws_said(exc)}",
            "check embedding_model_id is offered in this Region (or your identity may not "
            "call bedrock:InvokeModel)",
        )
    if len(vector) != index.dimensions or index.embedder != wanted:
        return failed(
            name,
            f"{retrieve.embedding_model_id} returns {len(vector)} dimensions; the index has "
            f"{index.dimensions} ({index.embedder})",
            f"rebuild the index with the deployed model: {REBUILD}",
        )
    return passed(name, f"{retrieve.embedding_model_id}: {len(vector)} dimensions, as the index")
