"""A CPython 3.13 to compile the Lambda bytecode on a machine without one (`make lambda-python`).

The step Lambdas run on the python3.13 runtime ([Lambda runtimes]), whose CPython 3.13 only
uses ``cpython-313.pyc`` files, and only a CPython 3.13 writes them (infra/bundling.py).
Debian 12, this project's own build machines, carries 3.11.
Debian 13 (trixie) carries CPython 3.13, and apt's ordinary client fetches it: a private
apt configuration (its own source list, package lists and cache, nothing of the system's
sources touched) runs ``apt-get update`` and ``apt-get download`` against trixie's archive.
apt's own checks stay on: ``update`` refuses a Release file whose signature the system's
Debian archive keyring does not verify, and ``download`` refuses a package whose hash does
not match the signed index. Never ``--allow-unauthenticated``.

trixie's interpreter needs trixie's glibc (2.38+; bookworm has 2.36), so the five packages
``python3.13-minimal libpython3.13-minimal libc6 zlib1g libexpat1`` are unpacked with
``dpkg-deb -x`` into one folder (about 27 MB, no install, nothing of the system replaced) and
the interpreter is started through trixie's own dynamic loader with trixie's libraries:
the wrapper script ``bin/python3.13`` does exactly that, so to bundling.py it is one more
``python3.13``. It is only ever used to write bytecode at synth; it serves no request.

The folder is ``lambda-python/trixie-<arch>`` in the project's cache folder
(``$XDG_CACHE_HOME/chatguard``, else ``~/.cache/chatguard``; CHATGUARD_CACHE_DIR overrides
it and an empty value turns it off: the rule docs/local.md gives for the local runtime's cache,
restated here because infra/ never imports the local runtime),
built in a staging folder and renamed into place, so a half-finished fetch is never found.

[Lambda runtimes]: https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = "deb http://deb.debian.org/debian trixie main"
PACKAGES = ("python3.13-minimal", "libpython3.13-minimal", "libc6", "zlib1g", "libexpat1")
VERSION = "3.13"
DESCRIPTION = "Debian trixie's CPython {version} fetched by make lambda-python"
HINT = (
    "run `make lambda-python` (Debian/Ubuntu: fetches Debian trixie's CPython 3.13), or "
    "elsewhere install one (macOS: `brew install python@3.13`) or set CHATGUARD_LAMBDA_PYTHON"
)
_COMPLETE = ".complete"  # written last, holding the interpreter's `--version`
_WRAPPER = """#!/bin/sh
# Debian trixie's CPython 3.13 through trixie's own loader and libraries (make lambda-python).
root=$(cd "${{0%/*}}/.." && pwd)  # shell built-ins only: works with an empty PATH
unset PYTHONHOME PYTHONPATH
exec "$root/{loader}" --library-path "$root/{libdir}" "$root/usr/bin/python{version}" "$@"
"""


class FetchError(RuntimeError):
    """The interpreter could not be fetched (apt's refusal or the archive unreachable)."""


def cache_dir() -> Path | None:
    chosen = os.environ.get("CHATGUARD_CACHE_DIR")
    if chosen is not None:
        return Path(chosen) if chosen else None
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chatguard"


def home(cache: Path | None = None) -> Path | None:
    """Where the fetched interpreter lives (None: the project's cache is turned off)."""
    base = cache if cache is not None else cache_dir()
    return None if base is None else base / "lambda-python" / f"trixie-{_architecture()}"


def fetched(cache: Path | None = None) -> tuple[str, str] | None:
    """(the wrapper, its ``Python 3.13.x``) when `make lambda-python` has run, else None."""
    where = home(cache)
    if where is None or not (where / _COMPLETE).is_file():
        return None
    wrapper = where / "bin" / f"python{VERSION}"
    if not os.access(wrapper, os.X_OK):
        return None
    return str(wrapper), (where / _COMPLETE).read_text(encoding="utf-8").strip()


def ensure(cache: Path | None = None) -> tuple[str, str, bool]:
    """The wrapper and its version, fetched now unless already there: (wrapper, version,
    fetched now)."""
    present = fetched(cache)
    if present is not None:
        return (*present, False)
    where = home(cache)
    if where is None:
        raise FetchError("the project's cache is turned off (CHATGUARD_CACHE_DIR is empty)")
    where.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{where.name}.", dir=where.parent))
    try:
        version = _build(staging)
        raced = fetched(cache)
        if raced is not None:  # another fetch (a parallel test run) finished first: keep it
            return (*raced, False)
        shutil.rmtree(where, ignore_errors=True)  # a folder without its marker: unfinished
        staging.rename(where)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return str(where / "bin" / f"python{VERSION}"), version, True


def _build(staging: Path) -> str:
    apt = _apt_options(staging / "apt")
    # --error-on=any: an unreachable archive fails here, not later as a missing package.
    update = ["apt-get", *apt, "-qq", "--error-on=any", "update"]
    _run(update, "apt-get update (trixie's signed package lists)")
    debs = staging / "debs"
    debs.mkdir()
    # pkg/trixie: trixie's version, never the one this machine has installed.
    wanted = [f"{package}/trixie" for package in PACKAGES]
    _run(["apt-get", *apt, "-qq", "download", *wanted], "apt-get download", cwd=debs)
    for deb in sorted(debs.glob("*.deb")):  # unpacked into the folder itself: its usr/
        _run(["dpkg-deb", "-x", str(deb), str(staging)], f"dpkg-deb -x {deb.name}")
    shutil.rmtree(debs)
    shutil.rmtree(staging / "apt")
    wrapper = _write_wrapper(staging)
    probe = subprocess.run([str(wrapper), "--version"], capture_output=True, text=True, check=False)
    version = probe.stdout.strip()
    if probe.returncode != 0 or not version.startswith(f"Python {VERSION}."):
        raise FetchError(f"the fetched interpreter does not start: {probe.stderr.strip()[-300:]}")
    (staging / _COMPLETE).write_text(version + "\n", encoding="utf-8")
    return version


def version_of(candidate: str, version: str) -> str | None:
    """``candidate``'s full version ("3.13.5") when it runs and is ``version``, else None."""
    code = "import sys; print(sys.version.split()[0])"
    try:
        probe = subprocess.run([candidate, "-c", code], capture_output=True, text=True, check=False)
    except OSError:
        return None
    full = probe.stdout.strip()
    return full if probe.returncode == 0 and full.startswith(f"{version}.") else None


def _apt_options(state: Path) -> list[str]:
    """apt reading only trixie's source, into folders of its own (the system's untouched)."""
    lists, cache = state / "lists", state / "cache"
    (lists / "partial").mkdir(parents=True)
    (cache / "archives" / "partial").mkdir(parents=True)
    sources = state / "sources.list"
    sources.write_text(SOURCE + "\n", encoding="utf-8")
    options = {
        "Dir::Etc::SourceList": str(sources),
        "Dir::Etc::SourceParts": "/dev/null",
        "Dir::Etc::Preferences": "/dev/null",  # the system's pins say nothing about trixie
        "Dir::Etc::PreferencesParts": "/dev/null",
        "Dir::State::Lists": str(lists),
        "Dir::Cache": str(cache),
        "APT::Architectures": _architecture(),  # this machine's only: one Packages file
        "Acquire::Languages": "none",
    }
    return [arg for key, value in options.items() for arg in ("-o", f"{key}={value}")]


def _write_wrapper(root: Path) -> Path:
    loaders = sorted(root.glob("usr/lib/*-linux-gnu*/ld-linux*.so.*"))
    if not loaders:
        raise FetchError("trixie's libc6 carries no dynamic loader for this architecture")
    loader = loaders[0].relative_to(root)
    script = _WRAPPER.format(loader=loader, libdir=loader.parent, version=VERSION)
    wrapper = root / "bin" / f"python{VERSION}"
    wrapper.parent.mkdir()
    wrapper.write_text(script, encoding="utf-8")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return wrapper


# Debian's names for the kernel's, so the folder is found with or without dpkg on PATH.
_DEBIAN_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def _architecture() -> str:
    if shutil.which("dpkg") is None:
        return _DEBIAN_ARCH.get(os.uname().machine, os.uname().machine)
    return subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()


def _run(command: list[str], what: str, cwd: Path | None = None) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise FetchError(f"{what} failed: {detail[0]}")


def main() -> int:
    # bundling.py prefers these, so fetching would change nothing (a pyenv shim or a wrong
    # version does not count: it is probed, as bundling.py probes it).
    other = os.environ.get("CHATGUARD_LAMBDA_PYTHON") or shutil.which(f"python{VERSION}")
    if sys.version_info[:2] == (3, 13) or (other and version_of(other, VERSION)):
        print(
            f"chatguard: a Python {VERSION} is already here for the Lambda bytecode; none fetched"
        )
        return 0
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        print(f"chatguard: no apt here, so no CPython {VERSION} fetched: {HINT}")
        return 0
    try:
        _, version, now = ensure()
    except (FetchError, OSError) as exc:
        print(f"chatguard: make lambda-python: {exc}", file=sys.stderr)
        return 1
    said = ", ".join(PACKAGES)
    if now:
        print(f"chatguard: fetched Debian trixie's {version} ({said}) for the Lambda bytecode")
    else:
        print(f"chatguard: Debian trixie's {version} already fetched (make lambda-python)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
