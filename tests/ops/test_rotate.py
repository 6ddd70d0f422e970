"""Secret rotation keeps an overlap, never prints a value, and updates CloudFront last."""

from __future__ import annotations

import json

import pytest

from ops import rotate
from steps.lib.runtime.secrets import accepted_values, parse_secret, salt_for_day

NOW = 1_800_000_000  # 2027-01-15 08:00 UTC


def _value(ssm, name):
    return ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]


def test_rotation_makes_the_old_value_previous_and_both_are_accepted_during_grace(ssm, settings):
    name = settings.signing_key_param
    result = rotate.run(ssm, "signing-key", settings, now=NOW, say=lambda _: None)
    secret = parse_secret(_value(ssm, name))
    assert result["applied"] and secret.previous == "a" * 43 and secret.rotated_at == NOW
    assert secret.current != "a" * 43 and len(secret.current) >= 40
    assert accepted_values(secret, NOW + 10, settings.secret_grace_seconds) == (
        secret.current,
        "a" * 43,
    )
    after_grace = NOW + settings.secret_grace_seconds + 1
    assert accepted_values(secret, after_grace, settings.secret_grace_seconds) == (secret.current,)


def test_rotation_keeps_the_parameter_kms_key(ssm, settings):
    rotate.run(ssm, "salt", settings, now=NOW, say=lambda _: None)
    found = ssm.describe_parameters(
        ParameterFilters=[{"Key": "Name", "Values": [settings.salt_param]}]
    )
    assert found["Parameters"][0]["KeyId"] == "alias/chatguard"


def test_dry_run_writes_nothing_and_shows_fingerprints_not_values(ssm, settings):
    before = _value(ssm, settings.origin_secret_param)
    result = rotate.run(ssm, "origin-secret", settings, now=NOW, dry_run=True)
    assert _value(ssm, settings.origin_secret_param) == before
    text = rotate.render(result)
    assert "dry run" in text and "a" * 43 not in text and "sha256:" in text
    assert not result["applied"]


def test_second_rotation_inside_the_grace_period_is_refused_unless_forced(ssm, settings):
    rotate.run(ssm, "origin-secret", settings, now=NOW, say=lambda _: None)
    first = _value(ssm, settings.origin_secret_param)
    with pytest.raises(rotate.RotationRefused, match="still accepted"):
        rotate.run(ssm, "origin-secret", settings, now=NOW + 60, say=lambda _: None)
    assert _value(ssm, settings.origin_secret_param) == first
    rotate.run(ssm, "origin-secret", settings, now=NOW + 60, force=True, say=lambda _: None)
    assert (
        parse_secret(_value(ssm, settings.origin_secret_param)).previous
        == json.loads(first)["current"]
    )


def test_salt_rotation_never_changes_todays_hash_and_refuses_a_second_one_today(ssm, settings):
    today, tomorrow = "2027-01-15", "2027-01-16"
    old = parse_secret(_value(ssm, settings.salt_param))
    rotate.run(ssm, "salt", settings, now=NOW, say=lambda _: None)
    new = parse_secret(_value(ssm, settings.salt_param))
    assert salt_for_day(new, today) == salt_for_day(old, today)
    assert salt_for_day(new, tomorrow) == new.current != old.current
    with pytest.raises(rotate.RotationRefused, match="fresh quota"):
        rotate.run(ssm, "salt", settings, now=NOW + 3 * 3600, say=lambda _: None)


def test_origin_secret_updates_cloudfront_after_the_cache_wait_with_the_etag(
    ssm, settings, cloudfront
):
    client, distribution = cloudfront
    events: list[str] = []
    spy = _EtagSpy(client, events)
    edge = rotate.CloudFrontEdge(
        spy,
        distribution,
        wait_seconds=300,
        sleep=lambda s: events.append(f"sleep {s}"),
        say=lambda _: None,
    )
    rotate.run(
        ssm, "origin-secret", settings, now=NOW, edge=edge, say=lambda m: events.append("ssm")
    )
    new = parse_secret(_value(ssm, settings.origin_secret_param)).current
    headers = _origin_headers(client, distribution)
    assert headers == {"api-origin": new}
    # SSM first, then the wait, then CloudFront; guarded by the ETag just read.
    assert events == ["ssm", "sleep 300", "update IfMatch=ok"]


def test_origin_rotation_refuses_before_writing_when_cloudfront_lacks_the_header(
    ssm, settings, cloudfront
):
    client, distribution = cloudfront
    response = client.get_distribution_config(Id=distribution)
    config = response["DistributionConfig"]
    for origin in config["Origins"]["Items"]:
        origin["CustomHeaders"] = {"Quantity": 0, "Items": []}
    client.update_distribution(Id=distribution, IfMatch=response["ETag"], DistributionConfig=config)
    before = _value(ssm, settings.origin_secret_param)
    edge = rotate.CloudFrontEdge(client, distribution, wait_seconds=0, sleep=lambda _: None)
    with pytest.raises(rotate.RotationRefused, match="X-Origin-Verify"):
        rotate.run(ssm, "origin-secret", settings, now=NOW, edge=edge)
    assert _value(ssm, settings.origin_secret_param) == before


def test_a_malformed_stored_secret_is_an_error_and_is_not_overwritten(ssm, settings):
    from steps.lib.runtime.errors import SettingsError

    ssm.put_parameter(
        Name=settings.salt_param, Value="not json", Type="SecureString", Overwrite=True
    )
    with pytest.raises(SettingsError):
        rotate.run(ssm, "salt", settings, now=NOW)
    assert _value(ssm, settings.salt_param) == "not json"


def _origin_headers(client, distribution):
    config = client.get_distribution_config(Id=distribution)["DistributionConfig"]
    return {
        o["Id"]: h["HeaderValue"]
        for o in config["Origins"]["Items"]
        for h in o.get("CustomHeaders", {}).get("Items", [])
    }


class _EtagSpy:
    """CloudFront client that checks update_distribution carries the ETag it just read."""

    def __init__(self, client, events):
        self._client, self._events, self._etag = client, events, None

    def get_distribution_config(self, **kwargs):
        response = self._client.get_distribution_config(**kwargs)
        self._etag = response["ETag"]
        return response

    def update_distribution(self, **kwargs):
        self._events.append(
            "update IfMatch=" + ("ok" if kwargs["IfMatch"] == self._etag else "stale")
        )
        return self._client.update_distribution(**kwargs)
