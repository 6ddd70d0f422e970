"""The stage table, the ASL placeholders and the error classes must agree."""

from __future__ import annotations

import importlib
import json

from statemachine import loader
from steps.lib.runtime import errors
from steps.lib.runtime.stages import STAGES


def _states():
    return json.loads(loader.definition_text())["States"]


def test_every_stage_has_a_task_state_and_placeholder():
    states = _states()
    assert loader.placeholders() == {stage.placeholder for stage in STAGES}
    for stage in STAGES:
        assert states[stage.state]["Type"] == "Task"
        assert states[stage.state]["Resource"] == "${" + stage.placeholder + "}"


def test_every_stage_module_has_a_handler():
    for stage in STAGES:
        assert callable(importlib.import_module(stage.module).handler)


def test_every_error_name_in_the_asl_is_a_class_or_a_states_error():
    names = set()
    for state in _states().values():
        for rule in state.get("Retry", []) + state.get("Catch", []):
            names.update(rule["ErrorEquals"])
    for name in names:
        assert name.startswith(("States.", "Lambda.")) or isinstance(getattr(errors, name), type)


def test_no_retry_on_states_that_spend_or_count():
    states = _states()
    for name in ("Quota", "CostGate", "Retrieve", "Invoke", "Reconcile"):
        assert "Retry" not in states[name], name


def test_substitution_leaves_nothing_unresolved():
    subs = {
        stage.placeholder: f"arn:aws:lambda:us-east-1:123456789012:function:{stage.state}"
        for stage in STAGES
    }
    assert "${" not in loader.substitute(subs)
