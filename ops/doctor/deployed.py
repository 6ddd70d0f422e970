"""What `chatguard doctor` reads about a deployed stack: its outputs, the settings each step
Lambda runs with, its alarms, the web ACL in front of it and the bundled index's header.

The checks test the deployed configuration, not cdk.json: the operator may have changed
cdk.json since the last deploy, and a stack output or a Lambda environment is what the
steps actually use. Kept apart from ops/aws.py so the stack's shape is read generically
(outputs by name, functions by their logical id), whatever CloudFormation named them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ops.aws import OpsError
from steps.lib.runtime.errors import SettingsError
from steps.lib.runtime.settings import ENV_PREFIX, Settings
from steps.lib.runtime.stages import STAGES

EDGE_REGION = "us-east-1"  # infra/config.py EDGE_REGION: a CLOUDFRONT web ACL lives there
EDGE_STACK = "ChatguardEdge"  # infra/application.py EDGE_STACK, suffixed with the chat Region


@dataclass(frozen=True, slots=True)
class Deployed:
    stack: str
    region: str
    outputs: Mapping[str, str]
    environments: Mapping[str, Mapping[str, str]]  # step state -> its CHATGUARD_* variables
    alarms: tuple[str, ...]
    roles: Mapping[str, str] = field(default_factory=dict)  # step state -> its role's ARN

    def settings_of(self, state: str) -> Settings | None:
        """The settings the step runs with (its defaults for what it is not told)."""
        env = self.environments.get(state)
        if env is None:
            return None
        try:
            return Settings.from_env(env)
        except SettingsError as exc:
            raise OpsError(f"the deployed {state} step has unreadable settings: {exc}") from exc


@dataclass(frozen=True, slots=True)
class IndexHeader:
    embedder: str
    dimensions: int


def edge_stack_name(chat_region: str) -> str:
    return f"{EDGE_STACK}-{chat_region}"


def stack_resources(cloudformation: Any, stack: str) -> list[dict[str, Any]]:
    """Every resource of the stack (all pages); a missing stack is an OpsError."""
    from botocore.exceptions import ClientError

    kwargs: dict[str, Any] = {"StackName": stack}
    found: list[dict[str, Any]] = []
    while True:
        try:
            page = cloudformation.list_stack_resources(**kwargs)
        except ClientError as exc:
            if "does not exist" in str(exc):
                region = cloudformation.meta.region_name
                raise OpsError(f"no stack {stack!r} in {region}; pass --stack/--region") from exc
            raise
        found += page.get("StackResourceSummaries", [])
        if not page.get("NextToken"):
            return found
        kwargs["NextToken"] = page["NextToken"]


def physical_ids(resources: list[dict[str, Any]], kind: str) -> tuple[str, ...]:
    return tuple(
        r["PhysicalResourceId"]
        for r in resources
        if r.get("ResourceType") == kind and r.get("PhysicalResourceId")
    )


def step_of(logical_id: str) -> str | None:
    """The step a function belongs to: PipelineStep's construct id leads its logical id
    (``InvokeFunction1A2B3C4D``); helper functions (custom resources) have none."""
    for stage in STAGES:
        if logical_id.startswith(stage.state + "Function"):
            return stage.state
    return None


def step_configurations(
    lambda_client: Any, resources: list[dict[str, Any]]
) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """({step: its CHATGUARD_* environment}, {step: its role ARN}), read from each step
    function's configuration (the role is what the step's calls are authorized as)."""
    environments: dict[str, dict[str, str]] = {}
    roles: dict[str, str] = {}
    for resource in resources:
        state = step_of(resource.get("LogicalResourceId", ""))
        if resource.get("ResourceType") != "AWS::Lambda::Function" or state is None:
            continue
        config = lambda_client.get_function_configuration(
            FunctionName=resource["PhysicalResourceId"]
        )
        variables = config.get("Environment", {}).get("Variables", {})
        environments[state] = {k: v for k, v in variables.items() if k.startswith(ENV_PREFIX)}
        if config.get("Role"):
            roles[state] = str(config["Role"])
    return environments, roles


def discover(
    cloudformation: Any, lambda_client: Any, stack: str, outputs: Mapping[str, str]
) -> Deployed:
    resources = stack_resources(cloudformation, stack)
    environments, roles = step_configurations(lambda_client, resources)
    return Deployed(
        stack=stack,
        region=str(cloudformation.meta.region_name),
        outputs=outputs,
        environments=environments,
        alarms=physical_ids(resources, "AWS::CloudWatch::Alarm"),
        roles=roles,
    )


def web_acl_arn(cloudfront: Any, distribution_id: str) -> str:
    """The web ACL the distribution is actually behind ("" when none)."""
    config = cloudfront.get_distribution_config(Id=distribution_id)["DistributionConfig"]
    return str(config.get("WebACLId", ""))


def index_header(knowledge_dir: Path) -> IndexHeader:
    """The embedder and dimensions the index in ``knowledge_dir`` was built with."""
    path = Path(knowledge_dir) / "knowledge.json"
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
        return IndexHeader(str(header["embedder"]["id"]), int(header["embedder"]["dimensions"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise OpsError(f"no readable index header in {path.name} of the knowledge folder") from exc
