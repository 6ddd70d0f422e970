"""The end-to-end fixtures of tests/local (a pinned wall clock, the ledger's retry clock, a
runtime on the real ASL) and tests/infra's synthesized template, for the red team's tests."""

from tests.infra.conftest import synth  # noqa: F401
from tests.local.conftest import (  # noqa: F401
    fixed_wall_clock,
    knowledge_dir,
    make_runtime,
    retries_on_their_own_clock,
)
