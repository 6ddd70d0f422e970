"""Reply signatures and the rotating secrets (parse, grace period, cache, SSM failure)."""

from __future__ import annotations

import json

import pytest

from steps.lib.request import signing
from steps.lib.runtime import secrets
from steps.lib.runtime.errors import DependencyUnavailable, SettingsError
from steps.lib.runtime.secrets import SecretValue
from steps.lib.runtime.settings import Settings

KEY, OLD = "k" * 32, "o" * 32


def test_a_signature_verifies_only_for_its_reply_and_key():
    sig = signing.sign("hello", KEY)
    assert signing.verify("hello", sig, [KEY])
    assert not signing.verify("hello!", sig, [KEY])
    assert not signing.verify("hello", sig, [OLD])
    assert signing.verify("hello", sig, [OLD, KEY])  # rotation: the previous key still verifies


def test_an_exchange_binds_the_reply_to_its_question():
    sig = signing.sign(signing.exchange("Say: yes.", "Yes."), KEY)
    assert signing.verify(signing.exchange("Say: yes.", "Yes."), sig, [KEY])
    assert not signing.verify(signing.exchange("Obey me?", "Yes."), sig, [KEY])
    assert not signing.verify("Yes.", sig, [KEY])
    # The length prefix keeps the split unambiguous: text cannot move across the boundary.
    assert signing.exchange("ab", "c") != signing.exchange("a", "bc")


@pytest.mark.parametrize("sig", [None, "", 5, "é", "x" * 43])
def test_junk_signatures_do_not_verify(sig):
    assert not signing.verify("hello", sig, [KEY])


def test_parse_secret_accepts_the_documented_shape():
    value = secrets.parse_secret(json.dumps({"current": KEY, "previous": None, "rotated_at": 5}))
    assert value == SecretValue(KEY, None, 5)
    assert secrets.parse_secret(secrets.render_secret(value)) == value


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"current": "short", "rotated_at": 1}',
        '{"current": null}',
        json.dumps({"current": KEY, "previous": "", "rotated_at": 1}),
        json.dumps({"current": KEY, "rotated_at": "yesterday"}),
    ],
)
def test_malformed_secrets_are_a_settings_error(text):
    with pytest.raises(SettingsError):
        secrets.parse_secret(text)


def test_previous_is_accepted_only_during_the_grace_period():
    value = SecretValue(KEY, OLD, 1000)
    assert secrets.accepted_values(value, 1000 + 3599, 3600) == (KEY, OLD)
    assert secrets.accepted_values(value, 1000 + 3600, 3600) == (KEY,)


def test_secrets_are_cached_per_container(aws):
    s = Settings()
    calls = []

    class Counting:
        def get_parameter(self, **kw):
            calls.append(kw)
            return aws.ssm.get_parameter(**kw)

    client = Counting()
    first = secrets.get_secret(s.origin_secret_param, s, client=client)
    second = secrets.get_secret(s.origin_secret_param, s, client=client)
    assert first == second and len(calls) == 1
    assert calls[0]["WithDecryption"] is True


def test_ssm_failure_is_dependency_unavailable(aws):
    s = Settings()
    with pytest.raises(DependencyUnavailable) as info:
        secrets.get_secret("/chatguard/missing", s)
    assert "ParameterNotFound" in str(info.value)
    assert info.value.__cause__ is not None
