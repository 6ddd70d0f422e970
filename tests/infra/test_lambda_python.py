"""The bytecode a Debian 12 machine ships, compiled by the CPython 3.13 `make lambda-python`
fetches: real interpreter, real steps/, no stand-in for either.

The test fetches the interpreter itself when it is not there yet (what `make lambda-python`
does: about 20 MB from deb.debian.org, once per machine, into the user's cache), so a clean
clone's `make test` needs nothing more. The cache folder is read when this module is imported,
during collection: tests/conftest.py points CHATGUARD_CACHE_DIR at a per-session folder only
when the first test starts, and the interpreter belongs in the user's cache, fetched once.

"Used without recompiling" is measured inside the 3.13 itself: every module's code is taken
through ``SourceFileLoader.get_code`` (what ``import`` calls) in a read-only copy of the bundle
with PYTHONDONTWRITEBYTECODE, counting ``source_to_code``, which runs only when no usable .pyc
is found. The naive variant on the same harness: timestamp-checked .pycs (compileall's
default) after the zip has given every file one normalised timestamp, as an asset zip does,
are all recompiled, at every cold start, since /var/task is read-only.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from infra import bundling
from infra import lambda_python as fetched_python

USER_CACHE = fetched_python.cache_dir()  # read at collection: see the module doc
NORMALISED = 315_532_800  # 1980-01-01T00:00:00Z, the earliest timestamp a zip entry holds

# Runs under the fetched 3.13: every module of the bundle through the import system's own
# loader, counting the compilations from source.
COUNT_COMPILES = """
import importlib.machinery as m, json, pathlib, sys
compiled = []
original = m.SourceFileLoader.source_to_code
def counting(self, data, path, **kw):
    compiled.append(str(path))
    return original(self, data, path, **kw)
m.SourceFileLoader.source_to_code = counting
root = pathlib.Path(sys.argv[1])
modules = sorted(root.rglob("*.py"))
for path in modules:
    name = ".".join(path.relative_to(root).with_suffix("").parts)
    code = m.SourceFileLoader(name, str(path)).get_code(name)
    assert code is not None and code.co_filename == str(path)
print(json.dumps({"modules": len(modules), "compiled": len(compiled), "version": sys.version}))
"""


@pytest.fixture(scope="module")
def trixie_python() -> bundling.Interpreter:
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip(f"no apt on this machine: {fetched_python.HINT}")
    if USER_CACHE is None:
        pytest.skip("the project's cache is turned off (CHATGUARD_CACHE_DIR is empty)")
    fetched_python.ensure(USER_CACHE)
    with pytest.MonkeyPatch.context() as patch:
        # bundling.py's own search, with nothing ahead of the fetched interpreter: no
        # CHATGUARD_LAMBDA_PYTHON, no python3.13 on PATH (an empty PATH).
        patch.setenv("CHATGUARD_CACHE_DIR", str(USER_CACHE))
        patch.delenv("CHATGUARD_LAMBDA_PYTHON", raising=False)
        patch.setenv("PATH", "")
        bundling._interpreter_for.cache_clear()
        found = bundling.lambda_interpreter()
        bundling._interpreter_for.cache_clear()
    assert found is not None
    return found


def test_bundling_finds_the_fetched_interpreter_and_names_it(trixie_python):
    assert trixie_python.version.startswith("3.13.")
    assert trixie_python.origin == (
        f"Debian trixie's CPython {trixie_python.version} fetched by make lambda-python"
    )
    run = subprocess.run([trixie_python.path, "--version"], capture_output=True, text=True)
    assert run.stdout.strip() == f"Python {trixie_python.version}"


def test_fetching_again_is_a_no_op_that_finds_the_same_interpreter(trixie_python):
    wrapper, version, fetched_now = fetched_python.ensure(USER_CACHE)
    assert (wrapper, version, fetched_now) == (
        trixie_python.path,
        f"Python {trixie_python.version}",
        False,
    )


def test_every_module_of_the_real_bundle_loads_under_313_without_recompiling(
    trixie_python, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(bundling, "lambda_interpreter", lambda: trixie_python)
    bundling._note_bytecode.cache_clear()
    out = tmp_path / "asset"
    bundling.build_asset(bundling.GATE_ASSET, out)  # the gate's asset: steps/ and no wheel
    said = capsys.readouterr().err
    assert f"bytecode compiled by Python {trixie_python.version} (Debian trixie's" in said

    modules = sorted(out.rglob("*.py"))
    assert len(modules) > 30  # the walk sees steps/, not an empty folder
    for module in modules:
        pyc = module.parent / "__pycache__" / f"{module.stem}.cpython-313.pyc"
        assert pyc.is_file(), module.relative_to(out)
        assert int.from_bytes(pyc.read_bytes()[4:8], "little") == 0b01  # unchecked hash

    result = _load_read_only(trixie_python.path, out, tmp_path / "ro")
    assert result["version"].startswith(trixie_python.version)
    assert (result["modules"], result["compiled"]) == (len(modules), 0)


def test_naive_timestamp_bytecode_is_recompiled_after_the_zip_normalises_mtimes(
    trixie_python, tmp_path
):
    out = tmp_path / "asset"
    shutil.copytree(bundling.STEPS_DIR, out / "steps", ignore=bundling._SKIPPED)
    command = [trixie_python.path, "-m", "compileall", "-q", str(out)]  # timestamp mode
    subprocess.run(command, check=True, capture_output=True)
    modules = sorted(out.rglob("*.py"))
    assert all((m.parent / "__pycache__" / f"{m.stem}.cpython-313.pyc").is_file() for m in modules)

    result = _load_read_only(trixie_python.path, out, tmp_path / "ro")
    assert (result["modules"], result["compiled"]) == (len(modules), len(modules))


def _load_read_only(python: str, bundle: Path, copy: Path) -> dict[str, object]:
    """Every module of a read-only copy of ``bundle``, with every file's timestamp set to
    the zip's normalised one, taken through the 3.13's loader."""
    shutil.copytree(bundle, copy)
    for path in sorted(copy.rglob("*"), reverse=True):  # files before their folders
        os.utime(path, (NORMALISED, NORMALISED))
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    env = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": ""}
    try:
        run = subprocess.run(
            [python, "-c", COUNT_COMPILES, str(copy)], capture_output=True, text=True, env=env
        )
        assert run.returncode == 0, run.stderr[-2000:]
        loaded: dict[str, object] = json.loads(run.stdout)
    finally:
        for path in copy.rglob("*"):
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
        copy.chmod(copy.stat().st_mode | stat.S_IWUSR)
    return loaded


def test_apt_refuses_trixie_signed_by_a_key_it_does_not_hold_and_nothing_is_kept(
    tmp_path, monkeypatch
):
    """apt's signature check is what stands between the archive and our bytecode: with a
    keyring that lacks Debian's key, `update` fails and no interpreter is left behind (the
    naive variant, `[trusted=yes]` or --allow-unauthenticated, would have gone on)."""
    if shutil.which("apt-get") is None:
        pytest.skip(f"no apt on this machine: {fetched_python.HINT}")
    empty = tmp_path / "empty.gpg"
    empty.write_bytes(b"")
    monkeypatch.setattr(
        fetched_python,
        "SOURCE",
        f"deb [signed-by={empty}] http://deb.debian.org/debian trixie main",
    )
    with pytest.raises(fetched_python.FetchError, match=r"^apt-get update .* failed: "):
        fetched_python.ensure(tmp_path / "cache")
    assert fetched_python.fetched(tmp_path / "cache") is None
    assert list((tmp_path / "cache" / "lambda-python").iterdir()) == []  # staging removed


def test_without_apt_make_lambda_python_says_what_to_do_instead_and_succeeds(monkeypatch, capsys):
    """macOS and other machines without apt: one line naming the alternatives, exit 0, so
    `make synth` goes on and ships source only (and says so)."""
    if sys.version_info[:2] == (3, 13):
        pytest.skip("this interpreter is itself a 3.13: nothing to fetch")
    monkeypatch.delenv("CHATGUARD_LAMBDA_PYTHON", raising=False)
    monkeypatch.setenv("PATH", "")  # no apt-get, no dpkg-deb, no python3.13
    assert fetched_python.main() == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert "no apt here" in line and "`brew install python@3.13`" in line
    assert "CHATGUARD_LAMBDA_PYTHON" in line
