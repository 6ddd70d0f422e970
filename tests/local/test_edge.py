"""The edge's pure functions: the rate rule's window and its key."""

from __future__ import annotations

from local.engine.edge import RateRule, address_key, socket_address


def test_the_rate_rule_refuses_past_the_limit_until_the_window_moves_on() -> None:
    now = [1000.0]
    rule = RateRule(limit=2, window_seconds=60, clock=lambda: now[0])
    assert [rule.allow("192.0.2.1") for _ in range(3)] == [True, True, False]
    assert rule.allow("192.0.2.2") is True  # another address has its own count
    now[0] += 59
    assert rule.allow("192.0.2.1") is False
    now[0] += 2
    assert rule.allow("192.0.2.1") is True


def test_the_rate_rule_keys_on_the_address_not_the_port() -> None:
    assert address_key("192.0.2.1:443") == address_key("192.0.2.1:50000") == "192.0.2.1"
    assert address_key("[2001:db8::1]:443") == "2001:db8::1"
    assert socket_address("2001:db8::1", 443) == "[2001:db8::1]:443"
    assert socket_address("127.0.0.1", 8787) == "127.0.0.1:8787"
