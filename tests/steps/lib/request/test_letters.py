"""S1's letter rule without the characters that render as nothing: a message of Hangul
fillers or other Default_Ignorable code points has no letter a reader can see, and is
refused before any quota or ledger write, like one of spaces."""

from __future__ import annotations

import unicodedata

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from steps.lib.request import letters
from steps.lib.request.contract import validate_request
from steps.lib.runtime.errors import BadRequest
from steps.lib.runtime.settings import Settings

S = Settings()
FILLERS = ["\u115f", "\u1160", "\u3164", "\uffa0"]
IGNORABLE = [chr(cp) for start, end in letters.DEFAULT_IGNORABLE for cp in range(start, end + 1)]


def test_the_table_is_unicodes_default_ignorable_property_at_every_code_point():
    prop = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    ours = [cp for cp in range(0x110000) if letters.is_default_ignorable(chr(cp))]
    theirs = [cp for cp in range(0x110000) if prop.match(chr(cp))]
    assert ours == theirs


@pytest.mark.parametrize("filler", FILLERS)
def test_a_message_of_hangul_fillers_is_refused(filler):
    assert unicodedata.category(filler) == "Lo"  # a letter by category: the naive rule's hole
    with pytest.raises(BadRequest, match="message must contain at least one letter or digit"):
        validate_request({"message": filler * 5 + " ?"}, S)


def test_a_history_turn_of_fillers_is_refused_too():
    body = {"message": "ok", "history": [{"role": "user", "content": "\u3164\u200b\u3164"}]}
    with pytest.raises(BadRequest, match=r"history\[0\]\.content must contain at least one"):
        validate_request(body, S)


def test_the_category_rule_alone_accepts_every_filler():
    # The rule before: any L* or N* character. Each filler passes it; ours refuses it.
    assert all(unicodedata.category(f)[0] in "LN" for f in FILLERS)
    assert not any(letters.has_letter_or_digit(f) for f in FILLERS)


INVISIBLE = st.text(st.sampled_from([*IGNORABLE[:200], *FILLERS, " ", "?", "\u00a0"]), min_size=1)


@settings(max_examples=200, deadline=None)
@given(INVISIBLE, st.characters(whitelist_categories=("Lu", "Ll", "Lo", "Nd")), st.data())
def test_one_visible_letter_is_what_separates_refused_from_accepted(text, word, data):
    # Lo holds the fillers themselves: a drawn filler is not a visible letter.
    if letters.is_default_ignorable(word):
        word = "a"
    with pytest.raises(BadRequest, match="at least one letter or digit"):
        validate_request({"message": text}, S)
    at = data.draw(st.integers(0, len(text)))
    message = text[:at] + word + text[at:]
    assert validate_request({"message": message}, S)["message"] == message
