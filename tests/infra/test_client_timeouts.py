"""Each step's AWS clients give up before the step's Lambda timeout on the template.

A slow table, parameter or embedding must end as the client's own error (connect + read,
times its attempts: runtime/clients.py), which the handler turns into a clean failure and
the ASL's Catch into the contract's 503, not as a Lambda timeout with no decision logged.
The step timeouts are the synthesized functions' ``Timeout``; the clients are read from the
source each handler builds at INIT (``init_phase.at_init``) plus S4's Titan embedding.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pytest

from steps.lib.runtime import clients
from steps.lib.runtime.settings import Settings
from steps.lib.runtime.stages import BY_STATE

from .conftest import function_of

pytestmark = pytest.mark.infra

ROOT = Path(__file__).resolve().parents[2]
CONVERSE = clients.converse_timeouts(Settings())
# Each step's clients by factory name (runtime/clients.py). S4 reaches Titan's embedding
# through models.query_embedder, not at INIT; S7 calls no AWS service.
STEP_CLIENTS: Mapping[str, Mapping[str, clients.Timeouts]] = {
    "OriginVerify": {"ssm": clients.SSM},
    "Quota": {"dynamodb": clients.DYNAMODB, "ssm": clients.SSM},
    "CostGate": {"dynamodb": clients.DYNAMODB},
    "Retrieve": {"bedrock_embed": clients.EMBEDDING},
    "Invoke": {
        "ssm": clients.SSM, "bedrock_runtime": CONVERSE, "bedrock_guard": clients.GUARDRAIL,
        "bedrock_count": clients.COUNT,
    },
    "Reconcile": {"dynamodb": clients.DYNAMODB},
    "Degraded": {},
}  # fmt: skip
# The gate clients before this check (connect, read, attempts): 8 s and 12 s at worst.
OLD_DYNAMODB = clients.Timeouts(1, 3, 2)
OLD_SSM = clients.Timeouts(1, 3, 3)


def _at_init(state: str) -> set[str]:
    """The client factories a handler module hands to ``init_phase.at_init``."""
    path = ROOT / (BY_STATE[state].module.replace(".", "/") + ".py")
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "at_init":
            names |= {
                a.attr
                for a in node.args
                if isinstance(a, ast.Attribute) and getattr(a.value, "id", "") == "clients"
            }
    return names


def _late(synth, table: Mapping[str, Mapping[str, clients.Timeouts]]) -> list[str]:
    """Every (step, client) whose worst case reaches the step's Lambda timeout."""
    late = []
    for state, used in table.items():
        timeout = function_of(synth, state)[1]["Properties"]["Timeout"]
        late += [
            f"{state}: {name} {t.worst:g} s >= {timeout} s"
            for name, t in used.items()
            if t.worst >= timeout
        ]
    return late


def test_the_table_names_every_client_a_handler_builds_at_init():
    assert set(STEP_CLIENTS) == set(BY_STATE)
    for state, used in STEP_CLIENTS.items():
        assert _at_init(state) <= set(used), f"{state} builds a client the table does not list"
    assert _at_init("Quota") == {"dynamodb", "ssm"}  # the parse finds them at all


@pytest.mark.parametrize("name", ["dynamodb", "ssm"])
def test_the_gate_clients_are_built_with_their_named_timeouts(monkeypatch, name):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    clients.cache_clear()
    try:
        config = getattr(clients, name)().meta.config
    finally:
        clients.cache_clear()
    expected = {"dynamodb": clients.DYNAMODB, "ssm": clients.SSM}[name]
    assert (config.connect_timeout, config.read_timeout) == (expected.connect, expected.read)
    assert config.retries["total_max_attempts"] == expected.attempts


def test_every_steps_clients_give_up_before_its_lambda_timeout(synth):
    assert not _late(synth, STEP_CLIENTS)


def test_the_old_gate_clients_outlived_the_lambda_timeouts(synth):
    # The naive twin on the same template: DynamoDB's and SSM's clients as they were
    # (8 s and 12 s at worst) reach every gate step's timeout, so a slow table ended as a
    # Lambda timeout with no decision logged.
    old = {
        state: {
            name: {"dynamodb": OLD_DYNAMODB, "ssm": OLD_SSM}.get(name, t)
            for name, t in used.items()
        }
        for state, used in STEP_CLIENTS.items()
    }
    late = _late(synth, old)
    gates = {"OriginVerify", "Quota", "CostGate", "Reconcile"}
    assert {line.split(":")[0] for line in late} == gates
