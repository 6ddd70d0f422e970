"""The letter rule: a text S1 accepts holds at least one letter or digit a reader can see.

Letters and digits are Unicode's L* and N* categories, any script, minus the
Default_Ignorable_Code_Point characters: those render as nothing, and four of them are
letters by category (the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, category Lo), so a
message of fillers alone would pass a category test, cost a full reservation and still give
the model nothing to answer. Python's unicodedata has no Default_Ignorable property, so the
ranges are written here, from DerivedCoreProperties.txt
(https://www.unicode.org/Public/UCD/latest/ucd/DerivedCoreProperties.txt); a test compares
them with the property as the ``regex`` package knows it, over every code point.
"""

from __future__ import annotations

import bisect
import unicodedata

# Default_Ignorable_Code_Point, inclusive ranges in code point order.
DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)  # fmt: skip
_STARTS = tuple(start for start, _ in DEFAULT_IGNORABLE)


def is_default_ignorable(char: str) -> bool:
    index = bisect.bisect_right(_STARTS, ord(char)) - 1
    return index >= 0 and ord(char) <= DEFAULT_IGNORABLE[index][1]


def is_visible_letter_or_digit(char: str) -> bool:
    return unicodedata.category(char)[0] in "LN" and not is_default_ignorable(char)


def has_letter_or_digit(text: str) -> bool:
    return any(is_visible_letter_or_digit(char) for char in text)
