"""The operator commands against a real `chatguard serve` (a subprocess on a free port)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from chatguard.cli import main
from ops.http import request

ROOT = Path(__file__).resolve().parents[2]
VISITOR = {"CloudFront-Viewer-Address": "192.0.2.44:51000"}  # its own rate bucket and quota
STEPS = ("OriginVerify", "Quota", "CostGate", "Retrieve", "Invoke", "Reconcile")


def _start(*flags):
    return subprocess.Popen(
        [sys.executable, "-m", "chatguard", "serve", "--port", "0", "--quiet", *flags],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _url(process):
    line = process.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+", line)
    if not found:
        pytest.fail(f"server did not start: {line!r} {process.stderr.read()[-2000:]}")
    return found.group(0)


@pytest.fixture(scope="module")
def servers():
    """Two real servers started together: one for the commands (it trusts a viewer header,
    so each test's chats get their own rate bucket), and a default one for `verify`, which
    bills every answer at the worst the provider could (the money path's adversary)."""
    processes = [_start("--trust-viewer-address"), _start("--worst-case-usage")]
    try:
        yield [_url(p) for p in processes]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=20)


@pytest.fixture(scope="module")
def server(servers):
    return servers[0]


def _chat(url, message="How does the WAF rate rule work?"):
    return request("POST", url + "/chat", payload={"message": message}, headers=VISITOR)


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_trace_last_draws_every_step_and_the_aws_calls_inside_them(server, capsys):
    assert _chat(server).status == 200
    code, out, _ = _run(capsys, "trace", "last", "--local", server)
    assert code == 0 and ": 200 in" in out.splitlines()[0]
    rows = [line.split()[0] for line in out.splitlines()[1:]]
    assert [r for r in rows if r in STEPS] == list(STEPS)
    assert "dynamodb TransactWriteItems" in out and "dynamodb UpdateItem" in out
    assert "reserved (" in out and "reserved_micros=" in out and "192.0.2.44" not in out


def test_mode_off_answers_the_static_message_at_zero_cost_and_spend_shows_it(server, capsys):
    try:
        code, out, _ = _run(capsys, "mode", "off", "--local", server)
        assert code == 0 and "-> off" in out
        _, before, _ = _run(capsys, "spend", "--json", "--local", server)
        reply = _chat(server)
        assert (
            reply.status == 200
            and reply.body["degraded"] is True
            and "switched off" in reply.body["reply"]
        )
        _, after, _ = _run(capsys, "spend", "--json", "--local", server)
        before, after = json.loads(before), json.loads(after)
        assert after["mode"] == "off" and after["day_micros"] == before["day_micros"]
        assert after["settled_reservations"] == before["settled_reservations"]
    finally:
        assert _run(capsys, "mode", "normal", "--local", server)[0] == 0
    assert "sig" in _chat(server).body  # back to normal answers


def test_spend_counts_the_answers_and_shows_hashes_only(server, capsys):
    assert _chat(server).status == 200
    code, out, _ = _run(capsys, "spend", "--local", server)
    assert code == 0 and "day " in out and "settled" in out and "top visitors" in out
    assert "192.0.2.44" not in out
    report = json.loads(_run(capsys, "spend", "--json", "--local", server)[1])
    assert report["day_micros"] == report["settled_actual_micros"] > 0  # nothing left open
    assert all(len(v["visitor"]) >= 16 for v in report["top_visitors"])


def test_origin_rotation_keeps_the_edge_working_and_refuses_a_second_rotation(server, capsys):
    code, out, _ = _run(capsys, "rotate", "origin-secret", "--dry-run", "--local", server)
    assert code == 0 and "nothing was written" in out
    code, out, _ = _run(capsys, "rotate", "origin-secret", "--local", server)
    assert code == 0 and "rotated origin-secret" in out and "sha256:" in out
    assert _chat(server).status == 200  # the edge sends the new value, S1 accepts it
    code, _, err = _run(capsys, "rotate", "origin-secret", "--local", server)
    assert code == 2 and "still accepted" in err


@pytest.mark.parametrize("command", ["billing-services", "traces"])
def test_aws_only_commands_do_not_offer_local(command, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0 and "--local" not in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        main([command, "--local", "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "--local" in err


def test_verify_local_passes_against_the_real_server(servers):
    done = subprocess.run(
        [sys.executable, "-m", "chatguard", "verify", "--local", servers[1]],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("verify sends at most 3 messages")
    assert lines[-1] == "all checks passed"
    assert sum(line.startswith("PASS") for line in lines) == 14
    spend = request("GET", servers[1] + "/_admin/spend").body
    # Billed at the bound, what verify spent stays within what it said it could spend.
    assert spend["open_reservations"] == 0
    assert 0 < spend["day_micros"] <= 3 * spend["reserve_micros"]
    assert "address released" in done.stdout
    # The burst tripped the rate rule for this address; the operator is not locked out.
    reply = request("POST", servers[1] + "/chat", payload={"message": "Still there?"})
    assert reply.status == 200, reply


def test_verify_fails_against_a_server_that_trusts_a_viewer_sent_address(server, capsys):
    # The commands' server runs with --trust-viewer-address: a visitor picks its identity.
    from ops import verify

    checks = {c.name: c for c in verify.run(_target(server))}
    check = checks["viewer-sent CloudFront-Viewer-Address ignored"]
    assert not check.passed and check.detail.startswith("503")


def _target(url):
    from ops import verify

    return verify.Target(url + "/chat", url + "/_origin/chat", burst=0, burst_seconds=0.0,
                         reserve_micros=1)  # fmt: skip
