"""Fixtures for the end-to-end tests: a started LocalRuntime (the real ASL on moto's
engine, the real handlers in-process) over the sample knowledge index, and a local
server around it."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from local.engine.runtime import LocalRuntime, Outcome
from local.engine.wire import Contention
from local.server.routes import EdgeOptions
from local.server.uvicorn_server import ChatServer, serve_in_thread
from steps.lib.money import ledger
from steps.lib.runtime.settings import DEFAULT_KNOWLEDGE_DIR, PROJECT_ROOT, Settings
from tests.clock import at, pin

QUESTION = {"message": "How does the WAF rate-based rule protect the chat?"}
VISITOR = "192.0.2.1"
# Every state an answered message passes through, in order (the ASL's happy path).
ANSWERED_PATH = ["OriginVerify", "Quota", "CostGate", "Retrieve", "Invoke", "Reconcile", "Answer"]


@pytest.fixture(scope="session")
def knowledge_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make test` builds build/knowledge first; without it, build the sample index here."""
    if (DEFAULT_KNOWLEDGE_DIR / "knowledge.json").exists():
        return DEFAULT_KNOWLEDGE_DIR
    from indexer.build import build
    from indexer.local_model import CachedLocalEmbedder
    from indexer.policy import IndexPolicy
    from steps.lib.providers.local_embedder import shared

    # The local model, as `make index` builds it: the offline runtime embeds queries so.
    out = tmp_path_factory.mktemp("knowledge")
    build(
        PROJECT_ROOT / "examples" / "site",
        out,
        IndexPolicy.from_context(),
        CachedLocalEmbedder(shared),
    )
    return out


@pytest.fixture(autouse=True)
def fixed_wall_clock() -> Iterator[None]:
    """The steps' wall clock (UTC day, TTLs, secrets) is pinned for every end-to-end test, so
    no two messages of one test straddle midnight; a test that needs another instant pins
    its own (tests/clock.py). Rate windows and deadlines use the monotonic clock.

    Its own MonkeyPatch, not the test's: an autouse use of ``monkeypatch`` would set that
    fixture up before the runtime and so undo a test's seam patches after the runtime has
    restored its own, putting the runtime's counting wrappers back for later tests."""
    patch = pytest.MonkeyPatch()
    pin(patch, at("2026-11-29 12:00:00"))
    yield
    patch.undo()


class RetryClock:
    """The clock of the ledger's retries in the end-to-end tests: each thread's (one
    execution runs on one thread) moves only when its retry loop sleeps, and the jitter is
    the middle of its range. How many attempts fit in a retry budget is then the same on a
    fast machine, a loaded one and under faketime; the sleep itself is still real, so
    other executions run meanwhile, as they would on AWS."""

    def __init__(self) -> None:
        self._slept = threading.local()

    def now(self) -> float:
        return float(getattr(self._slept, "seconds", 0.0))

    def sleep(self, seconds: float) -> None:
        self._slept.seconds = self.now() + seconds
        time.sleep(seconds)

    def pace(self) -> ledger.Pace:
        return ledger.Pace(clock=self.now, sleep=self.sleep, draw=lambda: 0.5)


@pytest.fixture(autouse=True)
def retries_on_their_own_clock() -> Iterator[None]:
    """S3's and S6's retry budgets (``RESERVATION_BACKOFF``, ``SETTLE_BACKOFF``) counted on a
    `RetryClock`, not the machine's: on a loaded machine a budget in real seconds admits
    fewer attempts (CI saw it in a ledger test), so a settlement that would land could run
    out. The handlers pass no pace, so the ledger's default is replaced. Its own
    MonkeyPatch, for the reason `fixed_wall_clock` gives."""
    pace = RetryClock().pace()
    patch = pytest.MonkeyPatch()
    for function in (ledger.reserve, ledger.reconcile):
        patch.setitem(function.__kwdefaults__, "pace", pace)
    yield
    patch.undo()


@pytest.fixture
def make_runtime(knowledge_dir: Path) -> Iterator[Callable[..., LocalRuntime]]:
    """Start a runtime with setting overrides; closed after the test."""
    started: list[LocalRuntime] = []

    def make(contention: Contention | None = None, **overrides: Any) -> LocalRuntime:
        """``contention``: conflicts and throttles injected into every transaction."""
        values: dict[str, Any] = {"model_backend": "offline", "knowledge_dir": knowledge_dir}
        values.update(overrides)
        runtime = LocalRuntime(Settings().replace(**values), contention=contention).start()
        started.append(runtime)
        return runtime

    yield make
    for runtime in started:
        runtime.close()


@pytest.fixture
def runtime(make_runtime: Callable[..., LocalRuntime]) -> LocalRuntime:
    return make_runtime()


@pytest.fixture
def serve_factory() -> Iterator[Callable[..., ChatServer]]:
    """Start a local server on a free loopback port around a runtime."""
    servers: list[ChatServer] = []

    def start(runtime: LocalRuntime, **options: Any) -> ChatServer:
        server, _thread = serve_in_thread(runtime, EdgeOptions(**options))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def serve(
    runtime: LocalRuntime, serve_factory: Callable[..., ChatServer]
) -> Callable[..., ChatServer]:
    """A local server around the test's runtime."""
    return lambda **options: serve_factory(runtime, **options)


def post(
    server: ChatServer,
    path: str,
    body: bytes | str | dict[str, Any],
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    data = (
        body
        if isinstance(body, bytes)
        else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
    )
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        connection.request(
            "POST", path, body=data, headers={"Content-Type": "application/json", **(headers or {})}
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


def items_by_key(runtime: LocalRuntime) -> dict[tuple[str, str], dict[str, Any]]:
    return {(i["pk"]["S"], i["sk"]["S"]): i for i in runtime.ledger_items()}


def number(item: dict[str, Any] | None, attribute: str) -> int:
    if not item or attribute not in item:
        return 0
    return int(item[attribute]["N"])


def day_total(runtime: LocalRuntime) -> int:
    """The day's total over every shard (``GLOBAL`` and ``GLOBAL#<k>``)."""
    return sum(
        number(item, "costMicros")
        for (pk, sk), item in items_by_key(runtime).items()
        if (pk == "GLOBAL" or pk.startswith("GLOBAL#")) and not sk.startswith("MONTH#")
    )


def reservations(runtime: LocalRuntime) -> list[dict[str, Any]]:
    return [i for (pk, _), i in items_by_key(runtime).items() if pk.startswith("RES#")]


def all_at_once(count: int, send: Callable[[int], Outcome]) -> list[Outcome]:
    """Run ``send(i)`` for i in range(count) on as many threads, released together."""
    barrier = threading.Barrier(count)
    outcomes: list[Outcome] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        barrier.wait()
        outcome = send(i)
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return outcomes


@contextmanager
def serve_process(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`chatguard serve --port 0 ARGS` in a fresh process, with the URL it printed; killed
    on the way out if the test did not stop it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "chatguard", "serve", "--port", "0", *args],
        cwd=PROJECT_ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        yield process, line.split()[line.split().index("on") + 1]
    finally:
        if process.poll() is None:
            process.kill()
