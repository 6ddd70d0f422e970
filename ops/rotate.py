"""`chatguard rotate origin-secret|salt|signing-key [--dry-run]`: rotation with overlap.

Every secret is the JSON value of docs/internals.md, written through the steps' own
``render_secret``. The new value becomes ``current``; the old ``current`` becomes
``previous``, still accepted for ``secret_grace_seconds`` (origin secret, signing key) or
still used for the rest of today's UTC day (visitor salt, so nobody gets a fresh quota).

The origin secret has a second copy, CloudFront's ``X-Origin-Verify`` origin header. The
order matters: write SSM first, wait out the steps' secret cache (every warm OriginVerify
then accepts both values), and only then make CloudFront send the new value.
"""

from __future__ import annotations

import hashlib
import secrets as random_source
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from steps.lib.request.identity import day_of
from steps.lib.runtime.secrets import SecretValue, parse_secret, render_secret
from steps.lib.runtime.settings import Settings

from .secret_params import PARAMETERS

ORIGIN_HEADER = "X-Origin-Verify"


# No salt rotation in the last minutes of a UTC day: ``rotated_at`` is this machine's clock,
# and if the write lands after the Lambdas' midnight (a clock behind theirs, or the moment
# between reading the clock and writing), the new day would get two salts (secrets.py).
SALT_QUIET_SECONDS = 15 * 60


class RotationRefused(Exception):
    """Rotating now would cut off a value still in use; nothing was written."""


@dataclass(frozen=True, slots=True)
class Plan:
    kind: str
    parameter: str
    new: SecretValue
    old: SecretValue
    key_id: str | None
    overlap_until: str  # when the old value stops being accepted (human-readable, UTC)

    def describe(self) -> dict[str, Any]:
        """What the operator sees: fingerprints only, never a value."""
        return {
            "secret": self.kind,
            "parameter": self.parameter,
            "old": fingerprint(self.old.current),
            "new": fingerprint(self.new.current),
            "old_accepted_until": self.overlap_until,
        }


def fingerprint(value: str) -> str:
    """Enough to tell two versions apart; reveals nothing of a 256-bit random value."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:10]


def plan(ssm: Any, kind: str, s: Settings, *, now: float, force: bool = False) -> Plan:
    if kind not in PARAMETERS:
        raise ValueError(f"unknown secret {kind!r}; choose one of {', '.join(PARAMETERS)}")
    name = getattr(s, PARAMETERS[kind])
    old = parse_secret(ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"])
    if not force:
        _refuse_if_still_overlapping(kind, old, s, now)
    new = SecretValue(
        current=random_source.token_urlsafe(32), previous=old.current, rotated_at=int(now)
    )
    return Plan(kind, name, new, old, _key_id(ssm, name), _overlap_until(kind, new, s))


def apply(ssm: Any, p: Plan) -> None:
    kwargs: dict[str, Any] = {
        "Name": p.parameter,
        "Value": render_secret(p.new),
        "Type": "SecureString",
        "Overwrite": True,
    }
    if p.key_id:
        kwargs["KeyId"] = p.key_id  # overwriting without it would fall back to aws/ssm
    ssm.put_parameter(**kwargs)


def origin_header_targets(cloudfront: Any, distribution_id: str) -> list[str]:
    """The ids of the origins that carry the header; none is an error (wrong stack?)."""
    config = cloudfront.get_distribution_config(Id=distribution_id)["DistributionConfig"]
    return list(_origin_headers(config, distribution_id))


def update_origin_header(cloudfront: Any, distribution_id: str, value: str) -> list[str]:
    """Set the header on every origin that has it, guarded by the config's ETag."""
    response = cloudfront.get_distribution_config(Id=distribution_id)
    config, etag = response["DistributionConfig"], response["ETag"]
    headers = _origin_headers(config, distribution_id)
    for header in headers.values():
        header["HeaderValue"] = value
    cloudfront.update_distribution(Id=distribution_id, IfMatch=etag, DistributionConfig=config)
    return list(headers)


def _origin_headers(config: dict[str, Any], distribution_id: str) -> dict[str, dict[str, Any]]:
    """{origin id: its header item} of every origin carrying the header; none is refused."""
    found = {o["Id"]: h for o in config["Origins"]["Items"] if (h := _header(o)) is not None}
    if not found:
        raise RotationRefused(
            f"distribution {distribution_id} has no {ORIGIN_HEADER} origin header"
        )
    return found


def _header(origin: dict[str, Any]) -> dict[str, Any] | None:
    for item in origin.get("CustomHeaders", {}).get("Items", []) or []:
        if item["HeaderName"].lower() == ORIGIN_HEADER.lower():
            return item  # type: ignore[no-any-return]
    return None


def _refuse_if_still_overlapping(kind: str, old: SecretValue, s: Settings, now: float) -> None:
    if kind == "salt" and day_of(now) != day_of(now + SALT_QUIET_SECONDS):
        raise RotationRefused(
            "the salt is not rotated in the last 15 minutes of a UTC day: a write that lands "
            "after midnight would give tomorrow two salts (two quotas per visitor). Try after "
            "00:00 UTC, or --force."
        )
    if old.previous is None:
        return
    if kind == "salt":
        if day_of(old.rotated_at) == day_of(now):
            raise RotationRefused(
                "the salt was already rotated today (UTC); a second rotation would change "
                "today's visitor hashes and hand everyone a fresh quota. Try tomorrow, or --force."
            )
        return
    if now < old.rotated_at + s.secret_grace_seconds:
        left = int(old.rotated_at + s.secret_grace_seconds - now)
        raise RotationRefused(
            f"the previous {kind} is still accepted for {left} s; rotating now would cut it off "
            "while callers may still use it. Wait, or --force."
        )


def _overlap_until(kind: str, new: SecretValue, s: Settings) -> str:
    if kind == "salt":
        return f"end of {day_of(new.rotated_at)} (UTC)"
    end = datetime.fromtimestamp(new.rotated_at + s.secret_grace_seconds, tz=UTC)
    return end.strftime("%Y-%m-%d %H:%M:%S UTC")


def _key_id(ssm: Any, name: str) -> str | None:
    found = ssm.describe_parameters(ParameterFilters=[{"Key": "Name", "Values": [name]}])
    for parameter in found.get("Parameters", []):
        if parameter.get("Name") == name:
            return parameter.get("KeyId")  # type: ignore[no-any-return]
    return None


def run(
    ssm: Any,
    kind: str,
    s: Settings,
    *,
    now: float,
    dry_run: bool = False,
    force: bool = False,
    edge: Any = None,
    say: Any = print,
) -> dict[str, Any]:
    """Plan, check the edge copy, then write: SSM, wait out the cache, the edge last.

    ``edge`` (origin secret only) has ``targets()``, ``wait()`` and ``update(value)``:
    CloudFront on AWS (``CloudFrontEdge``), the local server's edge offline.
    """
    p = plan(ssm, kind, s, now=now, force=force)
    result = p.describe() | {"dry_run": dry_run, "applied": False}
    if kind == "origin-secret" and edge is not None:
        result["edge"] = edge.targets()  # fails before any write if the header is missing
    if dry_run:
        return result
    apply(ssm, p)
    say(
        f"wrote {p.parameter}: new {result['new']}, "
        f"old accepted until {result['old_accepted_until']}"
    )
    if kind == "origin-secret" and edge is not None:
        edge.wait()
        result["edge_updated"] = edge.update(p.new.current)
    result["applied"] = True
    return result


@dataclass(slots=True)
class CloudFrontEdge:
    """The CloudFront copy of the origin secret, updated after the cache wait."""

    cloudfront: Any
    distribution_id: str
    wait_seconds: int
    sleep: Any
    say: Any = print

    def targets(self) -> list[str]:
        return [
            f"{self.distribution_id}/{o}"
            for o in origin_header_targets(self.cloudfront, self.distribution_id)
        ]

    def wait(self) -> None:
        if self.wait_seconds > 0:
            self.say(
                f"waiting {self.wait_seconds} s for every OriginVerify to re-read the secret..."
            )
            self.sleep(self.wait_seconds)

    def update(self, value: str) -> list[str]:
        origins = update_origin_header(self.cloudfront, self.distribution_id, value)
        self.say(
            f"CloudFront {self.distribution_id}: {ORIGIN_HEADER} updated on {', '.join(origins)}"
        )
        return origins


def render(result: dict[str, Any]) -> str:
    verb = "would rotate" if result["dry_run"] else "rotated"
    lines = [
        f"{verb} {result['secret']} ({result['parameter']})",
        f"  current: {result['old']} -> {result['new']}",
        f"  the old value stays valid until {result['old_accepted_until']}",
    ]
    if "edge" in result:
        lines.append(f"  {ORIGIN_HEADER} on: {', '.join(result['edge'])}")
    if result["dry_run"]:
        lines.append("  dry run: nothing was written")
    return "\n".join(lines)
