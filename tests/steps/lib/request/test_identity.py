"""The visitor identity: IP alone, same day, salted; IPv6 per /64; fail closed."""

from __future__ import annotations

import time

import pytest

from steps import quota
from steps.lib.request import identity
from steps.lib.runtime.errors import IdentityError
from tests.clock import pin

DAY = "2026-11-29"
SALT = "salt-0123456789abcdef"


def test_hash_is_16_hex_and_ignores_the_port():
    a = identity.visitor_hash("198.51.100.4:1111", DAY, SALT)
    b = identity.visitor_hash("198.51.100.4:65535", DAY, SALT)
    assert a == b and len(a) == 16 and int(a, 16) >= 0


def test_hash_changes_with_day_salt_and_ip():
    base = identity.visitor_hash("198.51.100.4:1111", DAY, SALT)
    assert identity.visitor_hash("198.51.100.4:1111", "2026-11-30", SALT) != base
    assert identity.visitor_hash("198.51.100.4:1111", DAY, SALT + "x") != base
    assert identity.visitor_hash("198.51.100.5:1111", DAY, SALT) != base


@pytest.mark.parametrize(
    "other",
    ["[2001:db8:aa:bb:ffff:1:2:3]:443", "2001:db8:aa:bb::9:80", "[2001:DB8:AA:BB::1]:1"],
)
def test_two_ipv6_addresses_in_one_slash_64_share_one_visitor(other):
    first = identity.visitor_hash("[2001:db8:aa:bb::1]:5555", DAY, SALT)
    assert identity.visitor_hash(other, DAY, SALT) == first


def test_a_different_slash_64_is_a_different_visitor():
    first = identity.visitor_hash("[2001:db8:aa:bb::1]:5555", DAY, SALT)
    assert identity.visitor_hash("[2001:db8:aa:bc::1]:5555", DAY, SALT) != first


def test_ipv4_mapped_ipv6_is_the_ipv4_visitor():
    v4 = identity.visitor_hash("192.0.2.10:80", DAY, SALT)
    assert identity.visitor_hash("[::ffff:192.0.2.10]:80", DAY, SALT) == v4


@pytest.mark.parametrize("subnet", ["0", "1", "ffff"])
def test_a_6to4_address_is_its_ipv4_visitor_whatever_the_subnet(subnet):
    # 2002:c000:20a::/48 is derived from 192.0.2.10: its 65,536 /64s are one visitor.
    v4 = identity.visitor_hash("192.0.2.10:80", DAY, SALT)
    assert identity.visitor_hash(f"[2002:c000:20a:{subnet}::1]:80", DAY, SALT) == v4


@pytest.mark.parametrize(
    "address",
    [
        None,
        "",
        "   ",
        42,
        "192.0.2.1",
        "192.0.2.1:",
        "192.0.2.1:70000",
        "192.0.2.1:port",
        "192.0.2.300:80",
        "example.com:80",
        "[2001:db8::1]",
        "2001:db8::1",
        "[fe80::1%eth0]:80",
        "192.0.2.1:80, 198.51.100.2:80",
        "[2001:db8::zz]:80",
        "x" * 100,
        "0192.0.2.1:80",
    ],
)
def test_a_missing_or_malformed_address_raises_identity_error(address):
    with pytest.raises(IdentityError):
        identity.visitor_hash(address, DAY, SALT)


def test_an_empty_salt_is_refused():
    with pytest.raises(IdentityError):
        identity.visitor_hash("192.0.2.1:80", DAY, "")


def _quota(aws, **extra):
    return quota.handler({"requestId": "r", "viewerAddress": "203.0.113.9:4000", **extra}, None)


def test_rotating_user_agent_or_forwarded_for_never_yields_a_fresh_quota(aws, monkeypatch):
    # Whatever else arrives with the event (a tampered execution input, headers copied in by
    # a future change), the handler reads viewerAddress alone. The clock stands still, so
    # the five messages share one UTC day even when the suite runs across midnight.
    pin(monkeypatch, time.time())
    monkeypatch.setenv("CHATGUARD_VISITOR_MESSAGE_LIMIT", "2")
    visitors = set()
    decisions = []
    for i in range(5):
        out = _quota(aws, headers={"User-Agent": f"agent-{i}", "X-Forwarded-For": f"192.0.2.{i}"})
        decisions.append(out["decision"])
        visitors.add(out.get("visitor"))
    assert decisions == ["allowed", "allowed", "limited", "limited", "limited"]
    assert len(visitors - {None}) == 1


def test_ipv6_neighbours_share_one_quota_through_the_handler(aws, monkeypatch):
    monkeypatch.setenv("CHATGUARD_VISITOR_MESSAGE_LIMIT", "1")
    first = quota.handler({"requestId": "a", "viewerAddress": "[2001:db8:1:2::10]:1"}, None)
    second = quota.handler({"requestId": "b", "viewerAddress": "[2001:db8:1:2::99]:2"}, None)
    assert (first["decision"], second["decision"]) == ("allowed", "limited")


def test_quota_with_a_malformed_address_fails_closed_before_any_aws_call(aws, monkeypatch):
    from steps.lib.runtime import clients, secrets

    def no_aws(*args, **kwargs):
        raise AssertionError("no AWS call expected")

    monkeypatch.setattr(secrets, "_fetch", no_aws)
    monkeypatch.setattr(clients, "dynamodb", no_aws)
    with pytest.raises(IdentityError):
        quota.handler({"requestId": "r", "viewerAddress": "not-an-ip"}, None)
    with pytest.raises(IdentityError):
        quota.handler({"requestId": "r"}, None)
    assert aws.count_items() == 0


def test_the_salt_switches_only_at_the_next_utc_day(aws):
    from steps.lib.runtime.secrets import SecretValue, salt_for_day

    rotated = SecretValue("new-salt-0123456789", "old-salt-0123456789", 1_764_400_000)
    rotation_day = identity.day_of(rotated.rotated_at)
    assert salt_for_day(rotated, rotation_day) == "old-salt-0123456789"
    assert salt_for_day(rotated, "2099-01-01") == "new-salt-0123456789"


# 2026-12-31 23:58:00 UTC, a rotation 30 s later, and the first minutes of 2027-01-01: a
# rotation shortly before midnight, on the last day of a month and of a year.
BEFORE_MIDNIGHT = 1_798_761_480.0
ROTATED_AT = 1_798_761_510
AFTER_MIDNIGHT = 1_798_761_660.0  # 00:01:00, well inside the 300 s secret cache


def _visitor_at(monkeypatch, instant: float) -> str:
    import time

    monkeypatch.setattr(time, "time", lambda: instant)
    out = quota.handler({"requestId": f"r{instant}", "viewerAddress": "203.0.113.9:4000"}, None)
    return out["visitor"]


def _rotate_salt_before_midnight(aws, monkeypatch) -> tuple[str, str]:
    """One container reads the salt at 23:58 and keeps it cached; the operator rotates at
    23:58:30. Returns (that warm container's visitor after midnight, a cold container's)."""
    from steps.lib.runtime import secrets
    from steps.lib.runtime.secrets import SecretValue
    from steps.lib.runtime.settings import Settings

    s = Settings()
    aws.put_secret(s.salt_param, SecretValue("old-salt-0123456789", None, 1_700_000_000))
    secrets.cache_clear()
    _visitor_at(monkeypatch, BEFORE_MIDNIGHT)  # the warm container caches the old value
    rotated = SecretValue("new-salt-0123456789", "old-salt-0123456789", ROTATED_AT)
    aws.put_secret(s.salt_param, rotated)
    warm = _visitor_at(monkeypatch, AFTER_MIDNIGHT)
    secrets.cache_clear()  # a container started after the rotation
    cold = _visitor_at(monkeypatch, AFTER_MIDNIGHT)
    return warm, cold


def test_a_salt_rotated_just_before_midnight_gives_one_visitor_one_identity_next_day(
    aws, monkeypatch
):
    monkeypatch.setenv("CHATGUARD_VISITOR_MESSAGE_LIMIT", "100")
    warm, cold = _rotate_salt_before_midnight(aws, monkeypatch)
    assert warm == cold


def test_a_cache_that_outlives_its_day_would_mint_a_second_identity(aws, monkeypatch):
    # The naive cache (time-to-live only) on the same harness: two hashes, two quotas.
    from steps.lib.runtime import secrets

    monkeypatch.setenv("CHATGUARD_VISITOR_MESSAGE_LIMIT", "100")
    monkeypatch.setattr(secrets, "_cache_period", lambda now: "one period forever")
    warm, cold = _rotate_salt_before_midnight(aws, monkeypatch)
    assert warm != cold
