"""`make bench-cold`: each step's cold start, measured in parts, and the cold first message.

Per step, in a fresh interpreter per run (``tests/bench/cold_probe.py``): CPU seconds to
import the handler module (on Lambda that is the INIT phase: clients, Powertools, the
X-Ray patch, the index), to run the first invocation and a warm one; once from source
only and once with precompiled bytecode (unchecked-hash .pyc, as infra/bundling.py
writes). The interpreter sees only a copy of what the bundle ships (steps/, the pinned
libraries, the index), like /var/task, with a Lambda-like environment. AWS answers from a
local stand-in HTTP endpoint (127.0.0.1, ephemeral port) with canned DynamoDB, SSM,
Converse and Titan replies, so the clients' real request path (endpoint rules, signing,
HTTP, parsing) is measured; TLS is not (the stand-in speaks plain HTTP).

The model (figures written to docs/benchmarks.md, section "Cold path"):

    cold step (s)    = START + (import CPU + first-invocation CPU) / share(memory) + calls x RTT
    share(memory)    = min(memory MB / 1769, 1)   (1,769 MB = one vCPU; Python uses one)
    cold message (s) = sum of the six answered steps' cold steps + transitions x TRANSITION

Bedrock's own latency is excluded (the model's answer time does not depend on this code).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path
from typing import Any

from infra import bundling, cold_model, runtime_sdk
from steps.lib.grounding.knowledge import bedrock_embedder_id
from steps.lib.money import pricing
from steps.lib.runtime import clients
from steps.lib.runtime.settings import Settings, cdk_context
from steps.lib.runtime.stages import STAGES, Stage
from tests.bench import cold_wake, report

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("cold_probe.py")
SAVED = ROOT / "build" / "bench-cold.json"
RUNS = int(os.environ.get("BENCH_COLD_RUNS", "5"))

# The model's inputs and formula live in infra/cold_model.py (the timeout proof and the
# local cold-start test read the same figures, from infra/cold_model.json, which this writes).
VCPU_MB, START_S, RTT_S, TRANSITION_S = (
    cold_model.VCPU_MB, cold_model.START_S, cold_model.RTT_S, cold_model.TRANSITION_S,
)  # fmt: skip
ANSWERED, COLD_CALLS = cold_model.ANSWERED, cold_model.COLD_CALLS
# Lambda arm64, us-east-1 (aws.amazon.com/lambda/pricing): per GB-second and per request.
GB_SECOND_USD = 0.0000133334
REQUEST_USD = 0.20 / 1_000_000
# Lambda SnapStart for Python, us-east-1 list prices: snapshot cache per GB-second while a
# version is active, and per GB restored (aws.amazon.com/lambda/pricing, "SnapStart").
SNAPSTART_CACHE_GB_SECOND_USD = 0.0000015046
SNAPSTART_RESTORE_GB_USD = 0.0001397998
# AWS calls each step makes on a cold first message, Bedrock excluded (bench-pipeline counts).
WARM_CALLS = {"OriginVerify": 0, "Quota": 1, "CostGate": 1, "Retrieve": 0, "Invoke": 0,
              "Reconcile": 1, "Degraded": 0}  # fmt: skip
# Bedrock time inside S4 and S5 (embedding, Converse), assumed for the cost table only.
BEDROCK_WAIT_S = {"Retrieve": 0.15, "Invoke": 2.5}
EVENTS_DIR = ROOT / "tests" / "events"
TYPICAL_USAGE = {"inputTokens": 2500, "outputTokens": 250}


def step_event(stage: Stage, today: str | None = None) -> dict[str, Any]:
    """The step's sample event from tests/events (kept in step with the handlers), its
    reservation dated ``today`` (UTC, default: the day the bench runs).

    The probes run the handlers on the real clock, and S5 refuses a reservation whose day
    has ended: a bench run on any day after the sample's would measure a refusal.
    """
    name = stage.module.rsplit(".", 1)[-1]
    event: dict[str, Any] = json.loads((EVENTS_DIR / f"{name}.json").read_text("utf-8"))
    day = today or time.strftime("%Y-%m-%d", time.gmtime())
    return _dated(event, day)


def _dated(value: Any, day: str) -> Any:
    if isinstance(value, dict):
        dated = {k: _dated(v, day) for k, v in value.items()}
        if "day" in dated:
            dated["day"] = day
        if "month" in dated:
            dated["month"] = day[:7]
        return dated
    if isinstance(value, list):
        return [_dated(v, day) for v in value]
    return value


SECRETS = {
    "/chatguard/origin-secret": step_event(STAGES[0])["originVerify"],
    "/chatguard/visitor-salt": "visitor-salt-for-the-cold-bench-0123",
    "/chatguard/signing-key": "signing-key-for-the-cold-bench-01234",
}


class StandIn(BaseHTTPRequestHandler):
    """Offline stand-in for the AWS endpoints the steps call: canned, well-formed replies."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        target = self.headers.get("X-Amz-Target", "")
        if target.startswith("DynamoDB_20120810."):
            reply = {"Attributes": {"msgCount": {"N": "1"}}} if target.endswith("Item") else {}
            self._send(reply, "application/x-amz-json-1.0")
        elif target == "AmazonSSM.GetParameter":
            name = json.loads(body)["Name"]
            value = json.dumps({"current": SECRETS[name], "previous": None, "rotated_at": 0})
            self._send({"Parameter": {"Name": name, "Type": "SecureString", "Value": value}})
        elif self.path.endswith("/converse"):
            self._send({
                "output": {"message": {"role": "assistant",
                                       "content": [{"text": "It counts per IP."}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 900, "outputTokens": 40, "totalTokens": 940},
                "metrics": {"latencyMs": 1},
            })  # fmt: skip
        elif self.path.endswith("/invoke"):
            dims = Settings().embedding_dimensions
            self._send({"embedding": [1.0 / dims] * dims, "inputTextTokenCount": 12})
        else:
            self._send({"message": f"the stand-in does not know {target or self.path}"}, code=400)

    def _send(self, data: object, kind: str = "application/json", code: int = 200) -> None:
        raw = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *_args: Any) -> None:
        return None


@contextmanager
def stand_in() -> Iterator[tuple[int, int]]:
    """The HTTP stand-in and a UDP sink for X-Ray segments, both on 127.0.0.1."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], sink.getsockname()[1]
    finally:
        server.shutdown()
        server.server_close()
        sink.close()


def task_root(dest: Path, asset: bundling.StepAsset, index: Path) -> Path:
    """What the bundle ships, from this machine's installed copies of the pinned libraries."""
    shutil.copytree(ROOT / "steps", dest / "steps", ignore=shutil.ignore_patterns("__pycache__"))
    for requirement in asset.requirements():
        dist = metadata.distribution(requirement.split("==")[0])
        for file in dist.files or ():
            if file.parts[0] == ".." or "__pycache__" in file.parts or file.suffix == ".pyc":
                continue
            target = dest / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(str(file.locate())), target)
    if asset.with_knowledge:
        shutil.copytree(index, dest / "build" / "knowledge")
    return dest


RUNTIME_SDK = ("botocore", "jmespath", "python-dateutil", "six", "urllib3")


def runtime_sdk_root(dest: Path) -> Path:
    """Offline stand-in for the runtime's own SDK (on Lambda after /var/task on the path):
    this machine's copy of the pinned botocore and its dependencies, with bytecode, as the
    runtime's files are assumed to carry it (docs/benchmarks.md, "Cold path": assumption)."""
    for name in RUNTIME_SDK:
        for file in metadata.distribution(name).files or ():
            if file.parts[0] == ".." or "__pycache__" in file.parts or file.suffix == ".pyc":
                continue
            target = dest / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(str(file.locate())), target)
    bundling.compile_bytecode(dest, sys.executable)
    return dest


# Layouts measured: what synthesis ships (the runtime's SDK for every step but S5), and
# every step with its own botocore (before that lever), to show what the lever buys.
VENDORED_GATE = bundling.StepAsset("gate-vendored", ("lambda.txt", "botocore.txt"), False)
VENDORED_RETRIEVAL = bundling.StepAsset(
    "retrieval-vendored", ("lambda.txt", "botocore.txt", "numpy.txt"), True
)


VENDORED_LOCAL_RETRIEVAL = bundling.StepAsset(
    "retrieval-local-vendored",
    ("lambda.txt", "botocore.txt", "numpy.txt", "local_embedder.txt"),
    True,
)


def layout_asset(layout: str, stage: Stage) -> bundling.StepAsset:
    # As cdk.json deploys (the default settings: Retrieve beside Titan, S7 with the local
    # model, degraded_embedder "local"), chosen by the stack's own rule.
    embedder = bundling.stage_embedder(stage, Settings())
    if layout == "shipped":
        return bundling.step_asset(stage, embedder)
    local = embedder == "local"
    if stage.needs_numpy:
        return VENDORED_LOCAL_RETRIEVAL if local else VENDORED_RETRIEVAL
    return VENDORED_GATE


def bench_index(dest: Path) -> Path:
    """The site indexed under the Titan embedder's id (a stand-in: hashing vectors), so S4's
    bedrock-backend check accepts it without a Bedrock call, with the local model's
    vectors beside for S7, as `chatguard index --embedder titan` writes them."""
    from indexer.build import build
    from indexer.local_model import CachedLocalEmbedder
    from indexer.policy import IndexPolicy
    from steps.lib.providers.hashing_embedder import HashingEmbedder
    from steps.lib.providers.local_embedder import shared

    s = Settings()

    class StandInTitan(HashingEmbedder):
        id = bedrock_embedder_id(s.embedding_model_id, s.embedding_dimensions)

    local = CachedLocalEmbedder(shared, cache_path=dest.parent / "local-cache.json")
    build(ROOT / "examples" / "site", dest, IndexPolicy.from_context(cdk_context()),
          StandInTitan(s.embedding_dimensions), local)  # fmt: skip
    return dest


def probe(root: Path, runtime: Path, stage: Stage, ports: tuple[int, int]) -> dict[str, Any]:
    http_port, udp_port = ports
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "AWS_LAMBDA_FUNCTION_NAME": f"chatguard-{stage.state}",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(stage.memory_mb),
        "LAMBDA_TASK_ROOT": str(root),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_SESSION_TOKEN": "bench",
        "AWS_CONFIG_FILE": str(root / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(root / "no-aws-credentials"),
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{http_port}",
        "AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{udp_port}",
        "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;"
        "Sampled=1",
    }
    event = step_event(stage)
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-B", str(PROBE), f"{root}:{runtime}", stage.module,
         json.dumps(event)],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"{stage.state} probe failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if "response" in result["result"] and stage.state != "Degraded":
        raise RuntimeError(f"{stage.state} refused the bench event: {result['result']}")
    return result


def interpreter_start() -> float:
    """CPU seconds of a bare `python -I -S -B -c pass` (the runtime's own start, in part)."""
    samples = []
    for _ in range(RUNS):
        before = os.times()
        subprocess.run([sys.executable, "-I", "-S", "-B", "-c", "pass"], check=True)
        after = os.times()
        samples.append(
            (after.children_user - before.children_user)
            + (after.children_system - before.children_system)
        )
    return statistics.median(samples)


Figures = dict[str, dict[str, dict[str, float]]]  # state -> mode -> part -> CPU seconds


def measure(work: Path, layouts: tuple[str, ...]) -> dict[str, Figures]:
    index = bench_index(work / "index")
    runtime = runtime_sdk_root(work / "runtime-sdk")
    roots: dict[tuple[str, str], Path] = {}
    for layout in layouts:
        for asset in {layout_asset(layout, stage) for stage in STAGES}:
            for mode in ("source", "bytecode"):
                if (asset.name, mode) in roots:
                    continue
                root = task_root(work / f"{asset.name}-{mode}", asset, index)
                if mode == "bytecode":
                    bundling.compile_bytecode(root, sys.executable)
                roots[asset.name, mode] = root
    samples: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {}
    with stand_in() as ports:
        for stage in STAGES:
            for _ in range(RUNS):  # interleaved, so machine load hits every cell alike
                for layout in layouts:
                    asset = layout_asset(layout, stage)
                    per_mode = samples.setdefault(layout, {}).setdefault(
                        stage.state, {"source": [], "bytecode": []}
                    )
                    for mode in ("source", "bytecode"):
                        per_mode[mode].append(probe(roots[asset.name, mode], runtime, stage, ports))
    return {
        layout: {
            state: {
                mode: {
                    part: statistics.median(run[part]["cpu"] for run in runs)
                    for part in ("import", "first", "warm")
                }
                for mode, runs in modes.items()
            }
            for state, modes in by_state.items()
        }
        for layout, by_state in samples.items()
    }


share = cold_model.share


def cold_step(cpu: dict[str, float], state: str, memory_mb: int) -> float:
    return cold_model.cold_step_of(cpu, state, memory_mb)


def answered_transitions() -> int:
    """States entered on the answered path of chat.asl.json (Tasks and Choices alike)."""
    return cold_model.states_entered("Answer")


def cold_message(cpu: dict[str, dict[str, float]], memory: dict[str, int]) -> float:
    return cold_model.cold_message_of(cpu, memory)


def monthly_cost(
    cpu: dict[str, dict[str, float]], memory: dict[str, int], per_day: int, cold_share: float
) -> float:
    """Lambda cost of the six answered steps a month (INIT is billed like the invocation)."""
    total = 0.0
    for state in ANSWERED:
        warm = cpu[state]["warm"] / share(memory[state]) + WARM_CALLS[state] * RTT_S
        warm += BEDROCK_WAIT_S.get(state, 0.0)
        cold = cold_step(cpu[state], state, memory[state]) - START_S + BEDROCK_WAIT_S.get(state, 0)
        seconds = (1 - cold_share) * warm + cold_share * cold
        total += per_day * 30 * (memory[state] / 1024 * seconds * GB_SECOND_USD + REQUEST_USD)
    return total


def chain_table() -> list[str]:
    """Every chain of the workflow at its worst, cold and warm (infra/worst_chains.py, on the
    figures this run wrote): the same sums tests/infra/test_worst_chains.py checks on the
    synthesized template and ``make synth`` refuses past the workflow's timeout."""
    from infra import config as deploy_config
    from infra import worst_chains

    workflow = deploy_config.load().edge.workflow_timeout_seconds
    warm = {c.states: c.seconds for c in worst_chains.shipped(cold=False)}
    keys = {s.state: s.key for s in STAGES} | {"ReleaseReservation": "release (S6)"}
    keys["ReleaseCutReservation"] = "release by request id (S6)"
    keys["WakeLaterSteps"] = "wake"
    lines = [
        f"**Every chain of the workflow at its worst**, against its {workflow} s timeout: "
        "each Task after a throttle retry's wait, cold (INIT from source, the local model's "
        f"load, {float(cold_model.measured()['local_model_load_cpu']):.2f} s CPU, added to S4's; "
        "S7's measured INIT above holds it) "
        "and at its Lambda timeout; the wake at its 1 s; S5 by the run budget or its key read "
        f"and counting; {worst_chains.SLACK:g} s of slack (infra/worst_chains.py). A quiet "
        "message's chains (with the wake) are shown; a busy site's are 1 s shorter.",
        "",
        "| chain | cold s | warm s |",
        "|---|---:|---:|",
    ]
    shown = set()
    for chain in worst_chains.shipped():
        if "Quota" in chain.states and "WakeLaterSteps" not in chain.states:
            continue  # the same chain as a busy site's message: the wake's second less
        names = " > ".join(keys.get(s, s) for s in chain.states if not s.endswith("Decision"))
        if names not in shown:  # S3's Catch and its Choice's Default both reach FailClosed
            shown.add(names)
            lines.append(f"| {names} | {chain.seconds:.2f} | {warm[chain.states]:.2f} |")
    return lines


def render(layouts: dict[str, Figures], start_cpu: float, load: float) -> str:
    cpu_by_mode = layouts["shipped"]
    configured = {s.state: s.memory_mb for s in STAGES}
    timeouts = {s.state: s.timeout_seconds for s in STAGES}
    with_pyc = {state: modes["bytecode"] for state, modes in cpu_by_mode.items()}
    source = {state: modes["source"] for state, modes in cpu_by_mode.items()}
    lines = [
        f"Measured by `make bench-cold`: {platform.machine()}, {os.cpu_count()} CPUs (load "
        f"average {load:.1f} when it finished), Python {platform.python_version()} (the Lambda "
        f"runtime is {bundling.PYTHON_VERSION} on arm64: treat the CPU times as this machine's, "
        f"not Graviton's), {time.strftime('%Y-%m-%d')}. Median of {RUNS} fresh interpreters "
        "per cell, CPU milliseconds. Each interpreter sees only what the bundle ships, then "
        "a stand-in for the runtime's own SDK (botocore with bytecode, for every step but S5, "
        "which ships its own), with a "
        "Lambda-like environment; AWS is a local stand-in endpoint (no TLS, no network "
        f"latency). A bare interpreter start costs {start_cpu * 1000:.0f} ms CPU here.",
        "",
        "| step | import (INIT), source | import, bytecode | first invoke, source "
        "| first invoke, bytecode | warm invoke |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for stage in STAGES:
        s, b = source[stage.state], with_pyc[stage.state]
        lines.append(
            f"| {stage.key} {stage.state} | {s['import'] * 1000:.0f} | {b['import'] * 1000:.0f} "
            f"| {s['first'] * 1000:.0f} | {b['first'] * 1000:.0f} | {b['warm'] * 1000:.1f} |"
        )
    total_s = sum(source[s]["import"] + source[s]["first"] for s in ANSWERED)
    total_b = sum(with_pyc[s]["import"] + with_pyc[s]["first"] for s in ANSWERED)
    lines += [
        "",
        f"CPU of the six answered steps' cold starts: **{total_s:.2f} s** from source, "
        f"**{total_b:.2f} s** with bytecode.",
        "",
        "**Model of the cold first message** (Bedrock excluded):",
        "",
        "    cold step    = START + (import CPU + first-invocation CPU) / share(memory)"
        " + AWS calls x RTT",
        "    share(MB)    = min(MB / 1769, 1)",
        "    cold message = sum over S1..S6 of cold step + transitions x TRANSITION",
        "",
        f"share: Lambda allocates CPU in proportion to memory, one vCPU at 1,769 MB "
        "([Lambda memory](https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory"
        ".html)); the steps are single-threaded, so more than one vCPU does not help. "
        f"START = {START_S * 1000:.0f} ms per cold step (sandbox, code and runtime start: AWS "
        f"publishes no figure, so this is an assumption), RTT = {RTT_S * 1000:.0f} ms per AWS "
        f"call (assumption, same Region), TRANSITION = {TRANSITION_S * 1000:.0f} ms per state "
        f"entered ({answered_transitions()} on the answered path of chat.asl.json; AWS "
        "publishes no per-transition latency for Express workflows, "
        "[Step Functions quotas](https://docs.aws.amazon.com/step-functions/latest/dg/"
        "service-quotas.html) give rates, not latency: assumption). The import runs in "
        "Lambda's INIT phase, which has its own 10-second limit apart from the function "
        "timeout ([execution environment](https://docs.aws.amazon.com/lambda/latest/dg/"
        "lambda-runtime-environment.html)); reports that INIT gets more CPU than the memory "
        "share are not AWS documentation, so the model does not count on it.",
        "",
        "| step | memory MB | vCPU share | cold step s, source | cold step s, bytecode "
        "| timeout s | timeout / cold, source | timeout / cold, bytecode |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for stage in STAGES:
        mem = configured[stage.state]
        cs = cold_step(source[stage.state], stage.state, mem)
        cb = cold_step(with_pyc[stage.state], stage.state, mem)
        limit = timeouts[stage.state]
        lines.append(
            f"| {stage.key} {stage.state} | {mem} | {share(mem):.3f} | {cs:.2f} | {cb:.2f} "
            f"| {limit} | {limit / cs:.1f}x | {limit / cb:.1f}x |"
        )
    at_256 = {s.state: 256 for s in STAGES}
    full = {s.state: VCPU_MB for s in STAGES}
    invoke_left = timeouts["Invoke"] - cold_step(source["Invoke"], "Invoke", configured["Invoke"])
    lines += [
        "",
        f"S5's timeout also leaves {invoke_left:.1f} s after its cold start, more than the Bedrock "
        f"client's own bound (connect + read = {bedrock_bound()} s), so a slow Converse call "
        "ends with the step's own error, not a Lambda timeout. S4's Titan call has its own "
        f"client ({clients.EMBEDDING.worst:g} s at worst, under S4's {timeouts['Retrieve']} s "
        "timeout: tests/infra/test_client_timeouts.py checks every step's clients so).",
        "",
        *chain_table(),
        "",
        "Every step cold (no wake, or the wake lost the race) at the configured memory: "
        f"**{cold_message(with_pyc, configured):.2f} s** with bytecode, "
        f"{cold_message(source, configured):.2f} s from source. At 256 MB everywhere: "
        f"{cold_message(with_pyc, at_256):.2f} s with "
        f"bytecode, {cold_message(source, at_256):.2f} s from source. At one vCPU for every "
        f"step the model's floor is {cold_message(with_pyc, full):.2f} s with bytecode, of "
        f"which {len(ANSWERED) * START_S:.2f} s is the assumed runtime starts and "
        f"{answered_transitions() * TRANSITION_S:.2f} s the transitions; most of the rest is "
        "botocore's own INIT (its import and, per client, its service model and endpoint "
        "rules), which neither bytecode nor the runtime's SDK removes: what the wake (below) "
        "takes off the path. SnapStart is not on by default (its price, below).",
        "",
        *cold_wake.section(source, with_pyc, configured, GB_SECOND_USD, REQUEST_USD),
        "",
        "**Levers**, each measured here in the same run (cold first message on the model, at "
        "the configured memory):",
        "",
        "| layout | source only | with bytecode |",
        "|---|---:|---:|",
        *lever_rows(layouts, configured),
        "",
        *assumptions(),
        "",
        "**Lambda cost of the six answered steps, per month** (30 days; arm64 us-east-1: "
        f"${GB_SECOND_USD:.10f} per GB-second, $0.20 per million requests, "
        "[Lambda pricing](https://aws.amazon.com/lambda/pricing/); INIT billed like the "
        "invocation; warm duration = warm CPU / share + AWS calls x RTT + Bedrock wait, with "
        f"Bedrock assumed at {BEDROCK_WAIT_S['Retrieve']} s for the embedding and "
        f"{BEDROCK_WAIT_S['Invoke']} s for Converse; at 300 messages a day every message is "
        "taken as cold, at 100,000 none; bytecode; free tier ignored):",
        "",
        "| memory | 300 messages/day | 100,000 messages/day |",
        "|---|---:|---:|",
    ]
    for label, memory in (
        ("256 MB everywhere", at_256),
        ("1,024 MB everywhere", {s.state: 1024 for s in STAGES}),
        ("1,769 MB everywhere", {s.state: 1769 for s in STAGES}),
        ("as configured (stages.py)", configured),
    ):
        low = monthly_cost(with_pyc, memory, 300, 1.0)
        high = monthly_cost(with_pyc, memory, 100_000, 0.0)
        lines.append(f"| {label} | ${low:.2f} | ${high:.2f} |")
    cache, restore = snap_start_cost(configured, 300)
    conf = Settings()
    typical = pricing.actual_micros(conf, TYPICAL_USAGE, 20) / 1_000_000
    lines += [
        "",
        f"At the default daily ceiling (${conf.daily_ceiling_usd}) the stack answers at most "
        f"{conf.daily_ceiling_usd / Decimal(str(typical)):.0f} typical messages a day (about "
        f"${typical:.4f} each: 2,500 input and 250 output tokens), so the 300 column is the one "
        f"that applies; 100,000 a day needs a ceiling near ${100_000 * typical:,.0f} a day, "
        f"when the model's own bill (${100_000 * typical * 30:,.0f} a month) dwarfs any of these.",
        "",
        "**SnapStart** (`snap_start` in cdk.json `chatguard/ops`, off by default): Lambda "
        "snapshots each step after INIT and restores new environments from it, so the import "
        "CPU above leaves the cold path "
        "([SnapStart](https://docs.aws.amazon.com/lambda/latest/dg/snapstart.html): Python "
        "3.12 and later, published versions only, so the workflow then invokes a `live` alias "
        "of each step's current version). For Python it is billed: a snapshot cache of "
        f"${SNAPSTART_CACHE_GB_SECOND_USD:.10f} per GB-second for each active version and "
        f"${SNAPSTART_RESTORE_GB_USD:.10f} per GB restored (us-east-1). For this stack's seven "
        f"steps at the configured memory that is **${cache:.2f} a month** of cache, plus "
        f"${restore:.2f} a month of restores at 300 cold messages a day: far above the "
        "Lambda cost itself and above the default monthly model budget, hence off. With it "
        "on, anything random drawn at INIT is shared by every restored environment (the "
        "retry jitter should come from an unseeded source at invocation time).",
    ]
    return "\n".join(lines)


def assumptions() -> list[str]:
    """The model's figures that no AWS page gives, each with what `chatguard doctor --cold`
    measures on the deployed stack in its place (docs/operating.md, "Cold check")."""
    rows = [
        (f"START = {START_S * 1000:.0f} ms per cold step (sandbox, runtime start)",
         "each step's `Init Duration` (REPORT line) against the model's INIT"),
        ("this machine's CPU seconds stand for Graviton's at the same vCPU share, and INIT "
         "gets no more CPU than the memory share",
         "each step's `Init Duration` against the model's INIT"),
        ("the runtime's botocore is >= "
         + ".".join(map(str, runtime_sdk.RUNTIME_BOTOCORE_FLOOR))
         + " and carries bytecode (the bench gives its stand-in bytecode)",
         "the gate steps' `Init Duration` (botocore compiled at INIT would add about "
         f"{vendored_gap():.0f} ms each); synthesis refuses a step whose calls need newer"),
        (f"RTT = {RTT_S * 1000:.0f} ms per AWS call in the Region",
         "each step's `Duration` against its modelled first invocation"),
        (f"TRANSITION = {TRANSITION_S * 1000:.0f} ms per state entered",
         "the whole message's time against the sum of the steps' INIT and `Duration`"),
        (f"Titan's query embedding takes {cold_model.EMBEDDING_WAIT_S * 1000:.0f} ms "
         "(budget check only)", "S4's `Duration`"),
        cold_wake.assumption_row(),
    ]  # fmt: skip
    return [
        "**Assumptions** (no AWS page gives these figures; `chatguard doctor --cold` measures "
        "the deployed stack's in their place):",
        "",
        "| assumed | measured in its place by `doctor --cold` |",
        "|---|---|",
        *(f"| {assumed} | {measured} |" for assumed, measured in rows),
    ]


def vendored_gap() -> float:
    """Median extra import CPU (ms) of a gate step compiling its own botocore (last run)."""
    layouts = json.loads(SAVED.read_text(encoding="utf-8"))["layouts"] if SAVED.exists() else {}
    if not layouts:
        return 0.0
    gaps = [
        layouts["vendored"][s]["source"]["import"] - layouts["shipped"][s]["source"]["import"]
        for s in ("OriginVerify", "Quota", "CostGate", "Reconcile")
    ]
    return statistics.median(gaps) * 1000


LEVERS = {
    "vendored": "every step ships its own botocore (before)",
    "shipped": "the runtime's botocore for every step but S5 (shipped)",
}


def lever_rows(layouts: dict[str, Figures], memory: dict[str, int]) -> list[str]:
    rows = []
    for layout, label in LEVERS.items():
        figures = layouts[layout]
        source = {state: modes["source"] for state, modes in figures.items()}
        pyc = {state: modes["bytecode"] for state, modes in figures.items()}
        s, b = cold_message(source, memory), cold_message(pyc, memory)
        rows.append(f"| {label} | {s:.2f} s | {b:.2f} s |")
    return rows


def snap_start_cost(memory: dict[str, int], cold_per_day: int) -> tuple[float, float]:
    """Monthly SnapStart cache (all seven steps, one version each) and restore charges."""
    gb_all = sum(memory.values()) / 1024
    cache = gb_all * 30 * 86_400 * SNAPSTART_CACHE_GB_SECOND_USD
    gb_answered = sum(memory[s] for s in ANSWERED) / 1024
    restore = cold_per_day * 30 * gb_answered * SNAPSTART_RESTORE_GB_USD
    return cache, restore


def bedrock_bound() -> int:
    s = Settings()
    return s.bedrock_connect_timeout_seconds + s.bedrock_read_timeout_seconds


LAYOUTS = ("shipped", "vendored")


def local_model_load_cpu() -> float:
    """CPU seconds of a fresh process importing and loading the local model (checksums
    included): what S7's INIT adds when it ranks with it (infra/worst_chains.py)."""
    from tests.bench.local_model import load_seconds  # numpy and the model: only here

    return load_seconds(RUNS)[0]


def save_model(layouts: dict[str, Figures], start_cpu: float, model_cpu: float) -> None:
    """What infra/cold_model.py reads: the shipped layout's figures, and where they came from
    (with the local model's load, which S7, and S4 with the local embedder, run at INIT)."""
    model = {
        "measured_by": "make bench-cold",
        "date": time.strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "runs": RUNS,
        "start_cpu": start_cpu,
        "cpu": layouts["shipped"],
        "vendored_sdk_cpu": layouts["vendored"],
        "local_model_load_cpu": model_cpu,
    }
    text = json.dumps(model, indent=1, sort_keys=True) + "\n"
    cold_model.MODEL_FILE.write_text(text, encoding="utf-8")


def main() -> None:
    # BENCH_COLD_REUSE=1 re-renders the last measurement (after a memory or timeout change).
    if os.environ.get("BENCH_COLD_REUSE") and SAVED.exists():
        saved = json.loads(SAVED.read_text(encoding="utf-8"))
        layouts, start_cpu = saved["layouts"], saved["start_cpu"]
        load = float(saved.get("load", os.getloadavg()[0]))
    else:
        work = Path(tempfile.mkdtemp(prefix="chatguard-cold-"))
        try:
            layouts = measure(work, LAYOUTS)
            start_cpu = interpreter_start()
            model_cpu = local_model_load_cpu()
            load = os.getloadavg()[0]  # when the measurement finished
        finally:
            shutil.rmtree(work, ignore_errors=True)
        SAVED.parent.mkdir(parents=True, exist_ok=True)
        saved_run = {"layouts": layouts, "start_cpu": start_cpu, "load": load}
        saved_run["model_cpu"] = model_cpu
        SAVED.write_text(json.dumps(saved_run), encoding="utf-8")
        # A re-render keeps the figures as they were measured.
        save_model(layouts, start_cpu, model_cpu)
    body = render(layouts, start_cpu, load)
    print(body)
    report.write_section("cold", "Cold path", body)


if __name__ == "__main__":
    main()
