"""Which chunks ground an answer: the question's matches first, the current page as bounded
context (stdlib only).

The widget always sends the page the visitor is reading. That page informs the answer; it
never replaces it. The policy, chosen by `make bench-retrieval` (docs/benchmarks.md,
"Asked from where the visitor stands"):

1. The top matches for the question take the budget first, best first.
2. The current page's chunks come next, ranked by their score for the question (not in
   page order), within PAGE_SHARE of the budget: a long page (a home page, a changelog)
   can never push the matches out, and what it adds is its part nearest the question.
3. A message about the page itself ("summarise this page", "what is this page about")
   has no topic of its own to match: there the page is the answer, its chunks come first
   in page order and are cited first (`asks_about_this_page`).

The previous policy put the current page first, in page order, until the budget was full:
on a real documentation site every question asked from its home page (longer than the
budget) was answered from the home page (page-level MRR 0.00 from the site's longest page).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

# Share of the grounding budget the current page may take beside the matches. 0.25 of
# 1,500 tokens is two or three sections: enough for "what does this mean here?".
PAGE_SHARE = 0.25
TOP_K = 5

# A message whose only topic is the page it is asked from. Anchored on the page words so
# "what is a page rule?" is a question, not a request about this page.
_THIS_PAGE = re.compile(
    r"\b(?:this|the\s+current|current)\s+(?:page|article|post|doc|document|section)\b"
    r"|\b(?:summari[sz]e|summary\s+of|tl;?dr|explain)\s+(?:this|it)\b",
    re.IGNORECASE,
)
# More than this many content words besides the page words: a question with a topic of its
# own ("on this page, how do I set a timeout for the connect phase?"), ranked as usual.
_OWN_TOPIC_WORDS = 4
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_FILLER_WORDS = """what is are was this page article post doc document section current the about
it summarise summarize summary explain tell me of in on a an please can you could give tl dr
tldr does say says cover covers main points here"""
_FILLER = frozenset(_FILLER_WORDS.split())


class _Chunk(Protocol):
    @property
    def tokens(self) -> int: ...


class _Index(Protocol):
    @property
    def chunks(self) -> Sequence[_Chunk]: ...

    def page_chunks(self, page: str | None) -> tuple[int, ...]: ...


@dataclass(frozen=True, slots=True)
class Selection:
    chosen: tuple[int, ...]  # chunk indexes in reference order (what leads is cited first)
    cited: tuple[int, ...]  # chunk indexes an answer cites, best first


def asks_about_this_page(message: str) -> bool:
    """True for "summarise this page", "what is this page about?", "tl;dr this": a message
    whose topic is the page itself, with few words of a topic of its own."""
    if not _THIS_PAGE.search(message):
        return False
    own = [w for w in _WORD.findall(message.lower()) if w not in _FILLER]
    return len(own) <= _OWN_TOPIC_WORDS


def select(
    kb: _Index,
    ranked: Sequence[tuple[int, float]],
    page: str | None,
    budget_tokens: int,
    *,
    top_k: int = TOP_K,
    relevance: Callable[[int], float] | None = None,
    about_page: bool = False,
) -> Selection:
    """The grounding of one question within `budget_tokens` (see the module docstring).

    `ranked`: (chunk, score) best first; `relevance(i)`: chunk i's score for the question
    (the page's chunks are ranked by it; None keeps page order). A chunk that would
    overflow its allowance is skipped: a later, shorter one may still fit.
    """
    matches = [index for index, _ in ranked[:top_k]]
    page_chunks = list(kb.page_chunks(page))
    if about_page and page_chunks:
        chosen = _fill(kb, page_chunks + matches, budget_tokens, {})
        return Selection(tuple(chosen), tuple(chosen))
    if relevance is not None:
        page_chunks.sort(key=lambda index: (-relevance(index), index))
    chosen = _fill(kb, matches, budget_tokens, {})
    used = sum(kb.chunks[index].tokens for index in chosen)
    allowance = min(budget_tokens - used, int(PAGE_SHARE * budget_tokens))
    chosen = _fill(kb, page_chunks, allowance, chosen)
    leading = tuple(index for index in chosen if index in set(matches))
    return Selection(tuple(chosen), leading or tuple(chosen))


def _fill(
    kb: _Index, candidates: Sequence[int], allowance: int, chosen: dict[int, None]
) -> dict[int, None]:
    """`chosen` plus each candidate not in it that still fits `allowance` more tokens."""
    out, used = dict(chosen), 0
    for index in candidates:
        tokens = kb.chunks[index].tokens
        if index not in out and used + tokens <= allowance:
            out[index] = None
            used += tokens
    return out
