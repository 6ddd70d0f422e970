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


# Memory comes from `make bench-cold` (docs/benchmarks.md, "Cold path"): a cold step is
# CPU-bound (0.25-0.35 s of CPU with bytecode, 0.35-0.6 s without) and Lambda's CPU share
# grows with memory up to one vCPU at 1,769 MB. Every step gets that vCPU: warm the gate
# steps run for milliseconds, so the memory costs cents; S5 waits seconds on Bedrock and
# memory is billed for the wait, but at 1,024 MB its cold start from source took 1.16 s of
# the cold message's 4.17 s (0.74 s at one vCPU), and at the traffic the default ceiling
# admits (<= 300 messages a day) the whole stack's Lambda bill stays near a dollar a month.
# Timeouts: one time budget per run. Every chain the workflow allows (infra/worst_chains.py:
# the gates, the wake, S4, S5 refusing, the release; S3 degraded then S7; the answer and its
# settlement), each Task at its timeout after a throttle retry and a cold INIT, ends inside
# the workflow's 28 s (tests/infra/test_worst_chains.py adds them up on the synthesized
# template; synthesis refuses timeouts that do not fit). So the gate steps get the least
# that outlives their own clients' worst (runtime/clients.py: SSM 0.75 s, DynamoDB 0.75 s,
# Titan's embedding 1.5 s), not a multiple of their cold step: INIT runs outside the timeout
# ([execution environment]). S3 and S6 keep twice their ledger retry budget (1.0 s and
# 2.5 s, ledger.py). The longest chain is the first message refused by S5 and released.
# [execution environment]: https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html
STAGES: tuple[Stage, ...] = (
    Stage("S1", "OriginVerify", "steps.origin_verify", False, 1, 1769),
    Stage("S2", "Quota", "steps.quota", False, 2, 1769),
    Stage("S3", "CostGate", "steps.cost_gate", False, 2, 1769),
    Stage("S4", "Retrieve", "steps.retrieve", True, 2, 1769),
    # S5 sends a billed call only when it can end within the run budget (billed_calls.py);
    # its own timeout only has to stay under the workflow's.
    Stage("S5", "Invoke", "steps.invoke", False, 26, 1769),
    Stage("S6", "Reconcile", "steps.reconcile", False, 5, 1769),
    Stage("S7", "Degraded", "steps.degraded", True, 5, 1769),
)

BY_STATE = {stage.state: stage for stage in STAGES}
