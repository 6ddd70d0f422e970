"""Documentation nobody on the team wrote, copied at evaluation time (never committed).

npm's own documentation: the Markdown pages under `docs/content/` of the `npm` package
(Artistic License 2.0). It is on every machine that has Node.js; where npm is there but
its docs are not, `npm pack npm` fetches the package tarball from the registry.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

NPM_DOCS = Path("docs") / "content"


class CorpusUnavailable(RuntimeError):
    """The corpus could not be found or fetched; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Corpus:
    site: Path  # the copy, laid out as a site directory for `chatguard index`
    name: str
    version: str


def npm_docs(dest: Path) -> Corpus:
    """Copy npm's docs/content to `dest` and say which npm version it came from."""
    package = _installed_npm() or _packed_npm(dest.parent)
    version = json.loads((package / "package.json").read_text(encoding="utf-8"))["version"]
    shutil.copytree(package / NPM_DOCS, dest)
    return Corpus(dest, "npm documentation", str(version))


def _installed_npm() -> Path | None:
    try:
        root = subprocess.run(
            ["npm", "root", "-g"], capture_output=True, text=True, check=True, timeout=60
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    package = Path(root) / "npm"
    return package if (package / NPM_DOCS).is_dir() else None


def _packed_npm(work: Path) -> Path:
    target = Path(tempfile.mkdtemp(prefix="npm-pack-", dir=work))
    try:
        name = subprocess.run(
            ["npm", "pack", "npm", "--silent"],
            cwd=target,
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        ).stdout.split()[-1]
        with tarfile.open(target / name) as archive:
            archive.extractall(target, filter="data")
    except (OSError, subprocess.SubprocessError, tarfile.TarError, IndexError) as exc:
        raise CorpusUnavailable(
            f"npm's documentation is neither installed nor fetchable ({exc}): "
            "install Node.js (npm ships its docs) and run `make bench-retrieval` again"
        ) from exc
    package = target / "package"
    if not (package / NPM_DOCS).is_dir():
        raise CorpusUnavailable("the npm package tarball has no docs/content directory")
    return package
