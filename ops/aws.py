"""How the operator CLI reaches AWS: the usual credential chain, a profile, a region, and
the deployed stack's outputs (table name, distribution id, API URL, budget name).

Commands take clients as arguments; only this module builds them, so tests inject a
session (moto) or a stubbed client and never touch a real account.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from steps.lib.runtime.settings import Settings, cdk_context

DEFAULT_STACK = "ChatguardChat"  # infra/application.py CHAT_STACK
API_STAGE = "prod"  # infra/blocks/chat_api.py STAGE
LEDGER_TABLE_OUTPUT = "LedgerTableName"  # infra/blocks/ledger_table.py LEDGER_TABLE_OUTPUT
_LEGACY_TABLE_OUTPUT = "TableName"  # a stack deployed before the table was named by CFN
# CDK suffixes an output's logical id with an 8-hex hash when it sits inside a construct.
_HASH_SUFFIX = re.compile(r"[0-9A-F]{8}$")


class OpsError(Exception):
    """Something the operator must fix (a missing output, a bad argument): exit code 2."""


def project_settings() -> Settings:
    """The deployed configuration: the `chatguard` block of cdk.json context."""
    return Settings.from_mapping(cdk_context().get("chatguard", {}))


def ops_context() -> dict[str, Any]:
    block: dict[str, Any] = cdk_context().get("chatguard/ops", {})
    return block


@dataclass(slots=True)
class Aws:
    """A boto3 session plus lazily read stack outputs; `session` is injectable for tests."""

    profile: str | None = None
    region: str | None = None
    stack: str = DEFAULT_STACK
    session: Any = None
    _outputs: dict[str, str] | None = field(default=None, repr=False)

    def client(self, service: str, *, region: str | None = None) -> Any:
        if self.session is None:
            import boto3

            self.session = boto3.Session(profile_name=self.profile, region_name=self.region)
        return self.session.client(service, region_name=region or self.region)

    def outputs(self) -> dict[str, str]:
        if self._outputs is None:
            self._outputs = stack_outputs(self.client("cloudformation"), self.stack)
        return self._outputs

    def output(self, name: str, *, default: str | None = None) -> str:
        value = find_output(self.outputs(), name)
        if value is None:
            if default is not None:
                return default
            raise OpsError(f"stack {self.stack!r} has no output {name!r}; pass it explicitly")
        return value


def stack_outputs(cloudformation: Any, stack: str) -> dict[str, str]:
    """{OutputKey: OutputValue} of the stack; no stack is an empty mapping, not a crash."""
    from botocore.exceptions import ClientError

    try:
        stacks = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as exc:
        if "does not exist" in str(exc):
            return {}
        raise
    outputs = stacks[0].get("Outputs", []) if stacks else []
    return {o["OutputKey"]: o["OutputValue"] for o in outputs}


def find_output(outputs: Mapping[str, str], name: str) -> str | None:
    """The output named `name`, with or without CDK's construct path and hash suffix."""
    wanted = name.lower()
    for key, value in outputs.items():
        bare = _HASH_SUFFIX.sub("", key).lower()
        if bare == wanted or bare.endswith(wanted):
            return value
    return None


def ledger_output(outputs: Mapping[str, str]) -> str | None:
    """The ledger table's name among a chat stack's outputs (None: the stack has none)."""
    return find_output(outputs, LEDGER_TABLE_OUTPUT) or find_output(outputs, _LEGACY_TABLE_OUTPUT)


def table_name(aws: Aws) -> str:
    """The deployed ledger table, from the stack's outputs: CloudFormation names it, so a
    name from cdk.json would point at no table (or at a table an old stack left behind)."""
    name = ledger_output(aws.outputs())
    if name is None:
        where = f" in {aws.region}" if aws.region else ""
        raise OpsError(
            f"stack {aws.stack!r}{where} has no output {LEDGER_TABLE_OUTPUT!r}: deploy it first "
            "(make deploy), or pass --stack and --region of the deployed chat stack"
        )
    return name


def api_chat_url(aws: Aws) -> str:
    """The API Gateway URL of /chat, called directly (bypassing CloudFront)."""
    explicit = find_output(aws.outputs(), "ApiUrl")
    if explicit:
        return explicit.rstrip("/") + "/chat"
    api_id = aws.output("ApiId")
    region = aws.region or aws.client("sts").meta.region_name
    return f"https://{api_id}.execute-api.{region}.amazonaws.com/{API_STAGE}/chat"


def model_budget_name(aws: Aws) -> str:
    """The filtered budget infra/blocks/budgets.py creates: ``<stack>-<region>-model-monthly``
    (the stack output names it; the default is for a stack without that output)."""
    region = aws.region or aws.client("sts").meta.region_name
    return aws.output("ModelBudgetName", default=f"{aws.stack}-{region}-model-monthly")
