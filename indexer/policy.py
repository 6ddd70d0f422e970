"""What may be indexed and how it is linked: exclusion globs, the forbidden-terms check,
the permalink style, whether a generator's utility pages are kept (indexer/utility.py).

All four come from cdk.json context "chatguard/index" (the project's one settings
source); `chatguard index --exclude/--forbidden/--permalinks/--keep-utility-pages`
replace them for one run.
The forbidden check is deterministic and runs on every chunk that WOULD be indexed,
before anything is embedded or written: a build that finds a term fails and leaves the
old artifact alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from steps.lib.grounding.knowledge import Chunk
from steps.lib.runtime.settings import cdk_context

from .pages import PERMALINKS

CONTEXT_KEY = "chatguard/index"


class PolicyError(ValueError):
    """A "chatguard/index" value the indexer cannot use; the message says which."""


@dataclass(frozen=True, slots=True)
class IndexPolicy:
    exclude: tuple[str, ...]
    forbidden_terms: tuple[str, ...]
    permalinks: str = "file"  # how the host links a page: indexer.pages.page_path
    keep_utility_pages: bool = False  # index a generator's index/search/404 pages too

    def __post_init__(self) -> None:
        if self.permalinks not in PERMALINKS:
            raise PolicyError(
                f"permalinks is {self.permalinks!r}; use one of {', '.join(PERMALINKS)}"
            )

    @classmethod
    def from_context(cls, context: dict[str, Any] | None = None) -> IndexPolicy:
        block = (context if context is not None else cdk_context()).get(CONTEXT_KEY, {})
        return cls(
            tuple(block.get("exclude", ())),
            tuple(block.get("forbidden_terms", ())),
            str(block.get("permalinks", "file")),
            _flag(block, "keep_utility_pages"),
        )

    def excluded(self, relative: str) -> bool:
        """Globs match the POSIX path inside the site dir; `*` also crosses `/`."""
        return any(fnmatchcase(relative, pattern) for pattern in self.exclude)


def _flag(block: dict[str, Any], key: str) -> bool:
    value = block.get(key, False)
    if not isinstance(value, bool):
        raise PolicyError(f"{key} is {value!r}; use true or false")
    return value


@dataclass(frozen=True, slots=True)
class Violation:
    source: str  # the page file, relative to the site directory
    heading: str
    term: str
    in_heading: bool = True  # False: the term is in the text under the heading

    def __str__(self) -> str:
        where = "heading" if self.in_heading else "text under heading"
        return f"{self.source}: {where} {self.heading!r} contains forbidden term {self.term!r}"


def term_pattern(term: str) -> re.Pattern[str]:
    """Whole words/phrases, case-insensitive, any whitespace between a phrase's words."""
    words = [re.escape(word) for word in term.split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


def violations(
    source_chunks: Iterable[tuple[str, Chunk]], forbidden_terms: Sequence[str]
) -> list[Violation]:
    """Every (file, heading, term) where an indexable chunk holds a forbidden term, once:
    a long section is many chunks under one heading, and one line says it."""
    patterns = [(term, term_pattern(term)) for term in forbidden_terms if term.strip()]
    found: dict[Violation, None] = {}
    for source, chunk in source_chunks:
        for term, pattern in patterns:
            if pattern.search(chunk.heading):
                found.setdefault(Violation(source, chunk.heading, term, in_heading=True))
            elif pattern.search(chunk.text):
                found.setdefault(Violation(source, chunk.heading, term, in_heading=False))
    return list(found)
