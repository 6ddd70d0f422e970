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


# The service errors an ASL may name besides ours (Step Functions and Lambda docs).
STATES_ERRORS = frozenset({
    "States.ALL", "States.Timeout", "States.TaskFailed", "States.Permissions",
    "States.HeartbeatTimeout", "States.Runtime",
})  # fmt: skip
LAMBDA_ERRORS = frozenset({
    "Lambda.ServiceException", "Lambda.TooManyRequestsException", "Lambda.SdkClientException",
    "Lambda.AWSLambdaException", "Lambda.ClientExecutionTimeoutException", "Lambda.Unknown",
})  # fmt: skip


def _error_names(states):
    return {
        name
        for state in states.values()
        for rule in state.get("Retry", []) + state.get("Catch", [])
        for name in rule["ErrorEquals"]
    }


def _unknown(names):
    """The names that match nothing: not a service error, not a class of errors.py."""
    return {
        name
        for name in names
        if name not in STATES_ERRORS | LAMBDA_ERRORS
        and not (
            isinstance(cls := getattr(errors, name, None), type)
            and issubclass(cls, errors.ChatguardError)
        )
    }


def test_every_error_name_in_the_asl_is_a_class_or_a_states_error():
    names = _error_names(_states())
    assert "NotSent" in names  # the ASL routes on one of our classes, so this checks one
    assert _unknown(names) == set()


def test_an_error_name_with_no_class_is_caught():
    """A Catch on a misspelt or removed class would never match: the check above says so."""
    states = _states()
    states["Invoke"]["Catch"][0]["ErrorEquals"] = ["NotSentt"]
    states["Retrieve"]["Catch"][0]["ErrorEquals"] = ["Lambda.Timeout", "ChatguardError"]
    assert _unknown(_error_names(states)) == {"NotSentt", "Lambda.Timeout"}
    assert _unknown({"Exception", "KeyError", "States.Everything"}) == {
        "Exception", "KeyError", "States.Everything",
    }  # fmt: skip


def test_every_task_retries_a_lambda_throttle_and_nothing_that_may_have_run():
    # A throttle (Lambda.TooManyRequestsException) means the function never ran, so a retry
    # cannot count, reserve or bill twice; every other Lambda service exception may follow a
    # run (Step Functions guide, "Handle Lambda service exceptions"), and no Task retries
    # it: for Quota, CostGate, Retrieve and Invoke a second run counts or bills twice.
    tasks = {name: s for name, s in _states().items() if s["Type"] == "Task"}
    assert len(tasks) == 9  # the seven steps, and S6 twice more: the two releases
    for name, state in tasks.items():
        (retry,) = state.get("Retry", [None]) or [None]
        assert retry is not None, f"{name} does not retry a throttle"
        assert retry["ErrorEquals"] == ["Lambda.TooManyRequestsException"], name
        assert retry["IntervalSeconds"] >= 1 and retry["MaxAttempts"] >= 1, name


def test_substitution_leaves_nothing_unresolved():
    subs = {
        stage.placeholder: f"arn:aws:lambda:us-east-1:123456789012:function:{stage.state}"
        for stage in STAGES
    }
    assert "${" not in loader.substitute(subs)
