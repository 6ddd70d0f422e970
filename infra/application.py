"""Build the CDK app: two stacks wired together, checked by cdk-nag AwsSolutions."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra import config as deploy_config
from infra.index_check import STAND_IN_CONTEXT
from infra.stacks.chat_stack import ChatStack
from infra.stacks.edge_stack import EdgeStack
from steps.lib.runtime.settings import cdk_context

BLOCKS = ("chatguard", "chatguard/edge", "chatguard/ops")
# Changes per synth by default, so every deploy re-reads the origin secret (see secrets.py).
READ_NONCE_KEY = "chatguard/read_nonce"
EDGE_STACK = "ChatguardEdge"
CHAT_STACK = "ChatguardChat"


def build(context: Mapping[str, Any] | None = None, outdir: str | None = None) -> cdk.App:
    app = cdk.App(context=dict(context) if context else None, outdir=outdir)
    blocks = {name: app.node.try_get_context(name) for name in BLOCKS}
    if any(value is None for value in blocks.values()):  # plain `python infra/app.py`
        file_context = cdk_context()
        blocks = {name: blocks[name] or file_context[name] for name in BLOCKS}
    cfg = deploy_config.load(blocks)
    account = os.environ.get("CDK_DEFAULT_ACCOUNT")
    edge = EdgeStack(
        app,
        EDGE_STACK,
        # Every copy's edge stack lives in us-east-1: the chat Region keeps them apart.
        stack_name=f"{EDGE_STACK}-{cfg.ops.chat_region}",
        config=cfg,
        env=cdk.Environment(account=account, region=deploy_config.EDGE_REGION),
    )
    chat = ChatStack(
        app,
        CHAT_STACK,
        config=cfg,
        env=cdk.Environment(account=account, region=cfg.ops.chat_region),
        web_acl_arn=edge.web_acl_arn,
        read_nonce=str(app.node.try_get_context(READ_NONCE_KEY) or int(time.time())),
        stand_in_index=_flag(app.node.try_get_context(STAND_IN_CONTEXT)),
    )
    # Strong on purpose: CloudFormation then refuses to delete or replace the web ACL while
    # the distribution uses it (README, "Deploy to AWS").
    cdk.Annotations.of(chat).acknowledge_warning(
        "@aws-cdk/core:crossStackReferencesDefaultStrong",
        "The web ACL reference is meant to be strong.",
    )
    for stack in (edge, chat):
        cdk.Tags.of(stack).add("project", "chatguard")
    cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app


def _flag(value: Any) -> bool:
    """A context flag: JSON true, or "true" as `cdk -c key=true` passes it."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")
