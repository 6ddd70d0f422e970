from __future__ import annotations

from decimal import Decimal

import pytest

from steps.lib.runtime.errors import SettingsError
from steps.lib.runtime.settings import Settings, cdk_context


def test_defaults_equal_the_cdk_json_context():
    # cdk.json is the one settings source; the dataclass defaults must not drift from it.
    context = cdk_context()["chatguard"]
    assert Settings.from_mapping(context) == Settings()


def test_env_overrides_are_typed():
    s = Settings.from_env(
        {"CHATGUARD_DAILY_CEILING_USD": "2.5", "CHATGUARD_VISITOR_MESSAGE_LIMIT": "3"}
    )
    assert s.daily_ceiling_micros == 2_500_000
    assert s.visitor_message_limit == 3
    assert s.visitor_ceiling_micros == 125_000


@pytest.mark.parametrize(
    "env",
    [
        {"CHATGUARD_DAILY_CEILING_USD": "-1"},
        {"CHATGUARD_DAILY_CEILING_USD": "lots"},
        {"CHATGUARD_DAILY_CEILING_USD": "NaN"},
        {"CHATGUARD_VISITOR_MESSAGE_LIMIT": "0"},
        {"CHATGUARD_VISITOR_MESSAGE_LIMIT": ""},
        {"CHATGUARD_VISITOR_COST_SHARE": "1.5"},
        {"CHATGUARD_MODEL_BACKEND": "openai"},
        {"CHATGUARD_DAILY_CEILING_USD": "20", "CHATGUARD_MONTHLY_CEILING_USD": "10"},
    ],
)
def test_invalid_settings_raise_one_clear_error(env):
    with pytest.raises(SettingsError, match=r"settings?"):
        Settings.from_env(env)


def test_unknown_keys_are_refused_not_ignored():
    with pytest.raises(SettingsError, match="daily_cieling_usd"):
        Settings.from_mapping({"daily_cieling_usd": "1"})


def test_to_env_round_trips():
    s = Settings().replace(daily_ceiling_usd="3.25", max_output_tokens=100)
    assert Settings.from_env(s.to_env()) == s
    assert s.daily_ceiling_usd == Decimal("3.25")
