"""A salt rotation just before midnight: the day of ``rotated_at`` comes from the operator's
clock, the day a step hashes for from the Lambda's. When the write lands after the Lambdas'
midnight (a clock a few seconds behind, or the second the CLI needs between reading the
clock and writing), a container that read the salt in the first seconds of the new day
keeps the old ``current`` for up to ``secret_cache_seconds`` while a fresh one derives the
new salt for the same day: one visitor, two hashes, two quotas."""

from __future__ import annotations

import pytest

from ops import rotate
from steps.lib.runtime.secrets import parse_secret, salt_for_day
from tests.clock import at


def _value(ssm, name):
    return parse_secret(ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"])


def test_a_salt_rotation_seconds_before_midnight_cannot_give_the_new_day_two_salts(ssm, settings):
    name = settings.salt_param
    rotate.run(ssm, "salt", settings, now=at("2026-12-29 10:00:00"), say=lambda _: None)
    # A container reads the salt at 00:00:01 on 31 December (Lambda clock), before the write.
    read_early = _value(ssm, name)
    with pytest.raises(rotate.RotationRefused, match="last 15 minutes"):
        rotate.run(ssm, "salt", settings, now=at("2026-12-30 23:59:58"), say=lambda _: None)
    read_late = _value(ssm, name)  # a fresh container: nothing was written
    late, early = (salt_for_day(v, "2026-12-31") for v in (read_late, read_early))
    assert rotate.fingerprint(late) == rotate.fingerprint(early)  # never print a salt


def test_the_refusal_covers_the_last_15_minutes_only_and_force_overrides_it(ssm, settings):
    with pytest.raises(rotate.RotationRefused):
        rotate.run(ssm, "salt", settings, now=at("2026-12-30 23:45:01"), say=lambda _: None)
    rotate.run(ssm, "salt", settings, now=at("2026-12-30 23:44:59"), say=lambda _: None)
    rotate.run(ssm, "salt", settings, now=at("2026-12-31 23:59:58"), force=True, say=lambda _: None)
    # Only the salt hashes by day; the other secrets rotate at any hour.
    rotate.run(ssm, "signing-key", settings, now=at("2026-12-31 23:59:58"), say=lambda _: None)


def test_a_salt_rotation_at_noon_keeps_one_salt_per_day(ssm, settings):
    # The same harness away from midnight: the day of the rotation keeps its salt, and the
    # next day has one salt whoever read it when.
    name = settings.salt_param
    rotate.run(ssm, "salt", settings, now=at("2026-12-29 10:00:00"), say=lambda _: None)
    before = _value(ssm, name)
    rotate.run(ssm, "salt", settings, now=at("2026-12-30 12:00:00"), say=lambda _: None)
    after = _value(ssm, name)
    assert salt_for_day(after, "2026-12-30") == salt_for_day(before, "2026-12-30")
    assert salt_for_day(after, "2026-12-31") == after.current != before.current
