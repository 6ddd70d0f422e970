"""Bedrock adapters: Converse for the answer, Titan Text Embeddings V2 for the query.

Converse, ApplyGuardrail and CountTokens each have their own client with explicit timeouts
and no retries (clients.py): one reservation pays for one call. CountTokens (free) measures
the exact request before it, on the bare foundation model (it refuses inference-profile
ids), only for a model the catalogue says it answers for and in the Regions that offer it
(model_ids.metering_for); anywhere else, or on any failure, S5 falls back to the byte bound
(metering.py). Every
Converse failure (timeout, throttling, 5xx, a reply without output or usage) becomes
ModelError, which the state machine answers with a 503 while the reservation stands.
Titan failures become EmbeddingError (S4: the state machine releases the reservation and
fails closed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..runtime.errors import EmbeddingError, ModelError
from ..runtime.settings import Settings
from .interface import USAGE_KEYS, CountNotOffered, CountUnavailable, GuardVerdict, ModelReply
from .model_ids import foundation_model_id, metering_for

if TYPE_CHECKING:
    import numpy as np


class BedrockResponder:
    def __init__(
        self, s: Settings, client: Any, count_client: Any = None, guard_client: Any = None
    ) -> None:
        self._settings = s
        self._client = client
        self._count_client = count_client or client
        self._guard_client = guard_client or client
        self._region: str | None = getattr(getattr(client, "meta", None), "region_name", None)

    def converse(self, *, system: str, messages: list[dict[str, Any]]) -> ModelReply:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self._client.converse(**self.request(system, messages))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "ClientError")
            raise ModelError(f"Converse failed: {code}") from exc
        except BotoCoreError as exc:  # ReadTimeoutError, ConnectTimeoutError, endpoint errors
            raise ModelError(f"Converse failed: {type(exc).__name__}") from exc
        return parse_converse(response)

    def guard(self, text: str) -> GuardVerdict:
        """ApplyGuardrail on exactly the current message (source INPUT), before the call.

        Any failure is a ModelError, which leaves the reservation standing: the guardrail
        may have billed its units.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        s = self._settings
        try:
            response = self._guard_client.apply_guardrail(
                guardrailIdentifier=s.guardrail_id,
                guardrailVersion=s.guardrail_version or "DRAFT",
                source="INPUT",
                content=[{"text": {"text": text}}],
            )
            return parse_guardrail(response)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "ClientError")
            raise ModelError(f"ApplyGuardrail failed: {code}") from exc
        except BotoCoreError as exc:
            raise ModelError(f"ApplyGuardrail failed: {type(exc).__name__}") from exc

    def count_tokens(self, system: str, messages: list[dict[str, Any]]) -> int:
        """The exact input tokens of the Converse request for (system, messages)."""
        from botocore.exceptions import BotoCoreError, ClientError

        if metering_for(self._settings, self._region) != "count_tokens":
            # The model (catalogue.py) or the Region has none: S3 reserved for the byte bound.
            raise CountNotOffered(f"no CountTokens for {self._settings.model_id} in {self._region}")
        request = self.request(system, messages)
        try:
            response = self._count_client.count_tokens(
                modelId=foundation_model_id(self._settings.model_id),
                input={"converse": {"system": request["system"], "messages": messages}},
            )
            return _count(response["inputTokens"])
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "ClientError")
            raise CountUnavailable(f"CountTokens failed: {code}") from exc
        except BotoCoreError as exc:
            raise CountUnavailable(f"CountTokens failed: {type(exc).__name__}") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise CountUnavailable("CountTokens returned a malformed response") from exc

    def request(self, system: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        s = self._settings
        # No cachePoint, ever: Haiku caches only from 4,096 tokens (about 3x the default
        # prompt) and a cache write bills 1.25x input, which the reserve does not price.
        # No guardrailConfig either: the guardrail assessed the message before the call
        # (guard), and Converse's own guardrail would also bill the reply's characters,
        # which no token bound limits.
        return {
            "modelId": s.model_id,
            "system": [{"text": system}],
            "messages": messages,
            "inferenceConfig": {"maxTokens": s.max_output_tokens},
        }


def parse_converse(response: Mapping[str, Any]) -> ModelReply:
    try:
        content = response["output"]["message"]["content"]
        text = "".join(block["text"] for block in content if "text" in block)
        usage = {key: _count(response["usage"].get(key, 0)) for key in USAGE_KEYS}
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError("Converse returned a malformed response (no output or usage)") from exc
    if not text:
        raise ModelError("Converse returned no text")
    return ModelReply(text, usage, str(response.get("stopReason", "")))


def parse_guardrail(response: Mapping[str, Any]) -> GuardVerdict:
    """ApplyGuardrail's verdict: intervened or not, its answer, and every policy's units."""
    try:
        blocked = response["action"] == "GUARDRAIL_INTERVENED"
        text = "".join(o.get("text", "") for o in response.get("outputs") or [])
        usage = response.get("usage") or {}
        units = sum(  # every policy's billed units; the free ones are not billed
            v
            for k, v in usage.items()
            if k.endswith("Units") and not k.endswith("FreeUnits") and isinstance(v, int)
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ModelError("ApplyGuardrail returned a malformed response") from exc
    return GuardVerdict(blocked, text, units)


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"bad token count {value!r}")
    return value


class TitanEmbedder:
    def __init__(self, s: Settings, client: Any) -> None:
        from ..grounding.knowledge import bedrock_embedder_id

        self._settings = s
        self._client = client
        self.id: str = bedrock_embedder_id(s.embedding_model_id, s.embedding_dimensions)

    def embed_query(self, text: str) -> tuple[np.ndarray, int]:
        import numpy as np
        from botocore.exceptions import BotoCoreError, ClientError

        body = {
            "inputText": text,
            "dimensions": self._settings.embedding_dimensions,
            "normalize": True,
        }
        try:
            response = self._client.invoke_model(
                modelId=self._settings.embedding_model_id,
                body=json.dumps(body),
                contentType="application/json",
                accept="application/json",
            )
            payload = json.loads(response["body"].read())
            vector = np.asarray(payload["embedding"], dtype=np.float32)
            count = _count(payload["inputTextTokenCount"])
        except (ClientError, BotoCoreError) as exc:
            raise EmbeddingError(f"Titan embedding failed: {type(exc).__name__}") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError("Titan returned a malformed embedding response") from exc
        return vector, count
