"""The step Lambdas' code asset, built on this machine: no Docker, no AWS credentials.

Each asset is the ``steps/`` package plus pinned wheels for Linux arm64 / CPython 3.13,
installed by ``pip --platform ... --only-binary=:all:`` (a wheel is a zip: nothing is
compiled, so no Lambda-like container is needed). The retrieval steps also get numpy and
the knowledge artifact of ``build/knowledge`` (``make index``).

Bytecode: the zip carries ``__pycache__/*.cpython-313.pyc`` for every module, compiled with
``--invalidation-mode unchecked-hash`` (Lambda's /var/task is read-only, so a runtime that
finds no usable .pyc recompiles the source at every cold start; a hash-based .pyc is used
whatever timestamps the zip gives the files). A .pyc only serves the Python version that
wrote it, so it is compiled by a CPython 3.13 interpreter: this one if it is 3.13, else
``CHATGUARD_LAMBDA_PYTHON``, else ``python3.13`` on PATH, else Debian trixie's CPython 3.13
that ``make lambda-python`` fetched (infra/lambda_python.py: Debian 12 has 3.11). Synthesis
says once which one compiled the bytecode and its exact version. With none of those the
asset ships source only and synthesis says so, with the hint: 3.11 bytecode would be
ignored by the 3.13 runtime, and changing the runtime to match the build machine would
lose SnapStart (Python 3.12+) and the pinned cp313 wheels.

The pip result is cached in ``build/lambda-deps/<key>``, keyed by the requirement set and
target platform, so repeated synths (tests, CI) copy files instead of downloading.
``try_bundle`` never answers "not bundled": CDK would then fall back to Docker, and a
synth that quietly needs Docker is exactly what this module exists to prevent.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_

from indexer.provenance import SiteRecord, read_record
from infra import lambda_python as fetched_python
from infra import runtime_sdk
from infra.index_check import REBUILD, BuiltIndex
from steps.lib.grounding.knowledge import ARTIFACT_FILES, DEGRADED_MATRIX_FILE, carried_embedders
from steps.lib.providers.degraded_embedder import degraded_embedder_kind
from steps.lib.providers.embedder_choice import embedder_kind
from steps.lib.runtime.settings import Settings
from steps.lib.runtime.stages import Stage

ROOT = Path(__file__).resolve().parents[1]
STEPS_DIR = ROOT / "steps"
KNOWLEDGE_DIR = ROOT / "build" / "knowledge"
KNOWLEDGE_FILES = ARTIFACT_FILES  # knowledge.json, embeddings.npy, index.bin
CACHE_DIR = ROOT / "build" / "lambda-deps"
REQUIREMENTS_DIR = Path(__file__).resolve().parent / "requirements"

PYTHON_VERSION = "3.13"
# manylinux2014 (glibc 2.17) and manylinux_2_28 wheels both run on the python3.13 runtime
# (Amazon Linux 2023, glibc 2.34); recent numpy publishes only the latter for arm64.
PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
DEFAULT_INDEX = "https://pypi.org/simple"
_SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache")


class BundlingError(RuntimeError):
    """The asset could not be built locally (and Docker is never the fallback)."""


@dataclass(frozen=True, slots=True)
class StepAsset:
    """What one kind of step Lambda ships."""

    name: str
    requirement_files: tuple[str, ...]
    with_knowledge: bool

    def requirements(self) -> tuple[str, ...]:
        lines: list[str] = []
        for file in self.requirement_files:
            for line in (REQUIREMENTS_DIR / file).read_text(encoding="utf-8").splitlines():
                line = line.split("#", 1)[0].strip()
                if line:
                    lines.append(line)
        return tuple(sorted(lines))

    def dependency_key(self) -> str:
        spec = "\n".join((*self.requirements(), *PLATFORMS, PYTHON_VERSION, "no-deps-v1"))
        return hashlib.sha256(spec.encode()).hexdigest()[:20]

    def source_hash(self) -> str:
        """Changes whenever anything that ends up in the zip changes (bytecode included)."""
        digest = hashlib.sha256(self.dependency_key().encode())
        digest.update(b"bytecode" if lambda_python() else b"source-only")
        for path in _files(STEPS_DIR):
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
        for path in shipped_knowledge(self):
            digest.update(path.read_bytes())
        return digest.hexdigest()

    @property
    def local_model(self) -> bool:
        """Whether the zip carries the local model (and so the index's vectors for it)."""
        return "local_embedder.txt" in self.requirement_files

    @property
    def ships_botocore(self) -> bool:
        """Whether the zip carries its own botocore (else the runtime's is imported)."""
        return "botocore.txt" in self.requirement_files


# Steps left to the runtime's botocore (infra/runtime_sdk.py) ship no SDK at all.
GATE_ASSET = StepAsset("gate", ("lambda.txt",), with_knowledge=False)
INVOKE_ASSET = StepAsset("invoke", ("lambda.txt", "botocore.txt"), with_knowledge=False)
RETRIEVAL_ASSET = StepAsset("retrieval", ("lambda.txt", "numpy.txt"), with_knowledge=True)
# With `embedder = "local"` the retrieval steps also carry the model and its runtime.
LOCAL_RETRIEVAL_ASSET = StepAsset(
    "retrieval-local", ("lambda.txt", "numpy.txt", "local_embedder.txt"), with_knowledge=True
)


def retrieval_asset(embedder: str) -> StepAsset:
    return LOCAL_RETRIEVAL_ASSET if embedder == "local" else RETRIEVAL_ASSET


def stage_embedder(stage: Stage, runtime: Settings) -> str:
    """The embedder a stage's bundle carries: the deployment's, except S7's, which carries
    the local model whenever it ranks with it (beside Titan too: it may make no billed
    call)."""
    kind = embedder_kind(runtime)
    if stage.state == "Degraded":
        return degraded_embedder_kind(runtime) or kind
    return kind


def step_asset(stage: Stage, embedder: str) -> StepAsset:
    """What ``stage`` ships; refused when the runtime's SDK may lack one of its calls."""
    if stage.needs_numpy:
        asset = retrieval_asset(embedder)
    else:
        asset = INVOKE_ASSET if runtime_sdk.bundles_botocore(stage.state) else GATE_ASSET
    runtime_sdk.check(stage.state, ships_botocore=asset.ships_botocore)
    return asset


def step_code(asset: StepAsset) -> lambda_.Code:
    """A Lambda Code for this asset, bundled locally by ``LocalStepBundler``."""
    return lambda_.Code.from_asset(
        str(STEPS_DIR),
        asset_hash_type=cdk.AssetHashType.CUSTOM,
        asset_hash=asset.source_hash(),
        bundling=cdk.BundlingOptions(
            # Required by the API; never pulled, because local bundling always succeeds or raises.
            image=cdk.DockerImage.from_registry("local-bundling-only"),
            local=LocalStepBundler(asset),
        ),
    )


@jsii.implements(cdk.ILocalBundling)
class LocalStepBundler:
    def __init__(self, asset: StepAsset) -> None:
        self._asset = asset

    def try_bundle(self, output_dir: str, *, image: cdk.DockerImage, **_docker: Any) -> bool:
        build_asset(self._asset, Path(output_dir))
        return True


def build_asset(asset: StepAsset, out: Path) -> None:
    deps = ensure_dependencies(asset)
    shutil.copytree(deps, out, dirs_exist_ok=True, ignore=_SKIPPED)
    shutil.copytree(STEPS_DIR, out / "steps", dirs_exist_ok=True, ignore=_SKIPPED)
    if asset.with_knowledge:
        target = out / "build" / "knowledge"
        target.mkdir(parents=True, exist_ok=True)
        for path in shipped_knowledge(asset):
            shutil.copy2(path, target / path.name)
    python = lambda_interpreter()
    if python is None:
        _note_source_only()
    else:
        _note_bytecode(python)
        compile_bytecode(out, python.path)


@dataclass(frozen=True, slots=True)
class Interpreter:
    """The CPython that compiles the bytecode, and how synthesis names it."""

    path: str
    version: str  # e.g. "3.13.5"
    origin: str  # where it came from, said at synth


def lambda_python() -> str | None:
    """A CPython of the runtime's version to compile with, or None (see the module doc)."""
    found = lambda_interpreter()
    return found.path if found else None


def lambda_interpreter() -> Interpreter | None:
    return _interpreter_for(PYTHON_VERSION)


@functools.cache
def _interpreter_for(version: str) -> Interpreter | None:
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return Interpreter(sys.executable, sys.version.split()[0], "the Python running synthesis")
    named = os.environ.get("CHATGUARD_LAMBDA_PYTHON")
    if named:  # the operator's choice is the only candidate: a wrong one is not overridden
        return _probe(named, version, "named by CHATGUARD_LAMBDA_PYTHON")
    on_path = shutil.which(f"python{version}")
    found = _probe(on_path, version, f"python{version} on PATH") if on_path else None
    fetched = fetched_python.fetched()
    if found is None and fetched is not None:
        full = fetched[1].removeprefix("Python ")
        found = _probe(fetched[0], version, fetched_python.DESCRIPTION.format(version=full))
    return found


def _probe(candidate: str, version: str, origin: str) -> Interpreter | None:
    full = fetched_python.version_of(candidate, version)
    return Interpreter(candidate, full, origin) if full else None


def compile_bytecode(root: Path, python: str) -> None:
    """Write an unchecked-hash .pyc beside every module under ``root`` (``python``'s version)."""
    command = [python, "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash"]
    result = subprocess.run([*command, str(root)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BundlingError(f"compiling the Lambda bytecode failed:\n{result.stdout[-2000:]}")


@functools.cache
def _note_source_only() -> None:
    print(
        f"chatguard: no Python {PYTHON_VERSION} here, so the step bundles ship without "
        "bytecode and each cold start compiles the steps from source (docs/benchmarks.md, "
        f"Cold path): {fetched_python.HINT}",
        file=sys.stderr,
    )


@functools.cache
def _note_bytecode(python: Interpreter) -> None:
    # Said either way, so the operator knows which of the model's two cold figures applies.
    print(
        f"chatguard: the step bundles carry bytecode compiled by Python {python.version} "
        f"({python.origin})",
        file=sys.stderr,
    )


def ensure_dependencies(asset: StepAsset) -> Path:
    """The installed wheels for this requirement set, from the cache or freshly installed."""
    final = CACHE_DIR / asset.dependency_key()
    if (final / ".complete").exists():
        return final
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=CACHE_DIR))
    try:
        _pip_install(asset.requirements(), staging)
        shutil.rmtree(staging / "bin", ignore_errors=True)  # console scripts: not importable
        (staging / ".complete").write_text("\n".join(asset.requirements()) + "\n")
        try:
            staging.rename(final)
        except OSError:
            if not (final / ".complete").exists():  # another process did not win the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def pip_command(requirements: tuple[str, ...], target: Path) -> list[str]:
    # --isolated: ignore this machine's pip config and PIP_* variables (constraints files,
    # extra or local indexes, find-links) so every machine resolves the same wheels.
    # --no-deps: the requirement files are the complete lock.
    command = [sys.executable, "-m", "pip", "--isolated", "install", "--quiet", "--no-deps"]
    command += ["--no-compile", "--disable-pip-version-check", "--only-binary=:all:"]
    command += ["--implementation", "cp", "--python-version", PYTHON_VERSION]
    command += ["--abi", "cp" + PYTHON_VERSION.replace(".", "")]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    index = os.environ.get("CHATGUARD_PIP_INDEX_URL") or DEFAULT_INDEX
    command += ["--index-url", index, "--target", str(target)]
    cert = os.environ.get("PIP_CERT")  # a proxy's CA bundle still has to reach pip
    if cert:
        command += ["--cert", cert]
    return [*command, *requirements]


def _pip_install(requirements: tuple[str, ...], target: Path) -> None:
    if not requirements:  # the gate steps ship steps/ alone
        return
    result = subprocess.run(
        pip_command(requirements, target), capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise BundlingError(
            "pip could not fetch the Lambda wheels for linux/arm64 (is PyPI reachable? "
            f"CHATGUARD_PIP_INDEX_URL names a mirror):\n{result.stderr[-2000:]}"
        )


def index_embedder() -> BuiltIndex:
    """The embedder recorded in build/knowledge/knowledge.json (id, e.g. "hashing-v2", and
    dimensions)."""
    embedder = _header().get("embedder", {})
    if not isinstance(embedder, dict):
        return BuiltIndex(str(embedder), 0)
    return BuiltIndex(str(embedder.get("id")), int(embedder.get("dimensions") or 0))


def index_carries() -> tuple[str, ...]:
    """The embedders whose vectors build/knowledge carries: its own, then the degraded
    answer's when the indexer wrote them (knowledge.carried_embedders)."""
    try:
        return carried_embedders(_header())
    except (KeyError, TypeError) as exc:
        raise BundlingError(f"build/knowledge: unreadable header ({exc}); `{REBUILD}`") from exc


def _header() -> dict[str, Any]:
    """build/knowledge/knowledge.json, parsed."""
    header: dict[str, Any] = json.loads(
        _knowledge_file("knowledge.json").read_text(encoding="utf-8")
    )
    return header


def index_site() -> SiteRecord | None:
    """The site build/knowledge records it was built from (None: an older index)."""
    _knowledge_file("knowledge.json")
    try:
        return read_record(KNOWLEDGE_DIR)
    except ValueError as exc:
        raise BundlingError(f"build/knowledge: {exc}; rebuild it (`{REBUILD}`)") from exc


def shipped_knowledge(asset: StepAsset) -> list[Path]:
    """The index files an asset ships: the artifact's three, and the local model's second
    matrix where the asset carries the model and the header names one (only that step
    reads it). A named matrix that is missing stops synthesis like a missing artifact:
    shipped without it, S7 would fail every degraded answer closed; a file the header does
    not name (another build's) is never shipped."""
    if not asset.with_knowledge:
        return []
    files = [_knowledge_file(name) for name in KNOWLEDGE_FILES]
    if asset.local_model and len(index_carries()) > 1:
        files.append(_knowledge_file(DEGRADED_MATRIX_FILE))
    return files


def _knowledge_file(name: str) -> Path:
    path = KNOWLEDGE_DIR / name
    if not path.is_file():
        raise BundlingError(
            f"build/knowledge/{name} is missing: build the index first (`{REBUILD}`; "
            "offline: `make index`)"
        )
    return path


def _files(directory: Path) -> list[Path]:
    return sorted(
        p
        for p in directory.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
