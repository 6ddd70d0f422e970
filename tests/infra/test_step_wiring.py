"""Each step is given exactly the settings its modules read (no silent default, no extra)."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from infra.step_wiring import PRICING, STEP_SETTINGS
from steps.lib.runtime.settings import Settings
from steps.lib.runtime.stages import STAGES

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {f.name for f in fields(Settings)}
DERIVED = {  # Settings properties -> the fields they are computed from
    "daily_ceiling_micros": {"daily_ceiling_usd"},
    "monthly_ceiling_micros": {"monthly_ceiling_usd"},
    "visitor_ceiling_micros": {"daily_ceiling_usd", "visitor_cost_share"},
    "model_terms": {  # the catalogue's terms for model_id, or cdk.json's explicit ones
        "model_id",
        "model_metering",
        "price_input_per_mtok",
        "price_output_per_mtok",
        "price_cache_write_per_mtok",
        "price_cache_read_per_mtok",
    },
}
# The scan follows imports, so it over-approximates; these reads are on paths the step
# never takes, or have a default that is right on Lambda.
NOT_READ_ON_LAMBDA = {
    "*": {"knowledge_dir"},  # the bundle puts the index at the default path
    "OriginVerify": {"bedrock_connect_timeout_seconds", "bedrock_read_timeout_seconds"},
    "Quota": {"bedrock_connect_timeout_seconds", "bedrock_read_timeout_seconds"},
    "CostGate": {"bedrock_connect_timeout_seconds", "bedrock_read_timeout_seconds"},
    "Reconcile": {"bedrock_connect_timeout_seconds", "bedrock_read_timeout_seconds"},
    # Retrieve only asks models.py for the query embedder, never the responder, and
    # reads one constant of pricing.py (the Titan query cut), no price.
    "Retrieve": {
        *(set(PRICING) - {"grounding_token_budget"}),
        "offline_usage",
        "model_id",
        "guardrail_id",
        "guardrail_version",
        "guardrail_policy_count",
        "max_input_tokens",
        "max_output_tokens",
        "history_max_turns",
    },
    # Invoke only asks models.py for the responder, never the query embedder.
    "Invoke": {"embedding_model_id", "embedding_dimensions", "embedder"},
}
# `from x import a, b` or `from x import (\n a,\n b,\n)` (ruff wraps long ones).
IMPORT = re.compile(r"^\s*from\s+(\.+[\w.]*|steps[\w.]*)\s+import\s+(\([\w\s,]*\)|[\w ,]+)", re.M)
READ = re.compile(r"\.([a-z0-9_]+)\b")


def _imported(path: Path, module: str, names: str) -> list[Path]:
    if module.startswith("."):
        base = path.parent
        for _ in range(len(module) - len(module.lstrip(".")) - 1):
            base = base.parent
        target = base.joinpath(*filter(None, module.lstrip(".").split(".")))
    else:
        target = ROOT.joinpath(*module.split("."))
    found = [target.with_suffix(".py")] if target.with_suffix(".py").is_file() else []
    found += [target / f"{n}.py" for n in re.split(r"[,\s()]+", names) if n]
    return [p for p in found if p.is_file()]


def modules_of(entry: Path) -> set[Path]:
    seen: set[Path] = set()
    todo = [entry]
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            for match in IMPORT.finditer(path.read_text(encoding="utf-8")):
                todo += _imported(path, match.group(1), match.group(2))
    return seen


def settings_read(entry: Path) -> set[str]:
    reads: set[str] = set()
    for path in modules_of(entry):
        # settings.py defines the fields; catalogue.py reads a ModelTerms, never a Settings.
        if path.name in ("settings.py", "catalogue.py"):
            continue
        for name in READ.findall(path.read_text(encoding="utf-8")):
            reads |= {name} & FIELDS | DERIVED.get(name, set())
    return reads


def test_the_scan_sees_a_read_through_a_derived_property(tmp_path):
    (tmp_path / "probe.py").write_text(
        "x = s.visitor_ceiling_micros + s.price_guardrail_per_1k_units\n"
    )
    assert settings_read(tmp_path / "probe.py") == {
        "daily_ceiling_usd", "visitor_cost_share", "price_guardrail_per_1k_units"
    }  # fmt: skip


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.state)
def test_each_step_is_given_exactly_the_settings_it_reads(stage):
    entry = ROOT.joinpath(*stage.module.split(".")).with_suffix(".py")
    ignored = NOT_READ_ON_LAMBDA["*"] | NOT_READ_ON_LAMBDA.get(stage.state, set())
    needed = settings_read(entry) - ignored
    given = set(STEP_SETTINGS[stage.state])
    assert sorted(needed - given) == [], "read but not given: it would silently use a default"
    assert sorted(given - needed) == [], "given but never read: least privilege for config too"
