"""Documentation nobody on the team wrote, copied at evaluation time (never committed).

npm's own documentation: the Markdown pages under `docs/content/` of the `npm` package
(Artistic License 2.0). It is on every machine that has Node.js; where npm is there but
its docs are not, `npm pack npm` fetches the package tarball from the registry.

Node.js's API reference, for the indexing bench: the Markdown pages that Debian's
`nodejs-doc` package ships under /usr/share/doc/nodejs/api (MIT, "Expat" in its copyright
file), about 3.2 MB once unzipped. Read where the package is installed, otherwise
`apt-get download nodejs-doc` fetches it and `dpkg-deb -x` unpacks it (no install, no root).

Built HTML sites for the visitor-condition bench (tests/bench/visitor_conditions.py), each
from a Debian `*-doc` package fetched the same way by `debian_doc_site`: Requests's docs
built by Sphinx (python-requests-doc, Apache 2.0), MkDocs's docs built by MkDocs
(mkdocs-doc, BSD-2-Clause) and LMDB's C API built by Doxygen (lmdb-doc, OpenLDAP-2.8).
Fetched under the caller's work directory, never committed.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

NPM_DOCS = Path("docs") / "content"
NODE_API = Path("usr") / "share" / "doc" / "nodejs" / "api"


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


def node_api_docs(dest: Path) -> Corpus:
    """Node.js's API pages (Debian's nodejs-doc) as Markdown under `dest`, unzipped."""
    root, version = _installed_node_doc() or _downloaded_node_doc(dest.parent)
    dest.mkdir(parents=True)
    for page in sorted((root / NODE_API).iterdir()):
        if page.name.endswith(".md"):
            shutil.copyfile(page, dest / page.name)
        elif page.name.endswith(".md.gz"):
            (dest / page.name[:-3]).write_bytes(gzip.decompress(page.read_bytes()))
    return Corpus(dest, "Node.js API documentation", version)


def _run(args: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=True, timeout=300)
    return done.stdout.strip()


def _installed_node_doc() -> tuple[Path, str] | None:
    try:
        version = _run(["dpkg-query", "-W", "-f", "${Version}", "nodejs-doc"])
    except (OSError, subprocess.SubprocessError):
        return None
    root = Path("/")
    return (root, version) if version and (root / NODE_API).is_dir() else None


def _downloaded_node_doc(work: Path) -> tuple[Path, str]:
    root, version = _fetched_deb("nodejs-doc", work, "bench-index")
    if not (root / NODE_API).is_dir():
        raise CorpusUnavailable("the nodejs-doc package has no usr/share/doc/nodejs/api")
    return root, version


def _fetched_deb(package: str, work: Path, bench: str) -> tuple[Path, str]:
    """`apt-get download` + `dpkg-deb -x` of `package` into a fresh directory under `work`
    (no install, no root): (the unpacked tree, the package's version)."""
    target = Path(tempfile.mkdtemp(prefix=f"{package}-", dir=work))
    try:
        _run(["apt-get", "download", package], cwd=target)
        deb = next(target.glob(f"{package}_*.deb"))
        version = _run(["dpkg-deb", "-f", str(deb), "Version"])
        _run(["dpkg-deb", "-x", str(deb), str(target / "root")])
    except (OSError, subprocess.SubprocessError, StopIteration) as exc:
        raise CorpusUnavailable(
            f"Debian's {package} is neither installed nor fetchable ({exc}): run "
            f"`apt-get update` (Debian's package lists) and `make {bench}` again"
        ) from exc
    return target / "root", version


def debian_doc_site(package: str, html: str, dest: Path, name: str) -> Corpus:
    """A Debian *-doc package's built HTML (`html`: its directory inside the package, e.g.
    usr/share/doc/mkdocs/html) copied to `dest`, fetched whether or not the package is
    installed (the copy is the package as Debian ships it, not a local edit)."""
    root, version = _fetched_deb(package, dest.parent, "bench-retrieval")
    if not (root / html).is_dir():
        raise CorpusUnavailable(f"the {package} package has no {html}")
    shutil.copytree(root / html, dest, symlinks=False, ignore_dangling_symlinks=True)
    return Corpus(dest, name, version)
