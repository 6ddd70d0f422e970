"""One typed settings object for every step, the local runtime and the indexer.

The defaults below mirror the `chatguard` block of cdk.json context (a test keeps the two
equal); on AWS the CDK app passes each step only the values it needs as environment
variables named ``CHATGUARD_<FIELD>``. Invalid values raise SettingsError, which the state
machine catches into a fail-closed 503: a step never runs on a half-read configuration.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ..money.pacing import parse_curve
from ..providers import catalogue
from .errors import SettingsError

ENV_PREFIX = "CHATGUARD_"
PROJECT_ROOT = Path(__file__).resolve().parents[3]
# On Lambda the package root is /var/task, so this is /var/task/build/knowledge there and
# <checkout>/build/knowledge locally: the bundling and `make index` agree on one place.
DEFAULT_KNOWLEDGE_DIR = PROJECT_ROOT / "build" / "knowledge"
MICROS_PER_USD = 1_000_000
# A request may try every shard (one transaction each) within S3's retry budget; past a
# few the stranded budget (N x (reserve - 1)) grows for little gain (docs/scaling.md).
MAX_SHARDS = 16

ModelBackend = Literal["bedrock", "offline"]
# How the offline responder reports usage: its own estimate, or the worst case the provider
# could bill for what was sent (the byte bound of the input, maxTokens of output, every
# guardrail unit): the adversary the money-path tests and `serve --worst-case-usage` use.
OfflineUsage = Literal["estimate", "worst"]
# How S5 meters input for a model the catalogue does not decide: "" = the catalogue's.
ModelMetering = Literal["", "count_tokens", "bytes"]
# Who embeds queries (and built the index): Titan on Bedrock, the local MiniLM model
# (steps/lib/providers/local_embedder.py: no Bedrock call, no per-query cost) or the
# hashing stand-in (unit tests). The offline backend never calls Bedrock: there "titan"
# means the local model (providers/models.embedder_kind).
EmbedderChoice = Literal["titan", "local", "hashing"]
# How the degraded answer (S7) ranks when Retrieve's embedder is a billed one (Titan): S7
# makes no billed call, so "local" = the local model's vectors, written into the index
# beside Titan's (`chatguard index --embedder titan` does by default), and the model in
# S7's bundle; "none" = by words alone. Beside the local embedder S7 uses its vectors.
DegradedEmbedderChoice = Literal["local", "none"]


@dataclass(frozen=True, slots=True)
class Settings:
    daily_ceiling_usd: Decimal = Decimal("1.00")
    monthly_ceiling_usd: Decimal = Decimal("15.00")
    visitor_message_limit: int = 20
    visitor_cost_share: Decimal = Decimal("0.05")
    ceiling_shards: int = 1
    # Pacing (steps/lib/money/pacing.py): "on" releases the day's ceiling along a curve,
    # burst share at 00:00 UTC, then flat or by pacing_curve's 24 hourly weights.
    pacing: str = "on"
    pacing_burst_share: Decimal = Decimal("0.5")
    pacing_curve: str = ""
    model_id: str = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
    embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    embedding_dimensions: int = 1024
    guardrail_id: str = ""
    guardrail_version: str = ""
    guardrail_policy_count: int = 2
    # The model's prices and metering come from providers/catalogue.py; these explicit
    # values (None / "": the catalogue's) are for a model it does not know (model_terms).
    price_input_per_mtok: Decimal | None = None
    price_output_per_mtok: Decimal | None = None
    price_cache_write_per_mtok: Decimal | None = None
    price_cache_read_per_mtok: Decimal | None = None
    model_metering: ModelMetering = ""
    price_embedding_per_mtok: Decimal = Decimal("0.02")
    price_guardrail_per_1k_units: Decimal = Decimal("0.15")
    max_input_tokens: int = 6000
    max_output_tokens: int = 512
    grounding_token_budget: int = 1500
    message_max_chars: int = 2000
    history_max_turns: int = 6
    history_turn_max_chars: int = 2000
    body_max_bytes: int = 16384
    table_name: str = "chatguard"
    origin_secret_param: str = "/chatguard/origin-secret"
    salt_param: str = "/chatguard/visitor-salt"
    signing_key_param: str = "/chatguard/signing-key"
    secret_grace_seconds: int = 3600
    secret_cache_seconds: int = 300
    # A connection inside the Region takes milliseconds; every second here is a second less
    # for a cold message to reach Converse within the run budget (docs/benchmarks.md).
    bedrock_connect_timeout_seconds: int = 1
    bedrock_read_timeout_seconds: int = 10  # Converse's; within the run budget (stages.py)
    model_backend: ModelBackend = "bedrock"
    offline_usage: OfflineUsage = "estimate"
    embedder: EmbedderChoice = "titan"
    degraded_embedder: DegradedEmbedderChoice = "local"
    knowledge_dir: Path = DEFAULT_KNOWLEDGE_DIR

    def __post_init__(self) -> None:
        problems = list(_problems(self))
        if problems:
            raise SettingsError("invalid settings: " + "; ".join(problems))

    # Money is integer micro-USD everywhere past this point.
    @property
    def daily_ceiling_micros(self) -> int:
        return usd_to_micros(self.daily_ceiling_usd)

    @property
    def monthly_ceiling_micros(self) -> int:
        return usd_to_micros(self.monthly_ceiling_usd)

    @property
    def visitor_ceiling_micros(self) -> int:
        return int(self.daily_ceiling_micros * self.visitor_cost_share)

    @property
    def model_terms(self) -> catalogue.ModelTerms:
        """The chat model's prices, metering and largest output: the catalogue's, or
        cdk.json's explicit ones (checked when the settings were built)."""
        return _model_terms(
            self.model_id,
            self.price_input_per_mtok,
            self.price_output_per_mtok,
            self.price_cache_write_per_mtok,
            self.price_cache_read_per_mtok,
            self.model_metering,
        )

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **{k: _coerce(_field(k), v) for k, v in changes.items()})

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Settings:
        """Build from cdk.json-style keys; unknown keys are an error, not a silent typo."""
        unknown = sorted(set(values) - _FIELD_NAMES)
        if unknown:
            raise SettingsError(f"unknown settings: {', '.join(unknown)}")
        return cls(**{k: _coerce(_field(k), v) for k, v in values.items()})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        values = {
            name: env[ENV_PREFIX + name.upper()]
            for name in _FIELD_NAMES
            if ENV_PREFIX + name.upper() in env
        }
        return cls.from_mapping(values)

    def to_env(self, *names: str) -> dict[str, str]:
        """Environment variables for the named fields (all of them when none are named)."""
        chosen = names or tuple(sorted(_FIELD_NAMES))
        return {ENV_PREFIX + n.upper(): _env_value(getattr(self, _field(n).name)) for n in chosen}


def usd_to_micros(usd: Decimal) -> int:
    return int(usd * MICROS_PER_USD)


def _env_value(value: object) -> str:
    return "" if value is None else str(value)  # "" reads back as None (_coerce)


@cache
def _model_terms(
    model_id: str,
    price_input: Decimal | None,
    price_output: Decimal | None,
    price_cache_write: Decimal | None,
    price_cache_read: Decimal | None,
    metering: str,
) -> catalogue.ModelTerms:
    given = (price_input, price_output, price_cache_write, price_cache_read)
    prices = dict(zip(catalogue.PRICE_KEYS, given, strict=True))
    return catalogue.terms_for(model_id, prices, metering)


@cache
def settings() -> Settings:
    """The settings of this process, read once (a Lambda container never changes its env)."""
    return Settings.from_env()


def cdk_context(path: Path | None = None) -> dict[str, Any]:
    """The whole `context` block of cdk.json: the project's one settings source."""
    data = json.loads((path or PROJECT_ROOT / "cdk.json").read_text(encoding="utf-8"))
    context: dict[str, Any] = data["context"]
    return context


def edge_context() -> dict[str, Any]:
    """cdk.json's `chatguard/edge` block (rate rule, site origins): what the web ACL and
    CloudFront enforce in AWS, and the local edge plays."""
    block: dict[str, Any] = cdk_context().get("chatguard/edge", {})
    return block


_FIELDS = {f.name: f for f in fields(Settings)}
_FIELD_NAMES = frozenset(_FIELDS)


def _field(name: str) -> dataclasses.Field[Any]:
    try:
        return _FIELDS[name]
    except KeyError:
        raise SettingsError(f"unknown setting: {name}") from None


def _coerce(field: dataclasses.Field[Any], value: Any) -> Any:
    kind = str(field.type)
    if kind == "Decimal | None":
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        kind = "Decimal"
    try:
        if kind == "Decimal":
            if isinstance(value, float):
                value = repr(value)
            result = Decimal(str(value))
            if not result.is_finite():
                raise InvalidOperation
            return result
        if kind == "int":
            if isinstance(value, bool) or (isinstance(value, str) and not value.strip()):
                raise ValueError(value)
            return int(value)
        if kind == "Path":
            return Path(value)
        return str(value)
    except (InvalidOperation, ValueError, TypeError):
        raise SettingsError(f"setting {field.name}: {value!r} is not a valid {kind}") from None


def _curve_ok(text: str) -> bool:
    """The curve as S3 will parse it (pacing.parse_curve: ASCII digits only)."""
    try:
        parse_curve(text)
    except ValueError:
        return False
    return True


def _problems(s: Settings) -> list[str]:
    checks = [
        (s.daily_ceiling_usd > 0, "daily_ceiling_usd must be > 0"),
        (s.monthly_ceiling_usd >= s.daily_ceiling_usd, "monthly_ceiling_usd must be >= daily"),
        (s.visitor_message_limit >= 1, "visitor_message_limit must be >= 1"),
        (1 <= s.ceiling_shards <= MAX_SHARDS, f"ceiling_shards must be in 1..{MAX_SHARDS}"),
        (Decimal(0) < s.visitor_cost_share <= 1, "visitor_cost_share must be in (0, 1]"),
        (s.max_input_tokens > 0 and s.max_output_tokens > 0, "token bounds must be > 0"),
        (0 < s.grounding_token_budget < s.max_input_tokens, "grounding budget must fit input"),
        (s.message_max_chars > 0 and s.history_max_turns >= 0, "message/history bounds"),
        (s.body_max_bytes > 0, "body_max_bytes must be > 0"),
        (s.model_backend in ("bedrock", "offline"), "model_backend must be bedrock|offline"),
        (s.offline_usage in ("estimate", "worst"), "offline_usage must be estimate|worst"),
        (s.embedder in ("titan", "local", "hashing"), "embedder must be titan|local|hashing"),
        (s.degraded_embedder in ("local", "none"), "degraded_embedder must be local|none"),
        (bool(s.model_id and s.table_name), "model_id and table_name are required"),
        (s.embedding_dimensions > 0, "embedding_dimensions must be > 0"),
        (s.pacing in ("on", "off"), "pacing must be on|off"),
        (Decimal(0) <= s.pacing_burst_share <= 1, "pacing_burst_share must be in [0, 1]"),
        (
            _curve_ok(s.pacing_curve),
            "pacing_curve takes 24 comma-separated weights >= 0 (digits 0-9)",
        ),
    ]
    prices = [getattr(s, name) for name in _FIELD_NAMES if name.startswith("price_")]
    checks.append((all(p is None or p >= 0 for p in prices), "prices must be >= 0"))
    checks.append((s.model_metering in ("", "count_tokens", "bytes"),
                   "model_metering must be count_tokens|bytes or empty"))  # fmt: skip
    problems = [message for ok, message in checks if not ok]
    return problems or _model_problems(s)


def _model_problems(s: Settings) -> list[str]:
    """The chat model must be priced (the catalogue, or cdk.json explicitly) and asked for
    no more output than it can give: Converse would refuse it after the guardrail billed."""
    try:
        terms = s.model_terms
    except catalogue.NotCatalogued as exc:
        return [str(exc)]
    largest = terms.max_output_tokens
    if largest is not None and s.max_output_tokens > largest:
        return [f"max_output_tokens {s.max_output_tokens} is above {s.model_id}'s {largest}"]
    return []
