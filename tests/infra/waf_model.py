"""An offline stand-in for how AWS WAF evaluates the web ACL this app synthesizes.

Not WAF: a model of the documented behaviour of the statement and action kinds the edge
stack uses, so tests can ask the synthesized template (not our Python) what a visitor gets:

- rules run in priority order; Count adds the rule's labels and evaluation goes on, Block
  ends it with the rule's custom response (status, headers, body), Allow ends it
  (https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-label-overview.html);
- a label match statement without a prefix matches labels added earlier in this web ACL
  (https://docs.aws.amazon.com/waf/latest/APIReference/API_LabelMatchStatement.html);
- a rate-based statement counts the requests its scope-down statement matches, per client
  address, and matches those requests once the count passes its limit. WAF counts
  approximately over a time window; the model counts exactly within one window;
- CloudFront hands WAF at most the first 16 KB of a body; ``OversizeHandling: MATCH``
  treats a longer body as matching.

A statement kind the model does not know raises, so a new rule cannot pass a test silently.
"""

from __future__ import annotations

import json
import urllib.parse
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BODY_INSPECTION_BYTES = 16 * 1024


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    address: str = "visitor-a"  # the rate key: any label stands for the client address

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)


@dataclass(frozen=True)
class Answer:
    blocked: bool
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    rule: str | None = None
    labels: tuple[str, ...] = ()


class UnknownStatement(ValueError):
    """The template uses a statement kind this model does not evaluate."""


class WebAclModel:
    def __init__(self, acl_properties: Mapping[str, Any]) -> None:
        self.rules = sorted(acl_properties["Rules"], key=lambda rule: rule["Priority"])
        self.bodies = acl_properties.get("CustomResponseBodies", {})
        self.default = acl_properties["DefaultAction"]
        self._counts: Counter[tuple[str, str]] = Counter()

    def evaluate(self, request: Request) -> Answer:
        labels: list[str] = []
        for rule in self.rules:
            if not self._matches(rule["Name"], rule["Statement"], request, labels):
                continue
            action = rule.get("Action") or {}
            if "Count" in action or "Count" in rule.get("OverrideAction", {}):
                labels += [label["Name"] for label in rule.get("RuleLabels", [])]
                continue
            if "Block" in action:
                return self._blocked(rule["Name"], action["Block"] or {}, tuple(labels))
            if "Allow" in action:
                return Answer(blocked=False, rule=rule["Name"], labels=tuple(labels))
            raise UnknownStatement(f"rule {rule['Name']}: action {sorted(action)}")
        if "Block" in self.default:
            return self._blocked(None, self.default["Block"] or {}, tuple(labels))
        return Answer(blocked=False, labels=tuple(labels))

    def _blocked(
        self, rule: str | None, block: Mapping[str, Any], labels: tuple[str, ...]
    ) -> Answer:
        custom = block.get("CustomResponse")
        if not custom:  # WAF's own 403, no body the widget can read
            return Answer(blocked=True, status=403, rule=rule, labels=labels)
        body_key = custom.get("CustomResponseBodyKey")
        body = json.loads(self.bodies[body_key]["Content"]) if body_key else None
        headers = {h["Name"]: h["Value"] for h in custom.get("ResponseHeaders", [])}
        return Answer(True, custom["ResponseCode"], headers, body, rule, labels)

    def _matches(
        self, rule: str, statement: Mapping[str, Any], request: Request, labels: list[str]
    ) -> bool:
        ((kind, spec),) = statement.items()
        if kind == "AndStatement":
            return all(self._matches(rule, s, request, labels) for s in spec["Statements"])
        if kind == "ByteMatchStatement":
            return _byte_match(spec, request)
        if kind == "SizeConstraintStatement":
            return _size_match(spec, request)
        if kind == "LabelMatchStatement":
            if spec["Scope"] != "LABEL":
                raise UnknownStatement(f"label scope {spec['Scope']}")
            return spec["Key"] in labels
        if kind == "RateBasedStatement":
            return self._over_rate(rule, spec, request, labels)
        if kind == "ManagedRuleGroupStatement":
            return False  # count-only groups (their own test); the model knows no managed rule
        raise UnknownStatement(f"rule {rule}: {kind}")

    def _over_rate(
        self, rule: str, spec: Mapping[str, Any], request: Request, labels: list[str]
    ) -> bool:
        if spec["AggregateKeyType"] != "IP":
            raise UnknownStatement(f"rate key {spec['AggregateKeyType']}")
        scope = spec.get("ScopeDownStatement")
        if scope is not None and not self._matches(rule, scope, request, labels):
            return False
        key = (rule, request.address)
        self._counts[key] += 1
        return self._counts[key] > spec["Limit"]


def _field(spec: Mapping[str, Any], request: Request) -> str | None:
    ((name, detail),) = spec["FieldToMatch"].items()
    if name == "UriPath":
        return request.path
    if name == "Method":
        return request.method
    if name == "SingleHeader":
        return request.header(detail["Name"])
    raise UnknownStatement(f"field {name}")


def _transform(value: str, transformations: list[Mapping[str, Any]]) -> str:
    for step in sorted(transformations, key=lambda t: t["Priority"]):
        if step["Type"] == "URL_DECODE":
            value = urllib.parse.unquote(value)
        elif step["Type"] == "LOWERCASE":
            value = value.lower()
        elif step["Type"] != "NONE":
            raise UnknownStatement(f"text transformation {step['Type']}")
    return value


def _byte_match(spec: Mapping[str, Any], request: Request) -> bool:
    value = _field(spec, request)
    if value is None:  # a missing header matches nothing
        return False
    value = _transform(value, spec["TextTransformations"])
    wanted = spec["SearchString"]
    constraint = spec["PositionalConstraint"]
    if constraint == "EXACTLY":
        return value == wanted
    if constraint == "STARTS_WITH":
        return value.startswith(wanted)
    raise UnknownStatement(f"positional constraint {constraint}")


def _size_match(spec: Mapping[str, Any], request: Request) -> bool:
    ((name, detail),) = spec["FieldToMatch"].items()
    if name != "Body" or spec["ComparisonOperator"] != "GT":
        raise UnknownStatement(f"size constraint on {name} {spec['ComparisonOperator']}")
    if len(request.body) > BODY_INSPECTION_BYTES:
        return detail.get("OversizeHandling") == "MATCH"
    return len(request.body) > spec["Size"]
