"""Test stand-ins shared across test packages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def model_fails() -> Iterator[None]:
    """Every Converse call fails as a timed-out model does (ModelError), for the block."""
    from steps.lib.providers import models
    from steps.lib.runtime.errors import ModelError

    class Broken(CannotCount):
        def converse(self, **_kwargs: object) -> None:
            raise ModelError("injected: the model timed out")

    original = models.responder
    models.responder = lambda s: Broken()
    try:
        yield
    finally:
        models.responder = original
