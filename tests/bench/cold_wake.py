"""bench-cold's section on the wake: a quiet first message with S4-S6 started while the gate
runs (statemachine/chat.asl.json, WakeLaterSteps; infra/cold_model.py, wake_timeline_of).

Rendered from the same run's CPU figures as the rest of the section; no figure here is
measured on AWS. The delivery delay is an assumption (doctor --cold measures it in its
place), and each woken step's margin says how much later the delivery could be before the
wake misses and that step is cold again.
"""

from __future__ import annotations

from collections.abc import Mapping

from infra import cold_model

Figures = Mapping[str, Mapping[str, float]]

TARGETS = {"source": 2.5, "bytecode": 1.5}
LAMBDA_PRICING = "[Lambda pricing](https://aws.amazon.com/lambda/pricing/)"
SCALING = "[Lambda scaling](https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html)"
ASYNC = (
    "[asynchronous invocation](https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html)"
)
SFN_LAMBDA = (
    "[Step Functions and Lambda]"
    "(https://docs.aws.amazon.com/step-functions/latest/dg/connect-lambda.html)"
)


def figures_line(source: Figures, with_pyc: Figures, memory: Mapping[str, int]) -> str:
    """The cold first message with and without the wake, against the issue's goals."""
    parts = []
    for mode, figures in (("source", source), ("bytecode", with_pyc)):
        cold = cold_model.cold_message_of(figures, memory)
        woken = cold_model.woken_message_of(figures, memory)
        verdict = "met" if woken <= TARGETS[mode] else "not met"
        parts.append(
            f"{mode}: **{woken:.2f} s** with the wake, {cold:.2f} s without "
            f"(goal <= {TARGETS[mode]} s: {verdict})"
        )
    return "Cold first message after a quiet spell, " + "; ".join(parts) + "."


def section(
    source: Figures,
    with_pyc: Figures,
    memory: Mapping[str, int],
    gb_second_usd: float,
    request_usd: float,
) -> list[str]:
    timelines = {
        "source": cold_model.wake_timeline_of(source, memory),
        "bytecode": cold_model.wake_timeline_of(with_pyc, memory),
    }
    delivery_ms = cold_model.WAKE_DELIVERY_S * 1000
    lines = [
        "**The wake** (built): when S1 verifies a request and finds the site quiet (its "
        "environment new, or no verified request in it for "
        f'{_quiet_minutes()} minutes; Lambda keeps an idle environment for "a '
        'non-deterministic period", so the threshold is ours), the workflow invokes S4, S5 '
        f"and S6 with `InvocationType: Event` ({SFN_LAMBDA}) right after S1, so their INIT "
        "runs while S2 and S3 do. Each answers the wake payload at once and does nothing "
        "else. An environment runs one request at a time, initialising included; a call "
        f"that comes while the woken one is still busy gets a new environment ({SCALING}): "
        "that step is cold, as without the wake, and one more INIT is billed. The budget and "
        "the timeout proof keep the all-cold case.",
        "",
        "    woken step warm  if  wake sent + DELIVERY + START + INIT <= its real call's arrival",
        "    margin           =  arrival - (wake sent + DELIVERY + START + INIT)",
        "",
        f"DELIVERY = {delivery_ms:.0f} ms from the asynchronous Invoke to the event reaching "
        f"the function (Lambda queues it first, {ASYNC}; AWS gives no figure: assumption). "
        "A negative margin means the wake misses and the step is counted cold.",
        "",
        "| woken step | real call arrives s, source | INIT s, source | margin ms, source "
        "| arrives s, bytecode | INIT s, bytecode | margin ms, bytecode |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for state in cold_model.WOKEN:
        s, b = timelines["source"][state], timelines["bytecode"][state]
        lines.append(
            f"| {state} | {s['arrives']:.2f} | {s['init']:.2f} | {s['margin'] * 1000:+.0f} "
            f"| {b['arrives']:.2f} | {b['init']:.2f} | {b['margin'] * 1000:+.0f} |"
        )
    lines += ["", figures_line(source, with_pyc, memory), ""]
    lines += cost_lines(with_pyc, memory, gb_second_usd, request_usd)
    return lines


def cost_lines(
    with_pyc: Figures, memory: Mapping[str, int], gb_second_usd: float, request_usd: float
) -> list[str]:
    """What the wake adds to the Lambda bill: three requests and three millisecond
    invocations per quiet message (none when S1 is warm); when it loses the race, one more
    INIT per step (INIT is billed like the invocation, Lambda pricing)."""
    per_day = 300
    gb = {s: memory[s] / 1024 for s in cold_model.WOKEN}
    answer = sum(gb[s] * 0.001 * gb_second_usd + request_usd for s in cold_model.WOKEN)
    lost = sum(
        gb[s] * cold_model.init_of(with_pyc[s], memory[s]) * gb_second_usd for s in cold_model.WOKEN
    )
    month = per_day * 30
    return [
        f"Cost of the wake ({LAMBDA_PRICING}): 3 more invocations per quiet message (none "
        "while S1 is warm: a busy site wakes nothing), each billed 1 ms at its memory: "
        f"${answer:.7f} a quiet message, ${answer * month:.2f} a month at {per_day} quiet "
        "messages a day. When the wake wins, the INIT it pays is the one the real call "
        "would have paid. When it loses the race, each step's INIT is paid twice: "
        f"${lost:.7f} more a message, ${lost * month:.2f} a month if every one of "
        f"{per_day} a day lost. Idle cost is unchanged: nothing runs without a message.",
    ]


def assumption_row() -> tuple[str, str]:
    return (
        f"DELIVERY = {cold_model.WAKE_DELIVERY_S * 1000:.0f} ms from the wake's asynchronous "
        "Invoke to the event reaching S4-S6",
        "for each of S4-S6, whether the real call was served by the woken environment, and "
        "the time from S1's end to the wake's start (DELIVERY plus the states between)",
    )


def _quiet_minutes() -> int:
    from steps.lib.runtime import quiet

    return quiet.QUIET_AFTER_SECONDS // 60
