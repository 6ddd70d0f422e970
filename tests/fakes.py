"""Test stand-ins shared across test packages."""

from __future__ import annotations

from typing import Any


class CannotCount:
    """Mix into a fake responder: like the offline stand-in (or a Region without
    CountTokens), it cannot count tokens exactly, so S5 meters by the byte bound; and its
    guardrail, when one is configured, passes every message and reports no units."""

    def count_tokens(self, system: str, messages: list[dict[str, Any]]) -> int:
        from steps.lib.money.metering import CountUnavailable

        raise CountUnavailable("this fake has no tokenizer")

    def guard(self, text: str) -> Any:
        from steps.lib.providers.models import GuardVerdict

        return GuardVerdict(blocked=False)
