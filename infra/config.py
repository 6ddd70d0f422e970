"""The deployment's configuration, read once from cdk.json context and checked before synthesis.

Three context blocks feed it: ``chatguard`` (the runtime Settings every step shares),
``chatguard/edge`` (WAF, API throttling, origin timeout) and ``chatguard/ops`` (budgets,
alerts, alarms, retention, concurrency). A wrong value stops synthesis with a message that
names the key, so a typo never deploys a stack with a silently different limit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from infra import cold_model, worst_chains
from statemachine import loader
from steps.lib.request.cors import OriginError, check_origins
from steps.lib.runtime import clients
from steps.lib.runtime.errors import SettingsError
from steps.lib.runtime.settings import Settings, cdk_context
from steps.lib.runtime.stages import BY_STATE, STAGES, Stage

EDGE_REGION = "us-east-1"  # CLOUDFRONT-scope web ACLs exist only there
WAF_WINDOWS = (60, 120, 300, 600)
WAF_LIMIT_FLOOR = 10
# CloudFront hands WAF at most the first 16 KB of a body by default; past that the size
# rule could not see the end of the body, so the contract's limit must fit inside it.
WAF_BODY_INSPECTION_BYTES = 16 * 1024
API_MAX_INTEGRATION_SECONDS = 29  # REST API default quota for the integration timeout
# The retention periods CloudWatch Logs accepts (days -> aws_logs.RetentionDays member).
RETENTION_DAYS = {
    1: "ONE_DAY", 3: "THREE_DAYS", 5: "FIVE_DAYS", 7: "ONE_WEEK", 14: "TWO_WEEKS",
    30: "ONE_MONTH", 60: "TWO_MONTHS", 90: "THREE_MONTHS", 120: "FOUR_MONTHS",
    150: "FIVE_MONTHS", 180: "SIX_MONTHS", 365: "ONE_YEAR", 400: "THIRTEEN_MONTHS",
    545: "EIGHTEEN_MONTHS", 731: "TWO_YEARS",
}  # fmt: skip


class ConfigError(ValueError):
    """A context value that cannot be deployed; the message names the key."""


@dataclass(frozen=True, slots=True)
class DeniedTopic:
    name: str
    definition: str


@dataclass(frozen=True, slots=True)
class EdgeConfig:
    waf_rate_limit: int
    waf_window_seconds: int
    waf_managed_rules: bool
    waf_blocked_alarm_threshold: int
    api_throttle_rate: int
    api_throttle_burst: int
    origin_timeout_seconds: int
    # Exact origins of sites that embed the widget cross-origin (empty: same-origin only).
    site_origins: tuple[str, ...] = ()

    @property
    def integration_timeout_seconds(self) -> int:
        # One second under CloudFront's origin read timeout, so API Gateway answers with its
        # own JSON 504 before CloudFront gives up with an HTML error page.
        return min(API_MAX_INTEGRATION_SECONDS, self.origin_timeout_seconds - 1)

    @property
    def workflow_timeout_seconds(self) -> int:
        # Strictly under the integration timeout: a slow run then ends TIMED_OUT, which the
        # response template maps to the contract's JSON 503, before API Gateway's own 504.
        return self.integration_timeout_seconds - 1


@dataclass(frozen=True, slots=True)
class OpsConfig:
    chat_region: str
    budget_usd: Decimal
    account_budget_usd: Decimal
    billing_services: tuple[str, ...]
    alert_emails: tuple[str, ...]
    reserved_concurrency: Mapping[str, int]
    log_retention_days: int
    deletion_protection: bool
    denied_topics: tuple[DeniedTopic, ...]
    hourly_spend_alarm_share: Decimal
    origin_rejected_alarm_threshold: int
    degraded_alarm_threshold: int
    # Lambda SnapStart on every step (Python 3.12+): restores INIT from a snapshot. Off by
    # default: its cache and restore charges would cost more than this stack's Lambdas do
    # (docs/benchmarks.md, "Cold path").
    snap_start: bool = False


@dataclass(frozen=True, slots=True)
class DeployConfig:
    settings: Settings
    edge: EdgeConfig
    ops: OpsConfig


def load(
    context: Mapping[str, Any] | None = None, *, stages: Sequence[Stage] = STAGES
) -> DeployConfig:
    """Parse the three blocks; ``context`` defaults to cdk.json (plain ``python infra/app.py``).
    ``stages`` are the step Lambdas' timeouts and memory checked against the workflow's."""
    ctx = dict(cdk_context()) if context is None else dict(context)
    try:  # e.g. a model the catalogue does not know, without its prices: one line, no trace
        settings = Settings.from_mapping(_block(ctx, "chatguard"))
    except SettingsError as exc:
        raise ConfigError(f"cdk.json chatguard: {exc}") from None
    edge = _edge(_block(ctx, "chatguard/edge"), settings, stages)
    ops = _ops(_block(ctx, "chatguard/ops"))
    return DeployConfig(settings=settings, edge=edge, ops=ops)


def _block(ctx: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = ctx.get(name)
    if not isinstance(value, Mapping):
        raise ConfigError(f"cdk.json context block {name!r} is missing or not an object")
    return value


def _edge(raw: Mapping[str, Any], settings: Settings, stages: Sequence[Stage]) -> EdgeConfig:
    edge = EdgeConfig(
        waf_rate_limit=_int(raw, "waf_rate_limit"),
        waf_window_seconds=_int(raw, "waf_window_seconds"),
        waf_managed_rules=_bool(raw, "waf_managed_rules"),
        waf_blocked_alarm_threshold=_int(raw, "waf_blocked_alarm_threshold"),
        api_throttle_rate=_int(raw, "api_throttle_rate"),
        api_throttle_burst=_int(raw, "api_throttle_burst"),
        origin_timeout_seconds=_int(raw, "origin_timeout_seconds"),
        site_origins=_origins(raw.get("site_origins", [])),
    )
    _require(edge.waf_window_seconds in WAF_WINDOWS, f"waf_window_seconds must be {WAF_WINDOWS}")
    _require(edge.waf_rate_limit >= WAF_LIMIT_FLOOR, f"waf_rate_limit must be >= {WAF_LIMIT_FLOOR}")
    _require(edge.api_throttle_rate > 0 and edge.api_throttle_burst > 0, "api throttling > 0")
    _require(2 <= edge.origin_timeout_seconds <= 180, "origin_timeout_seconds must be 2..180")
    # Each step Lambda must give up before the workflow does (its error is then handled by
    # the state machine), and the workflow before API Gateway (a 503, not a 504).
    slowest = max(stages, key=lambda stage: stage.timeout_seconds)
    _require(
        slowest.timeout_seconds < edge.workflow_timeout_seconds,
        f"origin_timeout_seconds {edge.origin_timeout_seconds} leaves the workflow "
        f"{edge.workflow_timeout_seconds} s, not more than the {slowest.state} step's "
        f"{slowest.timeout_seconds} s timeout (origin - 2 s must exceed every step's timeout)",
    )
    # One time budget per run (steps/lib/money/billed_calls.py): every billed call ends
    # within the ASL's run budget; S6 then settles at its worst (a cold start from source,
    # which Lambda runs before and outside the function timeout, then its timeout and
    # throttle wait), with a second for the transitions, before the workflow gives up.
    settle = cold_model.settle_worst_seconds()
    _require(
        loader.run_budget_seconds() + settle <= edge.workflow_timeout_seconds,
        f"origin_timeout_seconds {edge.origin_timeout_seconds} leaves the workflow "
        f"{edge.workflow_timeout_seconds} s, less than the run budget of billed calls "
        f"({loader.run_budget_seconds():g} s) plus the settlement ({settle:.2f} s)",
    )
    # A cold first message reaches S5 by the model's figures (source only, the slowest
    # shipping configuration) early enough for the guardrail and Converse at their clients'
    # worst: otherwise S5 refuses it (NotSent) and the visitor gets a 503.
    billed = clients.GUARDRAIL.worst + clients.converse_timeouts(settings).worst
    reach = cold_model.reach_invoke_seconds()
    _require(
        reach + billed <= loader.run_budget_seconds(),
        f"a cold first message reaches S5 {reach:.2f} s into the run (docs/benchmarks.md, "
        f"Cold path); the guardrail and Converse then need up to {billed:g} s, past the run "
        f"budget of {loader.run_budget_seconds():g} s: lower bedrock_read_timeout_seconds",
    )
    # Every chain the workflow allows, each step cold and at its timeout after a throttle
    # retry, ends inside the workflow (infra/worst_chains.py): a run cut after S3 reserved
    # and before the release would hold the reservation until its TTL.
    chain = worst_chains.shipped(stages)[0]
    _require(
        chain.seconds <= edge.workflow_timeout_seconds,
        f"the workflow's slowest chain ({chain}) needs up to {chain.seconds:.2f} s with every "
        f"step cold and at its timeout, past the workflow's {edge.workflow_timeout_seconds} s "
        f"(origin_timeout_seconds {edge.origin_timeout_seconds}): shorten the step timeouts in "
        "steps/lib/runtime/stages.py",
    )
    _require(
        settings.body_max_bytes <= WAF_BODY_INSPECTION_BYTES,
        f"body_max_bytes must be <= {WAF_BODY_INSPECTION_BYTES} (what WAF inspects at CloudFront)",
    )
    return edge


def _ops(raw: Mapping[str, Any]) -> OpsConfig:
    concurrency = raw.get("reserved_concurrency", {})
    _require(isinstance(concurrency, Mapping), "reserved_concurrency must be an object")
    unknown = sorted(set(concurrency) - set(BY_STATE))
    _require(not unknown, f"reserved_concurrency names unknown states: {unknown}")
    ops = OpsConfig(
        chat_region=str(raw.get("chat_region") or os.environ.get("CDK_DEFAULT_REGION") or "")
        or EDGE_REGION,
        budget_usd=_decimal(raw, "budget_usd"),
        account_budget_usd=_decimal(raw, "account_budget_usd"),
        billing_services=_strings(raw, "billing_services"),
        alert_emails=_strings(raw, "alert_emails"),
        reserved_concurrency={k: int(v) for k, v in concurrency.items()},
        log_retention_days=_int(raw, "log_retention_days"),
        deletion_protection=_bool(raw, "deletion_protection"),
        denied_topics=tuple(_topic(t) for t in raw.get("denied_topics", [])),
        hourly_spend_alarm_share=_decimal(raw, "hourly_spend_alarm_share"),
        origin_rejected_alarm_threshold=_int(raw, "origin_rejected_alarm_threshold"),
        degraded_alarm_threshold=_int(raw, "degraded_alarm_threshold"),
        snap_start=_bool(raw, "snap_start") if "snap_start" in raw else False,
    )
    _require(ops.budget_usd > 0 and ops.account_budget_usd > 0, "budgets must be > 0")
    _require(bool(ops.billing_services), "billing_services must name at least one service")
    _require(all(v >= 1 for v in ops.reserved_concurrency.values()), "concurrency must be >= 1")
    _require(
        ops.log_retention_days in RETENTION_DAYS,
        f"log_retention_days must be one of {sorted(RETENTION_DAYS)}",
    )
    _require(Decimal(0) < ops.hourly_spend_alarm_share <= 1, "hourly_spend_alarm_share in (0, 1]")
    return ops


def _origins(raw: Any) -> tuple[str, ...]:
    _require(isinstance(raw, list), "site_origins must be a list of origins")
    try:
        return check_origins(raw, deployed=True)
    except OriginError as exc:
        raise ConfigError(str(exc)) from None


def _topic(raw: Any) -> DeniedTopic:
    _require(isinstance(raw, Mapping), "each denied topic is an object {name, definition}")
    topic = DeniedTopic(name=str(raw.get("name", "")), definition=str(raw.get("definition", "")))
    _require(bool(topic.name and topic.definition), "a denied topic needs a name and definition")
    return topic


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _int(raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key)
    _require(isinstance(value, int) and not isinstance(value, bool), f"{key} must be an integer")
    return int(value)  # type: ignore[arg-type]


def _bool(raw: Mapping[str, Any], key: str) -> bool:
    value = raw.get(key)
    _require(isinstance(value, bool), f"{key} must be true or false")
    return bool(value)


def _decimal(raw: Mapping[str, Any], key: str) -> Decimal:
    try:
        return Decimal(str(raw[key]))
    except (KeyError, ArithmeticError) as exc:
        raise ConfigError(f"{key} must be a decimal number") from exc


def _strings(raw: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value: Sequence[Any] = raw.get(key, [])
    _require(isinstance(value, list), f"{key} must be a list of strings")
    return tuple(str(v) for v in value)
