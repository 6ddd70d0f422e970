"""Word tokens and a token-count approximation (stdlib only: gate steps import this).

`count_tokens` is a deterministic APPROXIMATION of a model tokenizer, not the tokenizer:
every run of letters or digits costs one token per started 6 characters (so "the" = 1,
"reconciliation" = 3) and every other visible character (punctuation, symbols) costs
one. On English prose it lands at or a little above what Claude's and Titan's
tokenizers report (about 1.3 tokens per word), which is the safe side for a budget: a
grounding block sized with it never overflows the real model's budget by much, and a
cost reserve computed from it over-counts rather than under-counts.

`words` gives the lower-cased word tokens that lexical scoring uses. Short words are
kept, so acronyms such as "waf", "ddos", "owasp" or "s3" stay distinct terms. `terms`
adds the two steps ranking needs: stop words dropped and a light folding of plurals
and verb endings.
"""

from __future__ import annotations

import re

# Bump when `words`/`terms` change: an artifact's lexical statistics are only valid for
# the rule that built them, so the runtime refuses an artifact built with another version.
TERMS_VERSION = 2  # 2: verb endings folded
_VOWELS = frozenset("aeiouy")
_APOSTROPHE = "\u2019"  # typographic apostrophe, folded to '
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*", re.UNICODE)
_PIECE = re.compile(r"[^\W_]+|[^\w\s]|_", re.UNICODE)
_CHARS_PER_WORD_TOKEN = 6

# Function words carry no topic; dropping them keeps lexical overlap about content.
_STOPWORDS = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only
    or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would
    you your yours yourself yourselves s t don doesn didn isn aren wasn weren won can't
    i'm it's what's that's there's let's also may might must shall us via per
"""
STOPWORDS = frozenset(_STOPWORDS.split())


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters/digits, inner apostrophes kept), in order."""
    return [w.replace(_APOSTROPHE, "'") for w in _WORD.findall(text.lower())]


def count_tokens(text: str) -> int:
    """Deterministic token estimate; see the module docstring for the rule."""
    total = 0
    for piece in _PIECE.findall(text):
        if piece[0].isalnum():
            total += -(-len(piece) // _CHARS_PER_WORD_TOKEN)
        else:
            total += 1
    return total


def fold(word: str) -> str:
    """Fold possessives, simple English plurals and the commonest verb endings, so that
    "attacks" meets "attack" and "installing", "installed" and "install" meet as well.

    A light suffix rule, not a full stemmer: it only has to send a question's word and
    the page's word to the same term (both sides go through it).
    """
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "shes", "ches", "xes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is", "os")):
        word = word[:-1]
    return _verb_ending(word)


def _verb_ending(word: str) -> str:
    for suffix, replacement in (("ational", "ate"), ("ation", "ate"), ("ing", ""), ("ed", "")):
        stem = word[: -len(suffix)] + replacement
        if word.endswith(suffix) and len(stem) >= 4 and any(c in _VOWELS for c in stem):
            word = stem
            if word[-1] == word[-2] and word[-1] not in "lsz":  # "running" -> "run"
                word = word[:-1]
            break
    if len(word) > 4 and word.endswith("e"):  # "deprecate" meets "deprecated"
        word = word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Content terms for lexical scoring and hashing: words minus stop words, folded."""
    return [fold(w) for w in words(text) if w not in STOPWORDS]
