from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from steps.lib.providers.hashing_embedder import HashingEmbedder
from steps.lib.text.tokens import count_tokens, terms, words

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = [
    "text/tokens",
    "providers/hashing_embedder",
    "grounding/knowledge",
    "grounding/retrieval",
]


def test_words_keep_acronyms_and_lower_case() -> None:
    assert words("The WAF stops DDoS; OWASP's S3 list, don\u2019t panic") == [
        "the", "waf", "stops", "ddos", "owasp's", "s3", "list", "don't", "panic",
    ]  # fmt: skip


def test_terms_drop_stop_words_and_fold_plurals_and_possessives() -> None:
    assert terms("What are the OWASP's policies for attacks and passkeys?") == [
        "owasp", "policy", "attack", "passkey",
    ]  # fmt: skip
    assert terms("DNS NTP SSRF access") == ["dns", "ntp", "ssrf", "access"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("the", 1), ("reconciliation", 3), ("WAF, DDoS.", 4), ("a  b\nc", 3)],
)
def test_count_tokens_is_a_documented_deterministic_rule(text: str, expected: int) -> None:
    assert count_tokens(text) == expected


def test_count_tokens_lands_near_1_3_tokens_per_english_word() -> None:
    prose = (ROOT / "examples" / "site" / "posts" / "waf-rate-limiting.md").read_text("utf-8")
    ratio = count_tokens(prose) / len(prose.split())
    assert 1.1 <= ratio <= 1.6


def test_tokens_module_does_not_import_numpy() -> None:
    code = "import sys, steps.lib.text.tokens; sys.exit('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


@pytest.mark.parametrize("module", RUNTIME)
def test_runtime_library_imports_only_numpy_and_the_stdlib(module: str) -> None:
    tree = ast.parse((ROOT / "steps" / "lib" / f"{module}.py").read_text("utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
    }
    third_party = imported - set(sys.stdlib_module_names)
    assert third_party <= ({"numpy"} if module != "text/tokens" else set())


def test_hashing_embedder_rows_are_unit_length_and_deterministic() -> None:
    texts = ["WAF rate-based rules", "DMARC reports", ""]
    first = HashingEmbedder().embed(texts)
    again = HashingEmbedder().embed(texts)
    assert first.shape == (3, 1024) and first.dtype == np.float32
    assert np.array_equal(first, again)
    np.testing.assert_allclose(np.linalg.norm(first[:2], axis=1), 1.0, rtol=1e-5)
    assert not first[2].any()


def test_hashing_embedder_puts_shared_words_closer_than_unrelated_text() -> None:
    query, near, far = HashingEmbedder(256).embed(
        ["rate limit for the chat endpoint", "rate limiting an endpoint", "DMARC mail reports"]
    )
    assert float(query @ near) > 0.3 > float(query @ far)


def test_hashing_embedder_id_names_it_as_the_offline_stand_in() -> None:
    assert HashingEmbedder.id == "hashing-v2"
    with pytest.raises(ValueError):
        HashingEmbedder(4)
