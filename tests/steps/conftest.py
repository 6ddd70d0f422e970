"""moto fixtures for the step handlers and the library: DynamoDB table, the three SSM
secrets, a tiny knowledge artifact, and a model seam that counts calls."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local.engine.tables import create_ledger_table
from steps.lib.providers import models
from steps.lib.providers.models import GuardVerdict, ModelReply
from steps.lib.runtime import caches
from steps.lib.runtime.secrets import SecretValue, render_secret
from steps.lib.runtime.settings import Settings
from tests.clock import at, pin

EVENTS = Path(__file__).resolve().parents[1] / "events"
FIXED_NOW = at("2026-11-29 12:00:00")  # the day of the canned events
ORIGIN = "origin-secret-for-tests-0123456789"
SALT = "visitor-salt-for-tests-0123456789"
SIGNING = "signing-key-for-tests-0123456789"
SITE = {
    "index.md": "# Home\n\nWelcome. This site is about web security and cloud cost controls.\n",
    "posts/waf.md": (
        "# Rate limiting with AWS WAF\n\n## Windows\n\nA WAF rate-based rule counts requests per "
        "IP address over a window of 60, 120, 300 or 600 seconds. The limit floor is ten "
        "requests.\n\n## Scope\n\nScope the rule to the chat path so that page views never "
        "count against a visitor.\n"
    ),
    "posts/budgets.md": (
        "# Budgets and ceilings\n\nA reservation holds the worst-case cost of a message "
        "before the model call. Reconciling moves the totals down to the actual cost.\n"
    ),
}


def load_event(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="session")
def knowledge_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from indexer.build import build
    from indexer.policy import IndexPolicy
    from steps.lib.providers.hashing_embedder import HashingEmbedder

    site = tmp_path_factory.mktemp("site")
    for name, text in SITE.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text, encoding="utf-8")
    out = tmp_path_factory.mktemp("knowledge")
    build(site, out, IndexPolicy((), ()), HashingEmbedder(Settings().embedding_dimensions))
    return out


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch, knowledge_dir: Path) -> Iterator[None]:
    for name, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "CHATGUARD_MODEL_BACKEND": "offline",
        # The steps' unit tests run on the fast hashing stand-in (their index is built by
        # it above); tests/steps/lib/providers/test_local_embedder.py runs the real model.
        "CHATGUARD_EMBEDDER": "hashing",
        "CHATGUARD_KNOWLEDGE_DIR": str(knowledge_dir),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    # Every step runs at one fixed instant (a test that needs another pins its own): two
    # calls of one test never straddle midnight, whenever the suite runs.
    pin(monkeypatch, FIXED_NOW)
    caches.reset_all()
    yield
    caches.reset_all()


@dataclass
class Aws:
    dynamodb: Any
    ssm: Any
    table: str = "chatguard"

    def item(self, pk: str, sk: str) -> dict[str, Any] | None:
        key = {"pk": {"S": pk}, "sk": {"S": sk}}
        item: dict[str, Any] | None = self.dynamodb.get_item(TableName=self.table, Key=key).get(
            "Item"
        )
        return item

    def cost(self, pk: str, sk: str) -> int:
        item = self.item(pk, sk)
        return int(item["costMicros"]["N"]) if item and "costMicros" in item else 0

    def count_items(self) -> int:
        return int(self.dynamodb.scan(TableName=self.table, Select="COUNT")["Count"])

    def set_mode(self, mode: str) -> None:
        item = {"pk": {"S": "CONFIG"}, "sk": {"S": "MODE"}, "mode": {"S": mode}}
        self.dynamodb.put_item(TableName=self.table, Item=item)

    def put_secret(self, name: str, value: SecretValue) -> None:
        self.ssm.put_parameter(
            Name=name, Value=render_secret(value), Type="SecureString", Overwrite=True
        )


@pytest.fixture(scope="module")
def _moto() -> Iterator[tuple[Any, Any]]:
    # One mock per test module (starting moto costs far more than a fresh table does).
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        yield session.client("dynamodb"), session.client("ssm")


@pytest.fixture
def aws(_moto: tuple[Any, Any]) -> Iterator[Aws]:
    s = Settings()
    db, ssm = _moto
    if s.table_name in db.list_tables()["TableNames"]:
        db.delete_table(TableName=s.table_name)
    create_ledger_table(db, s.table_name)
    handle = Aws(db, ssm, s.table_name)
    for name, value in (
        (s.origin_secret_param, ORIGIN),
        (s.salt_param, SALT),
        (s.signing_key_param, SIGNING),
    ):
        handle.put_secret(name, SecretValue(value, None, int(time.time()) - 86_400 * 3))
    yield handle


@dataclass
class CountingResponder:
    """A fake Converse: counts calls, records prompts, answers with fixed usage."""

    text: str = "A rate-based rule counts requests per IP over a window."
    usage: dict[str, int] = field(
        default_factory=lambda: {
            "inputTokens": 900,
            "outputTokens": 40,
            "cacheReadInputTokens": 0,
            "cacheWriteInputTokens": 0,
        }
    )
    error: Exception | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    # The exact input count CountTokens would report, or None: "cannot count here".
    exact_count: Callable[[str, list[Any]], int] | None = None
    counts: int = 0

    def count_tokens(self, system: str, messages: list[Any]) -> int:
        from steps.lib.money.metering import CountUnavailable

        self.counts += 1
        if self.exact_count is None:
            raise CountUnavailable("no CountTokens in this test")
        return self.exact_count(system, messages)

    # What the guardrail says of each message (None: it passes everything, billing nothing).
    verdict: Callable[[str], GuardVerdict] | None = None
    guarded: list[str] = field(default_factory=list)

    def guard(self, text: str) -> GuardVerdict:
        self.guarded.append(text)
        return self.verdict(text) if self.verdict else GuardVerdict(False)

    def converse(self, *, system: str, messages: list[Any]) -> ModelReply:
        self.calls.append({"system": system, "messages": messages})
        if self.error is not None:
            raise self.error
        return ModelReply(self.text, dict(self.usage), "end_turn")


@pytest.fixture
def responder(monkeypatch: pytest.MonkeyPatch) -> CountingResponder:
    fake = CountingResponder()
    monkeypatch.setattr(models, "responder", lambda s: fake)
    return fake


class Serialised:
    """Wraps a boto3 client so each emulated call is atomic (moto is not thread-safe), with
    a little latency after each call, as a network round trip would add. TEST harness only."""

    def __init__(self, client: Any, latency: float = 0.001) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._latency = latency
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        def call(**kwargs: Any) -> Any:
            with self._lock:
                self.calls += 1
                result = method(**kwargs)
            time.sleep(self._latency)
            return result

        return call
