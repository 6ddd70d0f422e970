"""The real chat.asl.json on moto's Step Functions engine, Lambda tasks run in-process.

Seams into moto 5.2 (read from its source; each one is undone by `stop()`):

- ``mock_aws(config=MOTO_CONFIG)`` selects the ASL-executing Step Functions backend. The
  engine reaches Lambda through ``lambda_eval_utils.boto_client_for("lambda")`` and calls
  nothing but ``invoke(**parameters)``, reading ``StatusCode``, ``FunctionError`` and
  ``Payload`` from the answer; `InProcessLambda` is that client, answering with
  `Engine._invoke`, which calls ``steps.<module>.handler`` in the calling thread. A raised
  exception becomes ``FunctionError: Unhandled`` + ``{errorType, errorMessage}``, exactly
  what Lambda answers, so the ASL's ``Catch`` sees the class name. moto's Lambda service
  is not started at all: going through it (a botocore request serialised, parsed by moto,
  answered, parsed back) cost every Task a few milliseconds and every start-up moto's
  Lambda and IAM models and their service descriptions, for the same answer
  (docs/benchmarks.md, "CLI").
- The engine parses the ASL with ANTLR for every execution and again to validate it
  (about 50 ms each); the parsed program holds no per-execution state (retry counters
  live in the execution's environment), so it is parsed once per definition and shared,
  and kept on disk between runs (local/engine/parse_cache.py: the first parse in a process
  costs seconds).
  jsonpath_ng likewise rebuilds a parser per path; parsed paths are cached.
- moto's TransactWriteItems copies the whole table for its rollback; local/engine/dynamo_tx.py
  saves and restores only the items a transaction names.
- The context object's ``$$.Execution.StartTime`` is taken from ``time.time()`` when the
  execution starts (moto reads the system clock): on AWS the run's start and the steps'
  clock are one clock, and the steps measure the run's budget from it, so a test that pins
  or moves ``time.time`` moves both.
- ``throttle(state, times)`` makes the next ``times`` invocations of a Task's function fail
  as Lambda's throttle does, before the handler runs. On AWS the Invoke API answers
  TooManyRequestsException and Step Functions names the error
  ``Lambda.TooManyRequestsException`` (Step Functions guide, "Handle Lambda service
  exceptions"); moto would name any Invoke ClientError ``Exception``, so the engine answers
  with that name as the function error the ASL's ``Retry`` matches.
- ``cold_start(state, seconds, pause)`` gives a Task's function no execution environment:
  an invocation that finds none free spends ``seconds`` before its handler runs, as a new
  Lambda execution environment spends its INIT phase (extensions, runtime start, the
  handler module's import) before the first invocation and outside the function timeout
  (Lambda guide, "Lambda execution environment"). The time is spent through ``pause``: a
  test passes one that moves its pinned clock, so the steps' run budget sees the cold
  start without the test sleeping. Which invocation meets which environment is
  local/engine/environments.py's model.
- moto 5.2's Lambda integration keeps only the Invoke parameters of its own list
  (``_SUPPORTED_API_PARAM_BINDINGS``), which lacks ``InvocationType``: the wake would run
  as a synchronous call, blocking the path. Step Functions passes it to Lambda's Invoke
  (Step Functions guide, "Invoke an AWS Lambda function with Step Functions": "either
  synchronously or asynchronously"), so the engine adds it to that list.
- An ``InvocationType: Event`` invoke (the wake, statemachine/chat.asl.json) is answered at
  once with Lambda's 202 and no payload; the handler runs on a thread of its own, on an
  environment of the model's choosing, and its errors reach no one (as Lambda's
  asynchronous invocations: the caller only learns the event was queued).

StartSyncExecution is not implemented by moto 5.2, so `run` starts an execution with a
unique name and waits on the execution object (polling describe_execution over the API
costs a boto round trip per poll for the same answer; docs/local.md has the figures).
The wait is woken by the execution's end: moto's worker thread reports it through
``BaseExecutionWorkerCommunication.terminated`` after setting the status, and the engine
wraps that method to wake the waiters (local/engine/wakeup.py, which says why not a
threading.Condition; a sleeping poll added up to its pause to every answer and woke the
waiting thread hundreds of times per execution).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from statemachine import loader
from steps.lib.runtime.stages import STAGES, Stage

from . import dynamo_tx, parse_cache
from .environments import Environments, Served
from .wakeup import Wakeups

THROTTLED = "Lambda.TooManyRequestsException"
MOTO_CONFIG: dict[str, Any] = {"stepfunctions": {"execute_state_machine": True}}
ACCOUNT = "123456789012"  # moto's default account
FUNCTION_PREFIX = "chatguard-"
# The workflow's role: Step Functions checks only its form (no IAM is emulated).
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/chatguard-local"

Dispatch = Callable[[Stage, dict[str, Any], str], Any]


@dataclass(frozen=True, slots=True)
class Finished:
    status: str  # SUCCEEDED | FAILED | TIMED_OUT | ABORTED
    output: dict[str, Any] | None
    error: str | None
    states: tuple[str, ...]  # every state entered, in order


_TIMED_OUT = Finished("TIMED_OUT", None, "local engine timeout", ())
# The longest `_wait` sleeps without rechecking: an ending signals at once, this only
# bounds what an unsignalled change of status would cost.
_RECHECK_SECONDS = 0.25


class Engine:
    def __init__(
        self,
        *,
        region: str,
        dispatch: Dispatch,
        timeout_seconds: float = 60,
        passthrough: tuple[str, ...] = (),
        on_invoke: Callable[[], None] = lambda: None,
    ) -> None:
        """`on_invoke` is told of every Lambda invocation (the wire counts them)."""
        self.region = region
        # moto services whose calls go to real AWS (`--model bedrock`: bedrock-runtime)
        self._passthrough = passthrough
        self._dispatch = dispatch
        self._lambda = InProcessLambda(self._invoke, on_invoke)
        self._timeout = timeout_seconds
        self._mock: Any = None
        self._undo: list[Callable[[], None]] = []
        self._by_function = {FUNCTION_PREFIX + s.state: s for s in STAGES}
        self._throttled: dict[tuple[str, bool], int] = {}
        self._throttle_lock = threading.Lock()
        self._environments = Environments()
        self._events: list[threading.Thread] = []  # asynchronous invocations still running
        self._events_lock = threading.Lock()  # executions invoke from their own threads
        # Woken whenever an execution of this process ends (see `_signal_endings`).
        self._ended = Wakeups()
        self.state_machine_arn = ""

    def throttle(self, state: str, times: int = 1, *, event: bool = False) -> None:
        """The next ``times`` synchronous invocations of ``state``'s function (asynchronous
        ones with ``event``) are throttled by Lambda: the handler does not run."""
        with self._throttle_lock:
            key = (state, event)
            self._throttled[key] = self._throttled.get(key, 0) + times

    def _take_throttle(self, state: str, event: bool) -> bool:
        with self._throttle_lock:
            left = self._throttled.get((state, event), 0)
            if left:
                self._throttled[state, event] = left - 1
            return left > 0

    def cold_start(
        self, state: str, seconds: float, pause: Callable[[float], None] = time.sleep
    ) -> None:
        """``state``'s function has no execution environment: an invocation that finds none
        free starts one, ``pause(seconds)`` (its INIT) before the handler runs."""
        self._environments.cold_start(state, seconds, pause)

    def wake_delivery(self, seconds: float) -> None:
        """The modelled delay from an asynchronous invoke to its event reaching the function."""
        self._environments.delivery_delay = seconds

    @property
    def served(self) -> tuple[Served, ...]:
        """Every invocation of a cold-started function: how invoked, on which environment."""
        return tuple(self._environments.served)

    def settle_events(self) -> None:
        """Wait for every asynchronous invocation's handler to have returned."""
        with self._events_lock:
            running, self._events = self._events, []
        for thread in running:
            thread.join()

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        from . import light_imports, shared_models

        shared_models.share()
        light_imports.defer()
        from moto import mock_aws
        from moto.core.config import default_user_config

        config: dict[str, Any] = dict(MOTO_CONFIG)
        if self._passthrough:
            core = dict(default_user_config.get("core", {}))
            core["passthrough"] = {"urls": [], "services": list(self._passthrough)}
            config["core"] = core
        self._mock = mock_aws(config=config)  # type: ignore[arg-type]
        self._mock.start()
        self._undo.append(dynamo_tx.install())
        self._list_regions_with_botocore()
        self._patch_engine()
        self._signal_endings()
        self.state_machine_arn = self._deploy()

    def stop(self) -> None:
        self.settle_events()
        while self._undo:
            self._undo.pop()()
        if self._mock is not None:
            self._mock.stop()
            self._mock = None

    def client(self, service: str) -> Any:
        """A client on the emulator. Cached for the process: moto intercepts calls in a
        global botocore hook, so a client outlives one runtime, and building one costs
        tens of milliseconds. A botocore client, as the steps' own (steps/lib/runtime/
        clients.py): boto3's wraps the same call, and its Session reads the service
        descriptions through a Loader of other search paths, parsing them again."""
        with _CLIENTS_LOCK:
            key = (service, self.region)
            if key not in _CLIENTS:
                _CLIENTS[key] = _botocore_session().create_client(service, region_name=self.region)
            return _CLIENTS[key]

    # -- running -----------------------------------------------------------------------
    def run(self, execution_input: dict[str, Any], *, over_api: bool = False) -> Finished:
        """Start one execution with a unique name and wait for its end.

        `over_api` starts and polls through the public API (StartExecution, then
        DescribeExecution) instead of the backend object; the benchmark compares the two.
        """
        from moto.stepfunctions.responses import get_backend

        if over_api:
            return self._run_over_api(execution_input)
        backend = get_backend(ACCOUNT, self.region)
        name = uuid.uuid4().hex
        execution = backend.start_execution(
            self.state_machine_arn, name=name, execution_input=json.dumps(execution_input)
        )
        if not self._wait(lambda: execution.exec_status.value != "RUNNING"):
            return _TIMED_OUT
        finished = _finished(execution)
        _forget(backend, execution)
        return finished

    def _run_over_api(self, execution_input: dict[str, Any]) -> Finished:
        sfn = self.client("stepfunctions")
        arn = sfn.start_execution(
            stateMachineArn=self.state_machine_arn, name=uuid.uuid4().hex,
            input=json.dumps(execution_input),
        )["executionArn"]  # fmt: skip
        described: dict[str, Any] = {}

        def done() -> bool:
            described.clear()
            described.update(sfn.describe_execution(executionArn=arn))
            return bool(described["status"] != "RUNNING")

        if not self._poll(done):
            return _TIMED_OUT
        output = json.loads(described["output"]) if "output" in described else None
        from moto.stepfunctions.responses import get_backend

        backend = get_backend(ACCOUNT, self.region)
        _forget(backend, backend.describe_execution(arn))
        return Finished(described["status"], output, described.get("error"), ())

    def _wait(self, done: Callable[[], bool]) -> bool:
        """Wait until ``done()``, checked again each time an execution ends (moto reports
        the end after setting the status); False at the timeout. A bounded pause still
        rechecks in case an ending is ever reported elsewhere."""
        return self._ended.wait_until(done, self._timeout, _RECHECK_SECONDS)

    def _poll(self, done: Callable[[], bool]) -> bool:
        """The alternative the benchmark measures (`over_api`): ask ``done`` with a growing
        pause (0.5 ms up to 5 ms), as a client of the public API must; False at the
        timeout."""
        deadline, pause = time.monotonic() + self._timeout, 0.0005
        while not done():
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 1.5, 0.005)
        return True

    def _execution_ended(self) -> None:
        self._ended.wake_all()

    # -- seams -------------------------------------------------------------------------
    def _invoke(
        self, function_name: str, body: bytes | None, response_headers: Any, event_type: bool
    ) -> bytes:
        name = (
            function_name.rsplit(":", 1)[-1] if function_name.startswith("arn:") else function_name
        )
        stage = self._by_function.get(name)
        if stage is None:
            raise _no_such_function(function_name)
        if self._take_throttle(stage.state, event_type):
            if event_type:  # Invoke answers 429 itself: Step Functions names the ClientError
                raise _throttled()
            response_headers["x-amz-function-error"] = "Unhandled"
            throttled = {"errorType": THROTTLED, "errorMessage": "Rate Exceeded."}
            return json.dumps(throttled).encode()
        event = json.loads(body or b"{}")
        if event_type:  # a throttled attempt (above) started no environment
            self._environments.event(stage.state)
            self._run_in_background(stage, event, name)
            return b""
        environment = self._environments.call(stage.state)
        try:
            result = self._dispatch(stage, event, name)
        except Exception as exc:  # the Lambda runtime's contract for an unhandled error
            response_headers["x-amz-function-error"] = "Unhandled"
            result = {"errorType": type(exc).__name__, "errorMessage": str(exc)}
        finally:
            self._environments.done(environment)
        return json.dumps(result).encode()

    def _run_in_background(self, stage: Stage, event: dict[str, Any], name: str) -> None:
        def run() -> None:
            with contextlib.suppress(Exception):  # an asynchronous error reaches no caller
                self._dispatch(stage, event, name)

        thread = threading.Thread(target=run, name=f"chatguard-event-{stage.state}", daemon=True)
        with self._events_lock:  # a long-running server keeps only the running ones
            self._events = [t for t in self._events if t.is_alive()]
            thread.start()  # started under the lock: a pruning never drops an unstarted one
            self._events.append(thread)

    def _patch_engine(self) -> None:
        from moto.stepfunctions.parser.asl.component.common.path import result_path
        from moto.stepfunctions.parser.asl.component.state.exec.state_task import (
            lambda_eval_utils,
        )
        from moto.stepfunctions.parser.asl.utils import json_path
        from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker
        from moto.stepfunctions.parser.models import StepFunctionsParserBackend

        lambda_client = self._lambda
        self._pass_invocation_type()
        moto_validate = StepFunctionsParserBackend._validate_definition

        def validate(definition: str) -> None:
            try:
                _parsed(definition)
            except Exception:
                moto_validate(definition)  # raises moto's own InvalidDefinition
                raise

        patches: list[tuple[Any, str, Any]] = [
            (ExecutionWorker, "_get_evaluation_entrypoint", _cached_entrypoint),
            (
                ExecutionWorker,
                "_get_evaluation_environment",
                _started_now(ExecutionWorker._get_evaluation_environment),
            ),
            (StepFunctionsParserBackend, "_validate_definition", staticmethod(validate)),
            (lambda_eval_utils, "boto_client_for", lambda **_kw: lambda_client),
            # jsonpath_ng builds a fresh PLY parser for every path it parses (about 1 ms,
            # a dozen times per execution); the parsed expressions are immutable.
            (json_path, "parse", functools.lru_cache(maxsize=256)(json_path.parse)),
            (result_path, "parse", functools.lru_cache(maxsize=256)(result_path.parse)),
        ]
        for owner, name, replacement in patches:
            original = vars(owner)[name]  # the raw attribute (a staticmethod stays one)
            setattr(owner, name, replacement)
            self._undo.append(functools.partial(setattr, owner, name, original))

    def _pass_invocation_type(self) -> None:
        from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
            state_task_service_lambda,
        )

        kept: set[str] = state_task_service_lambda._SUPPORTED_API_PARAM_BINDINGS["invoke"]
        if "InvocationType" not in kept:
            kept.add("InvocationType")
            self._undo.append(functools.partial(kept.discard, "InvocationType"))

    def _list_regions_with_botocore(self) -> None:
        """moto lists a service's Regions (when its backend is first built) through a boto3
        Session, which parses the service's description to find its endpoint prefix; a
        botocore Session answers the same lists from the descriptions the clients have
        already read (local/engine/shared_models.py)."""
        from moto.core.base_backend import AccountSpecificBackend

        original = vars(AccountSpecificBackend)["get_session"]
        AccountSpecificBackend.get_session = classmethod(lambda cls: _botocore_session())  # type: ignore[assignment,method-assign]
        self._undo.append(
            functools.partial(setattr, AccountSpecificBackend, "get_session", original)
        )

    def _signal_endings(self) -> None:
        from moto.stepfunctions.parser.backend.execution import (
            BaseExecutionWorkerCommunication as Communication,
        )

        reflect = vars(Communication)["terminated"]
        ended = self._execution_ended

        def terminated(communication: Any) -> None:
            try:
                reflect(communication)  # sets exec_status, output, error
            finally:
                ended()

        Communication.terminated = terminated  # type: ignore[method-assign,assignment]
        self._undo.append(functools.partial(setattr, Communication, "terminated", reflect))

    def _deploy(self) -> str:
        """The state machine, its Tasks pointing at the stages' function ARNs."""
        from moto.stepfunctions.responses import get_backend

        arns = {
            stage.placeholder: function_arn(self.region, FUNCTION_PREFIX + stage.state)
            for stage in STAGES
        }
        machine = get_backend(ACCOUNT, self.region).create_state_machine(
            name="chatguard-chat",
            definition=loader.substitute(arns),
            roleArn=ROLE_ARN,
            sm_type="EXPRESS",
        )
        return str(machine.arn)


def function_arn(region: str, name: str) -> str:
    return f"arn:aws:lambda:{region}:{ACCOUNT}:function:{name}"


class InProcessLambda:
    """The one Lambda call moto's engine makes, ``invoke(FunctionName=, Payload=)``,
    answered in-process with what Lambda's Invoke API returns. A RequestResponse call:
    StatusCode 200, the function's JSON as a streaming Payload, and FunctionError
    ``Unhandled`` when the function raised. An Event call: StatusCode 202 and an empty
    Payload ("The API response only includes a status code", Lambda API reference, Invoke,
    https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html)."""

    def __init__(
        self,
        invoke: Callable[[str, bytes | None, dict[str, str], bool], bytes],
        on_invoke: Callable[[], None],
    ) -> None:
        self._invoke, self._on_invoke = invoke, on_invoke

    def invoke(
        self,
        *,
        FunctionName: str,
        Payload: bytes | None = None,
        InvocationType: str = "RequestResponse",
        **_: Any,
    ) -> Any:
        self._on_invoke()
        headers: dict[str, str] = {}
        event_type = InvocationType == "Event"
        body = self._invoke(FunctionName, Payload, headers, event_type)
        answer: dict[str, Any] = {
            "StatusCode": 202 if event_type else 200,
            "ExecutedVersion": "$LATEST",
            "Payload": io.BytesIO(body),
        }
        if "x-amz-function-error" in headers:
            answer["FunctionError"] = headers["x-amz-function-error"]
        return answer


def _no_such_function(name: str) -> Exception:
    from botocore.exceptions import ClientError

    error = {"Code": "ResourceNotFoundException", "Message": f"Function not found: {name}"}
    return ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": 404}}, "Invoke")


def _throttled() -> Exception:
    from botocore.exceptions import ClientError

    error = {"Code": "TooManyRequestsException", "Message": "Rate Exceeded."}
    metadata = {"HTTPStatusCode": 429, "RequestId": uuid.uuid4().hex}
    return ClientError({"Error": error, "ResponseMetadata": metadata}, "Invoke")


def _started_now(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The execution's environment with ``$$.Execution.StartTime`` read from time.time()."""

    def environment(worker: Any) -> Any:
        env = original(worker)
        started = datetime.fromtimestamp(time.time(), tz=UTC)
        stamp = started.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        env.states.context_object.context_object_data["Execution"]["StartTime"] = stamp
        return env

    return environment


def _finished(execution: Any) -> Finished:
    output = execution.output if execution.exec_status.value == "SUCCEEDED" else None
    if isinstance(output, str):
        output = json.loads(output)
    return Finished(
        status=execution.exec_status.value,
        output=output,
        error=execution.error,
        states=_states_entered(execution),
    )


def _states_entered(execution: Any) -> tuple[str, ...]:
    events = execution.to_history_output().get("events", [])
    return tuple(
        e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e
    )


def _forget(backend: Any, execution: Any) -> None:
    """Drop a finished execution: a long-running server must not keep every history."""
    from moto.stepfunctions.parser.utils import TMP_THREADS

    for machine in backend.state_machines:
        if execution in machine.executions:
            machine.executions.remove(execution)
    TMP_THREADS[:] = [t for t in TMP_THREADS if t.is_alive()]


_PARSED: dict[str, Any] = {}
_PARSE_LOCK = threading.Lock()
_CLIENTS: dict[tuple[str, str], Any] = {}
_CLIENTS_LOCK = threading.Lock()
_SESSION: list[Any] = []


def _botocore_session() -> Any:
    """One botocore Session for the engine's clients, built after moto is imported (moto's
    request hook joins every Session built from then on)."""
    with _SESSION_LOCK:
        if not _SESSION:
            import botocore.session

            _SESSION.append(botocore.session.get_session())
        return _SESSION[0]


_SESSION_LOCK = threading.Lock()


def _cached_entrypoint(worker: Any) -> Any:
    return _parsed(worker._evaluation_details.state_machine_details.definition)


def _parsed(definition: str) -> Any:
    """The parsed program of a definition, parsed once and shared by every execution.

    Safe to share: every component keeps per-execution state in the execution's
    environment, except a lazily drawn ``heap_key``, which is drawn here, up front, so
    concurrent executions never race to draw it. A syntax error raises as moto's own
    validation would (create_state_machine answers InvalidDefinition).
    """
    with _PARSE_LOCK:
        if definition not in _PARSED:
            _PARSED[definition] = parse_cache.load_or_parse(definition, _parse)
        return _PARSED[definition]


def _parse(definition: str) -> Any:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    program = AmazonStateLanguageParser.parse(definition)[0]
    _draw_heap_keys(program)
    return program


def _draw_heap_keys(root: Any) -> None:
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent

    seen: set[int] = set()
    pending = [root]
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, EvalComponent):
            _ = item.heap_key
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list | tuple | set):
            pending.extend(item)
        elif hasattr(item, "__dict__") and type(item).__module__.startswith("moto."):
            pending.extend(vars(item).values())
