"""`make bench-pipeline`: one message through the local engine, step by step.

Measures, in one run:

- latency per message through the real ASL on moto's engine with the real handlers
  (p50 / p95, warm), and the median of each step; waiting on the execution object
  versus polling DescribeExecution over the API, interleaved;
- the AWS calls each step makes before the model call, counted by botocore ``before-call``
  hooks registered on the handlers' own clients (cold = first message of a fresh
  container, warm = later ones); goal: at most 2 DynamoDB calls before S4, no SSM call
  once warm;
- the cold import of each step module in a fresh interpreter, beside ``import boto3``
  alone; goal: gate steps import no numpy, and module + boto3 <= 1.3x boto3.

Prints a table and replaces only the `bench:pipeline` section of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tests.bench import report

ROOT = Path(__file__).resolve().parents[2]
DOC = report.DOC
START, END = report.markers("pipeline")
MESSAGES = 200
INTERLEAVED = 60
IMPORT_RUNS = 7
BEFORE_MODEL = ("OriginVerify", "Quota", "CostGate", "Retrieve")
QUESTIONS = (
    "How does the WAF rate-based rule protect the chat?",
    "What happens when the daily budget is spent?",
    "Why is the visitor hashed with a salt?",
    "What does the reservation do before the model call?",
)


class CallCounter:
    """botocore before-call hook: counts (step, service, operation) of the handlers' calls."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, str]] = Counter()

    def __call__(self, model: Any, **_kwargs: Any) -> None:
        from local.engine.tracing import recorder

        step = recorder().current_state() or "-"
        self.counts[step, model.service_model.endpoint_prefix, model.name] += 1

    def attach(self, *clients: Any) -> None:
        for client in clients:
            client.meta.events.register("before-call", self)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_engine() -> dict[str, Any]:
    from local.commands.render import quiet_logs
    from local.engine.runtime import LocalRuntime
    from steps.lib.runtime import clients
    from steps.lib.runtime.settings import Settings

    settings = Settings().replace(
        model_backend="offline", daily_ceiling_usd="1000", monthly_ceiling_usd="1000"
    )
    hooks = CallCounter()
    with quiet_logs(show_libraries=False, show_steps=False), LocalRuntime(settings) as runtime:
        hooks.attach(clients.dynamodb(), clients.ssm())
        cold = runtime.send({"message": QUESTIONS[0]}, ip="198.51.100.1")
        cold_calls = Counter(hooks.counts)
        hooks.counts.clear()
        totals: list[float] = []
        steps: dict[str, list[float]] = defaultdict(list)
        for i in range(MESSAGES):
            outcome = runtime.send({"message": QUESTIONS[i % 4]}, ip=_ip(i))
            assert outcome.status == 200, outcome.body
            totals.append(outcome.ms)
            for step in outcome.steps:
                steps[step.state].append(step.ms)
        warm_calls = Counter(hooks.counts)
        waits: dict[str, list[float]] = {"execution object": [], "DescribeExecution polling": []}
        for i in range(INTERLEAVED):
            for label, over_api in (
                ("execution object", False),
                ("DescribeExecution polling", True),
            ):
                outcome = runtime.send(
                    {"message": QUESTIONS[i % 4]}, ip=_ip(MESSAGES + i), over_api=over_api
                )
                waits[label].append(outcome.ms)
    return {
        "cold": cold,
        "cold_calls": cold_calls,
        "warm_calls": warm_calls,
        "totals": totals,
        "steps": steps,
        "waits": waits,
    }


def _ip(i: int) -> str:
    """A distinct visitor per message (one /64 of the documentation range each)."""
    return f"2001:db8:{i:x}::1"


IMPORT_PROBE = """
import json, sys, time
wall, cpu = time.perf_counter(), time.process_time()
import {module}
out = {{"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
       "numpy": "numpy" in sys.modules, "boto3": "boto3" in sys.modules}}
print(json.dumps(out))
"""


def _import_once(module: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "0"}
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE.format(module=module)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return data


def bench_imports() -> dict[str, dict[str, Any]]:
    """Cold import medians; the modules are measured interleaved, round by round."""
    from steps.lib.runtime.stages import STAGES

    modules = [
        "boto3",
        *(stage.module for stage in STAGES),
        *(f"{stage.module}, boto3" for stage in STAGES),
    ]
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for module in modules:  # one warm-up each: later runs measure imports, not disk reads
        _import_once(module)
    for _ in range(IMPORT_RUNS):
        for module in modules:
            runs[module].append(_import_once(module))
    return {
        module: {
            "cpu": statistics.median(r["cpu"] for r in results) * 1000,
            "wall": statistics.median(r["wall"] for r in results) * 1000,
            "numpy": any(r["numpy"] for r in results),
            "boto3": any(r["boto3"] for r in results),
        }
        for module, results in runs.items()
    }


def _calls_table(
    cold: Counter[tuple[str, str, str]], warm: Counter[tuple[str, str, str]], messages: int
) -> list[str]:
    lines = ["| step | cold message | warm, per message |", "|---|---|---|"]
    for step in (*BEFORE_MODEL, "Invoke", "Reconcile"):
        lines.append(f"| {step} | {_calls(cold, step, 1)} | {_calls(warm, step, messages)} |")
    return lines


def _calls(counts: Counter[tuple[str, str, str]], step: str, per: int) -> str:
    chosen = {(svc, op): n for (s, svc, op), n in counts.items() if s == step}
    if not chosen:
        return "none"
    return ", ".join(f"{svc}.{op} x{n / per:g}" for (svc, op), n in sorted(chosen.items()))


def _before_model(counts: Counter[tuple[str, str, str]], service: str, per: int) -> float:
    return (
        sum(n for (s, svc, _), n in counts.items() if s in BEFORE_MODEL[:3] and svc == service)
        / per
    )


def render(engine: dict[str, Any], imports: dict[str, dict[str, Any]]) -> str:
    totals, steps, waits = engine["totals"], engine["steps"], engine["waits"]
    load = os.getloadavg()[0]
    lines = [
        f"Measured by `make bench-pipeline`: {platform.machine()}, {os.cpu_count()} CPUs "
        f"(load average {load:.1f} when it finished), Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}. The local engine is moto's Step Functions engine "
        "running the real chat.asl.json with every Lambda task dispatched in-process to the "
        "real handlers; DynamoDB and SSM are moto, the model is the offline extractive "
        "stand-in (no Bedrock latency is included). Wall-clock times.",
        "",
        f"**Per message**, {len(totals)} warm messages (one visitor each, ceilings out of the "
        f"way): p50 **{statistics.median(totals):.1f} ms**, "
        f"p95 **{_percentile(totals, 0.95):.1f} ms**; the first message of a fresh runtime "
        f"took {engine['cold'].ms:.1f} ms (imports, secrets, the index).",
        "",
        "| step | p50 ms | p95 ms |",
        "|---|---:|---:|",
    ]
    for state, values in steps.items():
        if values and any(v > 0 for v in values):
            lines.append(
                f"| {state} | {statistics.median(values):.2f} | {_percentile(values, 0.95):.2f} |"
            )
    lines += [
        "",
        f"**Waiting for the execution** ({INTERLEAVED} messages each, interleaved): "
        + "; ".join(
            f"{label}: p50 {statistics.median(v):.1f} ms, p95 {_percentile(v, 0.95):.1f} ms"
            for label, v in waits.items()
        )
        + ". The runtime waits on the execution object (moto 5.2 has no StartSyncExecution).",
        "",
        "**AWS calls per step**, counted by botocore `before-call` hooks on the handlers' own "
        "clients:",
        "",
        *_calls_table(engine["cold_calls"], engine["warm_calls"], len(totals)),
        "",
        f"Before S4 (warm): {_before_model(engine['warm_calls'], 'dynamodb', len(totals)):g} "
        f"DynamoDB calls (goal <= 2), {_before_model(engine['warm_calls'], 'ssm', len(totals)):g}"
        " SSM calls (goal 0).",
        "",
        _imports_text(imports),
    ]
    return "\n".join(lines)


def _imports_text(imports: dict[str, dict[str, Any]]) -> str:
    from steps.lib.runtime.stages import STAGES

    base = imports["boto3"]
    lines = [
        f"**Cold import** in a fresh interpreter, median of {IMPORT_RUNS} (CPU ms, wall in "
        f"brackets); `import boto3` alone: **{base['cpu']:.1f} ms** ({base['wall']:.1f}). "
        "A step imports boto3 lazily, so its cold start pays module + boto3 before the first "
        "AWS call; the ratio is that sum over boto3 alone (goal for gate steps: <= 1.3x, no "
        "numpy).",
        "",
        "| step | module | numpy at import? | module + boto3 | ratio to boto3 |",
        "|---|---:|:---:|---:|---:|",
    ]
    for stage in STAGES:
        alone, both = imports[stage.module], imports[f"{stage.module}, boto3"]
        lines.append(
            f"| {stage.key} {stage.state} | {alone['cpu']:.1f} ({alone['wall']:.1f}) | "
            f"{'yes' if alone['numpy'] else 'no'} | {both['cpu']:.1f} ({both['wall']:.1f}) | "
            f"{both['cpu'] / base['cpu']:.2f}x |"
        )
    return "\n".join(lines)


def write_section(body: str) -> None:
    report.write_section("pipeline", "Pipeline", body, DOC)


def main() -> int:
    engine = bench_engine()
    imports = bench_imports()
    body = render(engine, imports)
    print(body)
    write_section(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
