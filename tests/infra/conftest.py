"""Synthesize the whole app ONCE per session (no Docker, no AWS credentials)."""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")

CHAT_REGION = "eu-west-1"
ALERT_EMAIL = "ops@example.com"
INVOKE_CONCURRENCY = 5
SITE_ORIGINS = ("https://www.example.com", "https://blog.example.org")


@dataclass(frozen=True)
class Synth:
    app: Any
    outdir: Path
    context: dict[str, Any]
    chat_stack: Any
    edge_stack: Any
    chat: Any  # aws_cdk.assertions.Template
    edge: Any

    @property
    def chat_json(self) -> dict[str, Any]:
        return self.chat.to_json()

    @property
    def edge_json(self) -> dict[str, Any]:
        return self.edge.to_json()

    def resources(self, kind: str, *, stack: str = "chat") -> dict[str, dict[str, Any]]:
        template = self.chat_json if stack == "chat" else self.edge_json
        return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def deploy_context() -> dict[str, Any]:
    from infra.application import READ_NONCE_KEY
    from infra.index_check import STAND_IN_CONTEXT
    from steps.lib.runtime.settings import cdk_context

    ctx = copy.deepcopy(cdk_context())
    ctx["chatguard/ops"].update(
        chat_region=CHAT_REGION,
        alert_emails=[ALERT_EMAIL],
        reserved_concurrency={"Invoke": INVOKE_CONCURRENCY},
    )
    ctx["chatguard/edge"]["site_origins"] = list(SITE_ORIGINS)
    ctx[READ_NONCE_KEY] = "test-nonce"
    # The offline sample index (the local model, not Titan) is bundled on purpose: said explicitly.
    ctx[STAND_IN_CONTEXT] = True
    return ctx


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synth]:
    from aws_cdk.assertions import Template

    from infra.application import CHAT_STACK, EDGE_STACK, build

    context = deploy_context()
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = build(context, outdir=str(outdir))
    app.synth()
    chat_stack = app.node.find_child(CHAT_STACK)
    edge_stack = app.node.find_child(EDGE_STACK)
    yield Synth(
        app=app,
        outdir=outdir,
        context=context,
        chat_stack=chat_stack,
        edge_stack=edge_stack,
        chat=Template.from_json(_template(outdir, CHAT_STACK)),
        edge=Template.from_json(_template(outdir, EDGE_STACK)),
    )
    shutil.rmtree(outdir, ignore_errors=True)  # ~150 MB of bundled assets per session


def _template(outdir: Path, name: str) -> dict[str, Any]:
    return json.loads((outdir / f"{name}.template.json").read_text(encoding="utf-8"))


def function_of(synth: Synth, state: str) -> tuple[str, dict[str, Any]]:
    """The Lambda resource (logical id, resource) of one pipeline step."""
    from steps.lib.runtime.stages import BY_STATE

    stage = BY_STATE[state]
    wanted = f"chatguard {stage.key} {stage.state}"
    found = [
        (k, v)
        for k, v in synth.resources("AWS::Lambda::Function").items()
        if v["Properties"].get("Description") == wanted
    ]
    assert len(found) == 1, f"expected one function for {state}, found {len(found)}"
    return found[0]
