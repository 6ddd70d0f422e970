"""The one table of pipeline stages.

The CDK app (one Lambda per row), the local runtime (in-process dispatch per row) and the
contract tests (ASL placeholders == this table) all read it, so a stage cannot be added,
renamed or dropped in one place only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Stage:
    key: str  # S1..S7, as in the README's funnel table
    state: str  # the Task state's name in statemachine/chat.asl.json
    module: str  # the handler module; its `handler(event, context)` is the Lambda entry
    needs_numpy: bool  # only retrieval steps ship numpy and the knowledge artifact
    timeout_seconds: int
    memory_mb: int

    @property
    def placeholder(self) -> str:
        """The ${...} name in chat.asl.json that CDK substitutes with the function ARN."""
        return f"{self.state}FunctionArn"

    @property
    def handler_path(self) -> str:
        return f"{self.module}.handler"


STAGES: tuple[Stage, ...] = (
    Stage("S1", "OriginVerify", "steps.origin_verify", False, 5, 256),
    Stage("S2", "Quota", "steps.quota", False, 5, 256),
    Stage("S3", "CostGate", "steps.cost_gate", False, 5, 256),
    Stage("S4", "Retrieve", "steps.retrieve", True, 10, 512),
    # Bedrock: 2 s to connect + 20 s to read, plus guardrail and signing; under the
    # workflow's 28 s (infra/config.py orders step < workflow < API integration).
    Stage("S5", "Invoke", "steps.invoke", False, 25, 256),
    Stage("S6", "Reconcile", "steps.reconcile", False, 5, 256),
    Stage("S7", "Degraded", "steps.degraded", True, 5, 512),
)

BY_STATE = {stage.state: stage for stage in STAGES}
