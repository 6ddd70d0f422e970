"""`chatguard chat`, `chatguard demo` and `chatguard serve` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from chatguard.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def sample_index(knowledge_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATGUARD_KNOWLEDGE_DIR", str(knowledge_dir))


def test_chat_json_prints_status_body_and_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["chat", "What is a rate-based rule?", "--page", "/posts/waf-rate-limiting", "--json"]
    )
    printed = json.loads(capsys.readouterr().out)
    assert code == 0 and printed["status"] == 200
    assert printed["body"]["reply"] and printed["body"]["sig"]
    states = [step["state"] for step in printed["steps"]]
    assert states[:6] == ["OriginVerify", "Quota", "CostGate", "Retrieve", "Invoke", "Reconcile"]
    assert all({"state", "decision", "ms"} <= set(step) for step in printed["steps"])


def test_chat_prints_the_reply_and_a_step_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "How do budgets work?"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("HTTP 200")
    assert "state" in out and "decision" in out and "CostGate" in out and "reserved" in out


def test_chat_refuses_a_bad_message_like_the_edge(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "bad \u0007 bell", "--json"]) == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed["status"] == 400 and "control character" in printed["body"]["error"]
    assert printed["steps"] == []


@pytest.mark.slow
def test_demo_shows_each_layer_refusing_in_turn(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    scenes = out.split("\n== ")[1:]
    assert len(scenes) == 5
    assert all(scene.splitlines()[2].startswith('  asks: "') for scene in scenes)
    assert "micro-USD" not in out and "spend today: $" in out  # dollars throughout
    heads = [scene.splitlines()[4] for scene in scenes]
    assert heads == [
        "HTTP 403",
        "HTTP 200",
        "HTTP 200 (limited)",
        "HTTP 200 (degraded)",
        "HTTP 503",
    ]
    assert "OriginRefused" in scenes[0] and "QuotaRefused" in scenes[2]
    assert "Degraded" in scenes[3] and "FailClosed" in scenes[4]
    assert "model calls: 0" in scenes[0] and "model calls: 0" in scenes[4]


@pytest.mark.slow
def test_serve_prints_its_url_and_answers_chat(knowledge_dir: Path) -> None:
    env = {**os.environ, "CHATGUARD_KNOWLEDGE_DIR": str(knowledge_dir)}
    server = subprocess.Popen(
        [sys.executable, "-m", "chatguard", "serve", "--port", "0", "--quiet"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert "http://127.0.0.1:" in line
        url = line.split()[line.split().index("on") + 1]
        request = urllib.request.Request(
            url + "/chat", data=json.dumps({"message": "What is a rate-based rule?"}).encode(),
            headers={"Content-Type": "application/json"}, method="POST",
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=60) as response:
            body = json.loads(response.read())
        assert response.status == 200 and body["reply"] and body["sig"]
    finally:
        server.terminate()
        server.wait(timeout=30)
