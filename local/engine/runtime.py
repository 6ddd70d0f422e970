"""LocalRuntime: the whole deployed pipeline on one machine, offline.

moto emulates DynamoDB, SSM, Lambda and Step Functions; the real statemachine/chat.asl.json
runs on moto's engine and every Task calls the real ``steps.<module>.handler`` in-process.
The three secrets are random per runtime and never printed; only the in-process edge
(`send` with ``origin_ok=True``, the local server) knows the origin secret.

The handlers read their configuration from the environment exactly as on Lambda, and moto
patches process-wide state, so one runtime runs per process at a time.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from steps.lib.runtime import quiet, wake
from steps.lib.runtime.secrets import SecretValue, render_secret
from steps.lib.runtime.settings import Settings
from steps.lib.runtime.stages import STAGES, Stage

from .edge import socket_address
from .environments import Served
from .results import LambdaContext, Outcome, decision_of, http_reply, terminal
from .step_functions import Engine
from .tables import create_ledger_table
from .tracing import recorder
from .wire import Contention, Wire

REGION = "us-east-1"
# Obviously fake: moto accepts any credentials, and nothing here may reach real AWS.
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "local-fake-access-key",
    "AWS_SECRET_ACCESS_KEY": "local-fake-secret-key",
}
VIEWER_PORT = 50123  # the viewer's source port is not part of its identity
_ACTIVE = threading.Lock()


def viewer_address(ip: str, port: int = VIEWER_PORT) -> str:
    """CloudFront-Viewer-Address for an IP: ``ip:port``, or ``[v6]:port`` for IPv6."""
    return socket_address(ip, port) if ip else ""


class LocalRuntime:
    def __init__(
        self,
        settings: Settings | None = None,
        *,
        region: str = REGION,
        bedrock_client: Any = None,
        contention: Contention | None = None,
        signing_key: str | None = None,
    ) -> None:
        """`bedrock_client`: a real bedrock-runtime client (local/engine/bedrock_access.py) for
        settings with ``model_backend="bedrock"``; everything else stays on moto.
        `contention`: conflicts and throttles injected into DynamoDB transactions.
        `signing_key`: the reply-signing key, kept by the caller across runs (`chat
        --history`); random per runtime otherwise, like the other two secrets."""
        self.settings = settings or Settings(model_backend="offline")
        self.region = region
        real = frozenset({"bedrock-runtime"}) if bedrock_client is not None else frozenset()
        self.wire = Wire(real)
        self.wire.contend(contention)
        self._bedrock_client = bedrock_client
        passthrough = ("bedrockruntime",) if bedrock_client is not None else ()
        self._engine = Engine(
            region=region, dispatch=self._dispatch, passthrough=passthrough,
            on_invoke=lambda: self.wire.count("lambda", "Invoke"),
        )  # fmt: skip
        self._secrets = {name: secrets.token_urlsafe(32) for name in self._secret_names()}
        if signing_key:
            self._secrets[self.settings.signing_key_param] = signing_key
        self._saved_env: dict[str, str | None] = {}
        self._handlers: dict[str, Callable[..., Any]] = {}
        self._calls = {"model": 0, "embedding": 0}
        self._calls_lock = threading.Lock()
        self._undo: list[Callable[[], None]] = []
        self.dynamodb: Any = None
        self.ssm: Any = None

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> LocalRuntime:
        if not _ACTIVE.acquire(blocking=False):
            raise RuntimeError("a LocalRuntime is already running in this process")
        try:
            model = _load_in_background(self.settings)
            self._engine.start()
            self.wire.install()
            self._apply_env(self.settings)
            quiet.ENVIRONMENT.forget()  # a fresh deployment: S1's environment is new
            self.dynamodb = self._engine.client("dynamodb")
            self.ssm = self._engine.client("ssm")
            create_ledger_table(self.dynamodb, self.settings.table_name)
            self._seed_secrets()
            self._use_bedrock_client()
            self._count_model_calls()
            self._warm()
            model.join()  # loaded (or failed: Retrieve then fails closed, as on Lambda)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        while self._undo:
            self._undo.pop()()
        self.wire.uninstall()
        self._engine.stop()
        self._restore_env()
        _reset_caches()
        if _ACTIVE.locked():
            _ACTIVE.release()

    def __enter__(self) -> LocalRuntime:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reconfigure(self, **changes: Any) -> Settings:
        """New settings for the following executions (the demo trips a ceiling this way)."""
        self.settings = self.settings.replace(**changes)
        self._apply_env(self.settings)
        self._warm()
        return self.settings

    # -- the one entry point -----------------------------------------------------------
    @property
    def origin_secret(self) -> str:
        """The current X-Origin-Verify value: for the in-process edge only, never printed."""
        return self._secrets[self.settings.origin_secret_param]

    def send(
        self,
        body: object,
        *,
        ip: str,
        origin_ok: bool = True,
        headers: Mapping[str, str] | None = None,
        over_api: bool = False,
    ) -> Outcome:
        """One request as API Gateway would start it: the execution input, then the output.

        ``origin_ok`` plays CloudFront adding the secret header; without it the caller's
        own ``X-Origin-Verify`` (if any) is passed on. ``CloudFront-Viewer-Address`` in
        ``headers`` overrides the address built from ``ip``. No other header reaches the
        execution: the state machine input has no place for one.
        """
        lowered = {k.lower(): v for k, v in (headers or {}).items()}
        origin = self.origin_secret if origin_ok else lowered.get("x-origin-verify", "")
        request_id = str(uuid.uuid4())
        execution_input = {
            "requestId": request_id,
            "body": body,
            "originVerify": origin,
            "viewerAddress": lowered.get("cloudfront-viewer-address") or viewer_address(ip),
        }
        started = time.perf_counter()
        finished = self._engine.run(execution_input, over_api=over_api)
        status, reply = http_reply(finished)
        ms = (time.perf_counter() - started) * 1000
        trace = recorder().finish(request_id, status, ms, terminal(finished, status))
        return Outcome(status, reply, trace.steps, request_id, ms)

    @property
    def bedrock_region(self) -> str | None:
        """The Region of the real Bedrock client (`--model bedrock`), else None."""
        client = self._bedrock_client
        return None if client is None else str(client.meta.region_name)

    def throttle(self, state: str, times: int = 1, *, event: bool = False) -> None:
        """Lambda throttles the next ``times`` invocations of ``state``'s function (its
        handler does not run), as a reduced account concurrency would: the synchronous
        ones, or with ``event`` the asynchronous ones (the wake)."""
        self._engine.throttle(state, times, event=event)

    def cold_start(
        self, state: str, seconds: float, pause: Callable[[float], None] = time.sleep
    ) -> None:
        """The next invocation of ``state``'s function first spends ``seconds`` in a new
        execution environment's INIT, through ``pause`` (tests move their pinned clock)."""
        self._engine.cold_start(state, seconds, pause)

    def wake_delivery(self, seconds: float) -> None:
        """How long an asynchronous invoke (the wake) takes to reach its function (a model's
        assumption: AWS gives no figure)."""
        self._engine.wake_delivery(seconds)

    @property
    def served(self) -> tuple[Served, ...]:
        """Each invocation of a cold-started function: call or event, new environment or
        not (local/engine/environments.py). Waits for the asynchronous ones first."""
        self._engine.settle_events()
        return self._engine.served

    # -- observation for tests, the demo and the benchmark -----------------------------
    @property
    def model_calls(self) -> int:
        return self._calls["model"]

    @property
    def embedding_calls(self) -> int:
        return self._calls["embedding"]

    def ledger_items(self) -> list[dict[str, Any]]:
        """Every item of the table, in DynamoDB's JSON (tests compare before and after)."""
        pages = self.dynamodb.get_paginator("scan").paginate(
            TableName=self.settings.table_name, ConsistentRead=True
        )
        items = [item for page in pages for item in page["Items"]]
        return sorted(items, key=lambda i: (i["pk"]["S"], i["sk"]["S"]))

    # -- internals ---------------------------------------------------------------------
    def _dispatch(self, stage: Stage, event: dict[str, Any], function_name: str) -> Any:
        handler = self._handler(stage)
        context = LambdaContext(
            function_name=function_name,
            aws_request_id=str(uuid.uuid4()),
            memory_limit_in_mb=stage.memory_mb,
            invoked_function_arn=f"arn:aws:lambda:{self.region}:123456789012:function:{function_name}",
            deadline=time.monotonic() + stage.timeout_seconds,
        )
        if wake.is_wake(event):  # part of no message: no step of any trace
            return handler(event, context)
        request_id = str(event.get("requestId", "")) if isinstance(event, dict) else ""
        with recorder().step(request_id, stage.state) as step:
            try:
                result = handler(event, context)
            except Exception as exc:
                step.decision = f"error: {type(exc).__name__}"
                raise
            step.decision = decision_of(stage.state, result)
        return result

    def _handler(self, stage: Stage) -> Callable[..., Any]:
        if stage.module not in self._handlers:
            self._handlers[stage.module] = importlib.import_module(stage.module).handler
        return self._handlers[stage.module]

    def _secret_names(self) -> tuple[str, ...]:
        s = self.settings
        return (s.origin_secret_param, s.salt_param, s.signing_key_param)

    def _apply_env(self, settings: Settings) -> None:
        values = {
            **settings.to_env(),
            **FAKE_CREDENTIALS,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
            "POWERTOOLS_SERVICE_NAME": "chatguard",
            "POWERTOOLS_METRICS_NAMESPACE": "chatguard-local",
        }
        for key, value in values.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value
        _reset_caches()

    def _restore_env(self) -> None:
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()

    def _seed_secrets(self) -> None:
        # Rotated two days ago with no previous value: every secret's `current` applies.
        rotated_at = int(time.time()) - 2 * 86400
        for name, value in self._secrets.items():
            document = render_secret(SecretValue(value, None, rotated_at))
            self.ssm.put_parameter(Name=name, Value=document, Type="SecureString")

    def _count_model_calls(self) -> None:
        """Wrap the two model seams so tests can assert how many billable calls ran."""
        from steps.lib.providers import models

        for seam, counter in (("responder", "model"), ("query_embedder", "embedding")):
            original = getattr(models, seam)
            setattr(models, seam, _counting(original, counter, self._bump))
            self._undo.append(lambda seam=seam, original=original: setattr(models, seam, original))

    def _use_bedrock_client(self) -> None:
        """The steps build their Bedrock adapters from `clients.bedrock_runtime()`: answer it
        with the user's real client instead of one on moto's fake credentials."""
        if self._bedrock_client is None:
            return
        from steps.lib.runtime import clients

        # Every Bedrock call's client: the same credentials (their own timeouts are an AWS
        # deployment's concern; locally a slow call only delays the answer).
        for name in ("bedrock_runtime", "bedrock_guard", "bedrock_embed", "bedrock_count"):
            original = getattr(clients, name)
            setattr(clients, name, lambda: self._bedrock_client)
            self._undo.append(lambda name=name, original=original: setattr(clients, name, original))

    def _bump(self, counter: str) -> None:
        with self._calls_lock:
            self._calls[counter] += 1

    def _warm(self) -> None:
        """Import every handler and build the shared clients once, on this thread.

        Lambda runs one request per container; here many executions share one process,
        and boto3's default session is not safe to build clients from on many threads.
        """
        for stage in STAGES:
            # A missing handler fails its executions closed, as on Lambda.
            with contextlib.suppress(ImportError):
                self._handler(stage)
        from steps.lib.runtime import clients

        clients.dynamodb()
        clients.ssm()


def _load_in_background(settings: Settings) -> threading.Thread:
    """Load the local embedding model on another thread while moto starts on this one.

    Retrieve would load it on the first message (about half a second of ONNX Runtime's
    own work, which releases the GIL, so on two CPUs it overlaps moto's start-up). The
    model is one per process (``local_embedder.shared``); `start` joins this thread before
    it returns, so no message ever races the load. A failure here is dropped: Retrieve
    loads again and fails closed with its own error, exactly as without this thread.
    """

    def load() -> None:
        from steps.lib.providers.degraded_embedder import degraded_embedder_kind

        if degraded_embedder_kind(settings) is None:  # neither S4 nor S7 embeds locally
            return
        from steps.lib.providers import local_embedder

        with contextlib.suppress(Exception):
            local_embedder.shared()

    # Not a daemon: a start interrupted by Ctrl-C must not end the interpreter while ONNX
    # Runtime builds its session in C++ (the process would abort); exit waits for the load.
    thread = threading.Thread(target=load, name="chatguard-model-load", daemon=False)
    thread.start()
    return thread


_METHODS = {"model": "converse", "embedding": "embed_query"}


def _counting(factory: Callable[..., Any], counter: str, bump: Callable[[str], None]) -> Any:
    def make(*args: Any, **kwargs: Any) -> Any:
        return _Counted(factory(*args, **kwargs), _METHODS[counter], lambda: bump(counter))

    return make


class _Counted:
    """Proxy that counts calls of one method of a responder or query embedder."""

    def __init__(self, inner: Any, method: str, bump: Callable[[], None]) -> None:
        self._inner, self._method, self._bump = inner, method, bump

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name != self._method:
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._bump()  # counted before the call: an attempt that fails still counts
            return attr(*args, **kwargs)

        return counted


def _reset_caches() -> None:
    from steps.lib.runtime import caches

    caches.reset_all()
