"""Which steps use the Lambda runtime's own botocore, and the synth-time refusal.

A step that ships botocore in its zip compiles it at every cold start when the bundle has
no bytecode (a machine without CPython 3.13 cannot write ``cpython-313.pyc``; bundling.py):
``make bench-cold`` measured that as the largest part of a gate step's INIT from source
(docs/benchmarks.md, "Cold path"). The python3.13 runtime already carries the AWS SDK for
Python ([Building Lambda functions with Python], "Runtime-included SDK versions"), so a step
whose every operation that SDK has can leave botocore out of its zip and import the
runtime's. AWS does not pin that version ("depends on the runtime version and your AWS
Region", same page), so this module assumes a floor, ``RUNTIME_BOTOCORE_FLOOR``, and
synthesis refuses a runtime-SDK step that calls an operation first shipped in a newer
botocore. Only S5 needs one (CountTokens), so only S5 ships botocore (infra/requirements/
botocore.txt); a Lambda zip's own packages come first on the path ([Python .zip
deployment], "Dependency search path and runtime-included libraries"), so S5 gets its pin.

[Building Lambda functions with Python]: https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html
[Python .zip deployment]: https://docs.aws.amazon.com/lambda/latest/dg/python-package.html
"""

from __future__ import annotations

from collections.abc import Iterable

# Assumed, not published: python3.13 reached Lambda in November 2024, when botocore was in
# the 1.35 series; AWS updates a runtime's SDK forward. docs/benchmarks.md lists it among
# the cold model's assumptions.
RUNTIME_BOTOCORE_FLOOR = (1, 35, 0)

# The first botocore that carries each operation a step calls. DynamoDB's and SSM's are
# older than any python3.13 runtime; the Bedrock ones are from botocore's changelog
# (InvokeModel: Bedrock's release; Converse: 2024-05-30); CountTokens from the pin note in
# infra/requirements/botocore.txt.
FIRST_BOTOCORE: dict[str, tuple[int, int, int]] = {
    "dynamodb.UpdateItem": (1, 0, 0),
    "dynamodb.GetItem": (1, 0, 0),
    "dynamodb.TransactWriteItems": (1, 12, 0),
    "ssm.GetParameter": (1, 0, 0),
    "bedrock-runtime.InvokeModel": (1, 31, 57),
    "bedrock-runtime.Converse": (1, 34, 116),
    "bedrock-runtime.ApplyGuardrail": (1, 34, 129),
    "bedrock-runtime.CountTokens": (1, 39, 0),
}

# What each step calls (tests/infra/test_runtime_sdk.py checks it against each step's
# IAM grants on the synthesized template, so a new call cannot go unlisted).
OPERATIONS: dict[str, tuple[str, ...]] = {
    "OriginVerify": ("ssm.GetParameter",),
    "Quota": ("dynamodb.UpdateItem", "ssm.GetParameter"),
    "CostGate": ("dynamodb.TransactWriteItems", "dynamodb.GetItem"),
    "Retrieve": ("bedrock-runtime.InvokeModel",),
    "Invoke": (
        "bedrock-runtime.Converse",
        "bedrock-runtime.ApplyGuardrail",
        "bedrock-runtime.CountTokens",
        "ssm.GetParameter",
    ),
    "Reconcile": ("dynamodb.TransactWriteItems", "dynamodb.UpdateItem", "dynamodb.GetItem"),
    "Degraded": (),
}


class RuntimeSdkTooOld(RuntimeError):
    """A step left to the runtime's botocore calls an operation it may not have."""


def too_new(operations: Iterable[str], floor: tuple[int, int, int]) -> list[str]:
    """The operations a botocore at ``floor`` may lack (unknown ones count as too new)."""
    return [op for op in operations if FIRST_BOTOCORE.get(op, (99, 0, 0)) > floor]


def bundles_botocore(state: str, floor: tuple[int, int, int] = RUNTIME_BOTOCORE_FLOOR) -> bool:
    """Whether ``state`` must ship its own botocore: some operation is newer than ``floor``."""
    return bool(too_new(OPERATIONS[state], floor))


def check(
    state: str, *, ships_botocore: bool, floor: tuple[int, int, int] = RUNTIME_BOTOCORE_FLOOR
) -> None:
    """Refuse (at synth) a step left to the runtime's SDK that calls a newer operation."""
    missing = [] if ships_botocore else too_new(OPERATIONS[state], floor)
    if missing:
        version = ".".join(map(str, floor))
        raise RuntimeSdkTooOld(
            f"{state} calls {', '.join(missing)}, which the Lambda runtime's botocore "
            f"(assumed >= {version}) may not have: give {state} the asset with botocore"
        )
