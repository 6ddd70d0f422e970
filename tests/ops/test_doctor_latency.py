"""doctor's latency check on a stubbed Bedrock and an injected clock (no real time): a
full-length reply under the read timeout passes, over it fails, and a reply that stopped
early is scaled to the full length before it is judged."""

from __future__ import annotations

from botocore.stub import Stubber

from ops.doctor import latency as doctor_latency
from steps.lib.runtime.settings import Settings

from . import doctor_accounts as acct

SETTINGS = Settings(model_id=acct.MODEL, max_output_tokens=512, bedrock_read_timeout_seconds=10)


def converse_answer(output_tokens: int) -> dict:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": "one\ntwo\n"}]}},
        "stopReason": "max_tokens" if output_tokens >= 512 else "end_turn",
        "usage": {
            "inputTokens": 30,
            "outputTokens": output_tokens,
            "totalTokens": 30 + output_tokens,
        },
        "metrics": {"latencyMs": 1},
    }


def run(seconds: float, output_tokens: int = 512):
    runtime = acct.client("bedrock-runtime")
    ticks = iter([100.0, 100.0 + seconds])
    with Stubber(runtime) as stub:
        stub.add_response(
            "converse",
            converse_answer(output_tokens),
            {
                "modelId": acct.MODEL,
                "messages": [{"role": "user", "content": [{"text": doctor_latency.LONG_ASK}]}],
                "inferenceConfig": {"maxTokens": 512},
            },
        )
        check = doctor_latency.fits_read_timeout(runtime, SETTINGS, clock=lambda: next(ticks))
        stub.assert_no_pending_responses()
    return check


def test_a_full_reply_under_the_read_timeout_passes() -> None:
    check = run(6.2)
    assert check.outcome == "PASS" and "512 tokens in 6.2 s, under the 10 s" in check.detail


def test_a_full_reply_at_or_over_the_read_timeout_fails() -> None:
    check = run(10.0)
    assert check.outcome == "FAIL" and "max_output_tokens" in check.fix


def test_a_reply_that_stopped_early_is_scaled_to_the_full_length() -> None:
    check = run(4.0, output_tokens=128)  # 4 s for 128 tokens: about 16 s for 512
    assert check.outcome == "FAIL" and "about 16.0 s for 512" in check.detail


def test_no_output_tokens_cannot_test() -> None:
    assert run(1.0, output_tokens=0).outcome == "CANNOT TEST"
