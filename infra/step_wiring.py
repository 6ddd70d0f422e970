"""Which settings each step is given (as CHATGUARD_* environment variables).

A step gets only what its code reads: its own secret's parameter NAME (never a value, and
never another step's), the limits it enforces and the prices it computes with. A setting a
step reads but is not given would silently fall back to its default, so a test compares
this table with the settings each step's modules read (tests/infra/test_step_wiring.py).
"""

from __future__ import annotations

SECRET_CACHE = ("secret_cache_seconds",)
BEDROCK_TIMEOUTS = ("bedrock_connect_timeout_seconds", "bedrock_read_timeout_seconds")
PRICING = (
    "model_id",  # the model's prices come from the catalogue (providers/catalogue.py) ...
    "model_metering",  # ... unless cdk.json gives them (and the metering) explicitly
    "price_input_per_mtok",
    "price_output_per_mtok",
    "price_cache_write_per_mtok",
    "price_cache_read_per_mtok",
    "price_embedding_per_mtok",
    "price_guardrail_per_1k_units",
    "guardrail_id",
    "guardrail_policy_count",
    "max_input_tokens",
    "max_output_tokens",
    "message_max_chars",
    "grounding_token_budget",
)

STEP_SETTINGS: dict[str, tuple[str, ...]] = {
    "OriginVerify": (
        "origin_secret_param",
        "secret_grace_seconds",
        *SECRET_CACHE,
        "message_max_chars",
        "max_input_tokens",  # with the prompt's fixed text, bounds a message's token weight
        "history_max_turns",
        "history_turn_max_chars",
    ),
    "Quota": ("table_name", "salt_param", *SECRET_CACHE, "visitor_message_limit"),
    "CostGate": (
        "table_name",
        "daily_ceiling_usd",
        "monthly_ceiling_usd",
        "visitor_cost_share",
        "ceiling_shards",
        "pacing",  # the day's condition uses the paced allowance (money/pacing.py) ...
        "pacing_burst_share",
        "pacing_curve",  # ... so an operator's curve must reach the step, not its default
        *PRICING,
        "model_backend",  # with the model and Region: exact metering or the byte bound
        "history_max_turns",  # read by the prompt module whose fixed text every reserve holds
    ),
    "Retrieve": (
        "model_backend",
        "embedder",  # titan, or the local model bundled with the step
        "embedding_model_id",
        "embedding_dimensions",
        "grounding_token_budget",
        "history_turn_max_chars",  # how much of the earlier user turns the query embeds
        *BEDROCK_TIMEOUTS,
    ),
    "Invoke": (
        "model_backend",
        "guardrail_version",
        "signing_key_param",
        "secret_grace_seconds",
        *SECRET_CACHE,
        "history_max_turns",
        "offline_usage",
        *PRICING,  # S5 re-derives the input its reservation pays for, at its own prices
        *BEDROCK_TIMEOUTS,
    ),
    "Reconcile": ("table_name", *PRICING),
    # The bundled index at its default path; no limit, price or secret. `embedder` and
    # `degraded_embedder`: whether it ranks by meaning too, with the local model (no
    # model cost).
    "Degraded": ("model_backend", "embedder", "degraded_embedder"),
}
