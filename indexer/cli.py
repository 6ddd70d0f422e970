"""`chatguard index SITE_DIR [--out DIR] [--embedder local|titan|hashing]
[--degraded-vectors local|none]` (`python -m indexer`).

Exit codes: 0 built; 1 refused (forbidden term, no pages, embedding failure; nothing
written); 2 bad arguments (argparse).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from steps.lib.runtime.settings import DEFAULT_KNOWLEDGE_DIR

from .pages import PERMALINKS
from .titan_model import MODEL_ID

if TYPE_CHECKING:  # imported when `index` runs: every other command parses without them
    from .build import BuildReport, Embedder
    from .policy import IndexPolicy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("site", type=Path, metavar="SITE_DIR", help="Markdown/HTML pages")
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_KNOWLEDGE_DIR,
        help="artifact directory (default: build/knowledge in the project)",
    )
    parser.add_argument(
        "--embedder",
        choices=("local", "titan", "hashing"),
        default="local",
        help="local = the bundled MiniLM model, offline (default); titan = Bedrock; "
        "hashing = the fast stand-in the unit tests use (not a semantic model)",
    )
    parser.add_argument(
        "--degraded-vectors",
        choices=("local", "none"),
        default=None,
        help="local = also embed every chunk with the local model, so the degraded answer "
        "(which makes no billed call) ranks by meaning beside a Titan index; none = it ranks "
        "by words alone (default: local with --embedder titan, else none)",
    )
    parser.add_argument(
        "--dimensions",
        type=int,
        default=1024,
        help="vector size, titan and hashing only "
        "(default %(default)s; the local model's is fixed)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="exclusion glob (repeatable; replaces cdk.json's list)",
    )
    parser.add_argument(
        "--forbidden",
        action="append",
        metavar="TERM",
        help="forbidden term (repeatable; replaces cdk.json's list)",
    )
    parser.add_argument(
        "--permalinks",
        choices=PERMALINKS,
        default=None,
        help="how your host links a page: file = /posts/waf.html, works on any static host "
        "(S3, CloudFront); pretty = /posts/waf (default: cdk.json, else file)",
    )
    parser.add_argument(
        "--keep-utility-pages",
        action="store_true",
        default=None,
        help="also index a generator's utility pages: general and module indexes, lists of "
        "posts, source listings, search, 404, redirects (default: cdk.json "
        "keep_utility_pages, else left out)",
    )
    titan = parser.add_argument_group("titan")
    titan.add_argument("--model-id", default=MODEL_ID, help="Titan model (default %(default)s)")
    titan.add_argument("--region", default=None, help="AWS Region of Bedrock for --embedder titan")
    titan.add_argument("--concurrency", type=int, default=4, help="calls in flight")
    titan.add_argument(
        "--cache", type=Path, default=None, help="embedding cache file (default: beside --out)"
    )  # also the local model's cache: a rebuild embeds only the chunks that changed


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add `index` to `chatguard`."""
    parser = sub.add_parser(
        "index",
        help="build the knowledge artifact from a site directory",
        description="Build the knowledge artifact (chunks and vectors) from a folder of "
        "Markdown/HTML pages. Exit 0 built; 1 refused, nothing written; 2 bad arguments.",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def policy_from(args: argparse.Namespace) -> IndexPolicy:
    from .policy import IndexPolicy

    base = IndexPolicy.from_context()
    return IndexPolicy(
        tuple(args.exclude) if args.exclude is not None else base.exclude,
        tuple(args.forbidden) if args.forbidden is not None else base.forbidden_terms,
        args.permalinks or base.permalinks,
        base.keep_utility_pages if args.keep_utility_pages is None else True,
    )


def make_embedder(args: argparse.Namespace) -> Embedder:
    if args.embedder == "hashing":
        from steps.lib.providers.hashing_embedder import HashingEmbedder

        return HashingEmbedder(args.dimensions)
    if args.embedder == "local":
        return local_embedder(args.cache, args.out)
    import boto3
    from botocore.config import Config

    from .titan import TitanEmbedder

    # Our own backoff handles throttling; botocore's retries would double it up.
    config = Config(retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=30)
    client = boto3.client("bedrock-runtime", region_name=args.region, config=config)
    cache = args.cache or args.out.parent / ".embedding-cache" / f"titan-{args.dimensions}.json"
    return TitanEmbedder(
        client,
        model_id=args.model_id,
        dimensions=args.dimensions,
        concurrency=args.concurrency,
        progress=sys.stderr,
        cache_path=cache,
    )


def local_embedder(cache: Path | None, out: Path) -> Embedder:
    """The local model, its vectors cached beside the artifact (a rebuild embeds only the
    chunks that changed)."""
    from steps.lib.providers.local_embedder import MODEL_ID, LocalEmbedder, default_threads

    from .local_model import CachedLocalEmbedder

    return CachedLocalEmbedder(
        lambda: LocalEmbedder(threads=default_threads()),
        cache_path=cache or out.parent / ".embedding-cache" / f"{MODEL_ID}.json",
        progress=sys.stderr if sys.stderr.isatty() else None,
    )


def make_degraded_embedder(args: argparse.Namespace) -> Embedder | None:
    """The degraded answer's own embedder: the local model beside Titan by default (S7
    must make no billed call, so it cannot embed a query with Titan), else none."""
    wanted = args.degraded_vectors or ("local" if args.embedder == "titan" else "none")
    if wanted == "none" or args.embedder == "local":  # the local index's vectors serve S7
        return None
    # Its own cache file: --cache names Titan's (one file per embedder id).
    return local_embedder(None, args.out)


def run(args: argparse.Namespace) -> int:
    from .build import BuildError, build
    from .policy import PolicyError

    try:
        policy = policy_from(args)
    except PolicyError as exc:
        print(f'chatguard index: cdk.json "chatguard/index": {exc}', file=sys.stderr)
        return 2
    try:
        embedder = make_embedder(args)
        report = build(args.site, args.out, policy, embedder, make_degraded_embedder(args))
    except BuildError as exc:
        print(f"chatguard index: refused, nothing written: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # an embedding failure: say so, keep the old artifact
        print(f"chatguard index: failed, nothing written: {exc}", file=sys.stderr)
        return 1
    print(summary(report))
    embedded = getattr(embedder, "embedded", None)  # the local model's cache says what it did
    if embedded is not None:
        print(
            f"embedded {embedded} new or changed chunks, {report.chunks - embedded} from the cache",
            file=sys.stderr,
        )
    return 0


def summary(report: BuildReport) -> str:
    globbed = tuple(name for name in report.excluded if name not in report.utility)
    skipped = [
        f"{len(names)} {what}: {', '.join(names)}"
        for what, names in (("excluded", globbed), ("empty, skipped", report.empty))
        if names
    ]
    if report.utility:  # said once, with the way to keep them
        skipped.append(
            f"{len(report.utility)} utility pages left out: {_few(report.utility)}, "
            "as a site's indexes, lists of posts, source listings, search, 404 and redirect "
            "pages are; --keep-utility-pages keeps them"
        )
    note = f" ({'; '.join(skipped)})" if skipped else ""
    degraded = (
        f" (and {report.degraded_embedder} for the degraded answer)"
        if report.degraded_embedder
        else ""
    )
    return (
        f"indexed {report.pages} pages{note} -> {report.chunks} chunks, "
        f"{report.tokens:,} tokens, {report.embedder} x {report.dimensions}{degraded} -> "
        f"{shown(report.out)}"
    )


def _few(names: tuple[str, ...], group_at: int = 3) -> str:
    """Every page named, or its folder: a folder with ``group_at`` or more pages left out
    (viewcode's one source page per module, Hugo's tag pages) is said once with its count,
    so a page left out elsewhere is never hidden behind "and N more"."""
    by_folder: dict[str, list[str]] = {}
    for name in names:
        folder, _, _ = name.rpartition("/")
        by_folder.setdefault(folder, []).append(name)
    said: list[str] = []
    for folder, pages in by_folder.items():
        if folder and len(pages) >= group_at:
            said.append(f"{len(pages)} under {folder}/")
        else:
            said.extend(pages)
    return ", ".join(said)


def shown(path: Path) -> str:
    """Where the artifact went, as the user can type it from the working directory: under
    it, as ``./build/knowledge`` (so it cannot be read as a path inside the project or the
    site); elsewhere, a relative path from here, or an absolute one as given."""
    here, where = Path.cwd().resolve(), path.resolve()
    if where.is_relative_to(here):
        return f"./{where.relative_to(here).as_posix()}" if where != here else "."
    return str(path) if path.is_absolute() else os.path.relpath(where, here)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m indexer", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
