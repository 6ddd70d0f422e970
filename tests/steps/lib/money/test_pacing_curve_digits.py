"""A pacing curve is 24 weights of ASCII digits, checked by the one parser S3 uses: a
weight Python's ``isdigit`` or ``int`` would take in another script (``"²"``, ``"٣"``, a
fullwidth one, ``"1_0"``) is refused by the settings check, at synth and at ``serve``, with
one line, instead of passing it and failing every S3 closed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatguard.cli import main
from infra import config
from steps.lib.money import pacing
from steps.lib.runtime.errors import SettingsError
from steps.lib.runtime.settings import Settings, cdk_context

ODD = ["\u00b2", "\u0663", "\uff11", "1_0", "+1", "\u09e7", "\U0001d7d9"]


def curve(odd: str) -> str:
    return ",".join([odd, *["1"] * 23])


@pytest.mark.parametrize("odd", ODD)
def test_settings_refuse_a_weight_that_is_not_ascii_digits(odd):
    with pytest.raises(SettingsError, match=r"pacing_curve .*digits 0-9"):
        Settings().replace(pacing_curve=curve(odd))


def test_the_isdigit_check_it_replaces_passed_a_curve_s3_cannot_parse():
    # The check before: str.isdigit. It takes "²", which int() then refuses in S3.
    assert "\u00b2".isdigit()
    with pytest.raises(ValueError, match="invalid literal"):
        int("\u00b2")
    with pytest.raises(ValueError, match="digits 0-9"):
        pacing.parse_curve(curve("\u00b2"))


@given(st.lists(st.integers(0, 10**6), min_size=24, max_size=24).filter(any), st.data())
def test_every_ascii_curve_the_settings_accept_is_the_one_s3_parses(weights, data):
    text = ",".join(data.draw(st.sampled_from(["{}", " {}", "{} "])).format(w) for w in weights)
    s = Settings().replace(pacing_curve=text)
    assert pacing.parse_curve(s.pacing_curve) == tuple(weights)


def test_synthesis_refuses_the_curve_with_one_line():
    context = cdk_context()
    context["chatguard"] = {**context["chatguard"], "pacing_curve": curve("\u0663")}
    with pytest.raises(config.ConfigError) as refused:
        config.load(context)
    assert "\n" not in str(refused.value) and "pacing_curve" in str(refused.value)


def test_serve_refuses_the_curve_with_one_line(capsys):
    assert main(["serve", "--port", "0", "--pacing-curve", curve("\u00b2")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "pacing_curve" in err
    assert "Traceback" not in err
