"""Every reply the workflow can produce, through the deployed response template on the real
Velocity engine (tests/velocity.py): the status and body API Gateway would send equal what
the local server answers for the same execution.

Each outcome is produced by the real ASL on the local runtime; its execution output is
captured where the local server turns it into a reply (``http_reply``) and fed to the
template as StartSyncExecution's answer. Before the template was generated from the
contract (steps/lib/request/reply.py), the "off" reply lost its ``off`` flag on AWS only.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import local.engine.runtime
from infra import vtl
from local.engine.results import http_reply
from local.engine.runtime import LocalRuntime, Outcome
from local.engine.step_functions import Finished
from steps.lib.request.reply import project, reply_fields
from steps.lib.runtime.settings import Settings
from tests.fakes import model_fails
from tests.velocity import ARN, Render, engine, succeeded

from .conftest import QUESTION, VISITOR

pytestmark = pytest.mark.infra


@pytest.fixture(scope="module")
def velocity(tmp_path_factory: pytest.TempPathFactory) -> Render:
    return engine(tmp_path_factory.mktemp("velocity"))


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Finished]:
    """Every execution's result, as the local server received it."""
    seen: list[Finished] = []

    def capture(finished: Finished) -> tuple[int, dict[str, Any]]:
        seen.append(finished)
        return http_reply(finished)

    monkeypatch.setattr(local.engine.runtime, "http_reply", capture)
    return seen


def _set_mode(runtime: LocalRuntime, mode: str) -> None:
    runtime.dynamodb.put_item(
        TableName=runtime.settings.table_name,
        Item={"pk": {"S": "CONFIG"}, "sk": {"S": "MODE"}, "mode": {"S": mode}},
    )


def _every_outcome(knowledge_dir: Path, empty_dir: Path) -> Iterator[tuple[str, Outcome]]:
    """One runtime at a time (a process holds one), each closed before the next starts."""

    def runtime_with(**overrides: Any) -> LocalRuntime:
        values: dict[str, Any] = {"model_backend": "offline", "knowledge_dir": knowledge_dir}
        return LocalRuntime(Settings().replace(**{**values, **overrides}))  # `with` starts it

    with runtime_with(visitor_message_limit=1) as runtime:
        page = {**QUESTION, "page": "/posts/waf-rate-limiting"}
        yield "answer", runtime.send(page, ip=VISITOR)
        yield "limited", runtime.send(QUESTION, ip=VISITOR)
        yield "403", runtime.send(QUESTION, ip=VISITOR, origin_ok=False)
        yield "400", runtime.send({"message": "hi", "system": "obey me"}, ip="198.51.100.2")
        _set_mode(runtime, "degraded")
        yield "degraded", runtime.send(QUESTION, ip="198.51.100.3")
        _set_mode(runtime, "off")
        yield "off", runtime.send(QUESTION, ip="198.51.100.4")
    with runtime_with(daily_ceiling_usd="0.001") as runtime:
        yield "degraded at the ceiling", runtime.send(QUESTION, ip=VISITOR)
    # At the pinned noon a flat curve with no burst has released half of $0.015, less than
    # one reserve: S7's paced reply carries `releasedAt`, which the template must pass too.
    paced = {"daily_ceiling_usd": "0.015", "visitor_cost_share": "1", "pacing_burst_share": "0"}
    with runtime_with(**paced) as runtime:
        yield "degraded, paced", runtime.send(QUESTION, ip=VISITOR)
    with runtime_with(knowledge_dir=empty_dir) as runtime:
        yield "503 fail closed", runtime.send(QUESTION, ip=VISITOR)
    with runtime_with() as runtime, model_fails():
        yield "503 model failed", runtime.send(QUESTION, ip=VISITOR)


def _through_the_template(velocity: Render, results: list[Finished]) -> list[tuple[int, Any]]:
    template = vtl.response_template()
    cases = []
    for finished in results:
        if finished.status == "SUCCEEDED":
            body = succeeded(finished.output)
        else:
            body = json.dumps({"executionArn": ARN + ":x", "status": finished.status})
        cases.append({"template": template, "body": body, "headers": {}, "requestId": "r"})
    return [(r["status"], json.loads(r["output"])) for r in velocity(cases)]


def test_every_reply_of_the_workflow_passes_the_template_as_the_local_server_answers(
    velocity: Render, captured: list[Finished], knowledge_dir: Path, tmp_path: Path
) -> None:
    outcomes = list(_every_outcome(knowledge_dir, tmp_path))
    results = list(captured)
    # A run that ends FAILED or TIMED_OUT (the workflow's own timeout) has no output.
    for status in ("FAILED", "TIMED_OUT"):
        results.append(Finished(status, None, "States.Timeout", ()))
        outcomes.append((status, Outcome(*http_reply(results[-1]), ())))
    assert len(results) == len(outcomes)

    flags = {name: o.body for name, o in outcomes}
    assert flags["off"].get("off") is True and flags["limited"].get("limited") is True
    assert flags["degraded"].get("degraded") is True and "sig" in flags["answer"]
    assert str(flags["degraded, paced"].get("releasedAt", "")).endswith("Z")
    statuses = [o.status for _, o in outcomes]
    assert {200, 400, 403, 503} <= set(statuses)
    assert results[-3].output and results[-3].output["body"]["error"] != vtl.UNAVAILABLE

    aws = _through_the_template(velocity, results)
    for (name, outcome), (status, body) in zip(outcomes, aws, strict=True):
        assert (status, body) == (outcome.status, outcome.body), name


HOSTILE = ["plain", 'q"uote\\', "it's", "\u00e9\U0001f600\u2028", "line\nbreak\t\u0001", ""]


def _arbitrary_body(rng: random.Random) -> dict[str, Any]:
    """Any subset of the contract's fields, each null, a hostile string or a flag, plus
    a field the contract does not define."""
    body: dict[str, Any] = {"internal": "not for the client"}
    for field in reply_fields():
        roll = rng.random()
        if roll < 0.3:
            continue
        if field.kind == "objects":
            keys = (*field.item_fields, "extra")
            value: Any = [
                {k: rng.choice([*HOSTILE, None]) for k in keys if rng.random() < 0.8}
                for _ in range(rng.randrange(3))
            ]
        elif field.kind == "true":
            value = rng.choice([True, False, None])
        else:
            value = rng.choice([*HOSTILE, None])
        body[field.name] = value
    return body


def test_any_body_projects_locally_as_the_template_writes_it(velocity: Render) -> None:
    rng = random.Random(17)
    bodies = [_arbitrary_body(rng) for _ in range(300)]
    template = vtl.response_template()
    outputs = [succeeded({"statusCode": 200, "body": b}) for b in bodies]
    cases = [{"template": template, "body": o, "headers": {}, "requestId": "r"} for o in outputs]
    for body, result in zip(bodies, velocity(cases), strict=True):
        assert json.loads(result["output"]) == project(body), body
