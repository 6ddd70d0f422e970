"""botocore Loaders share what they parse (local/engine/shared_models.py), keyed by what decides
the answer: two Loaders that would read the same files answer with one object, and a
Loader that searches elsewhere still reads its own."""

from __future__ import annotations

import json
from pathlib import Path

from botocore.loaders import Loader

from local.engine import shared_models

TINY_STS = {"version": "2.0", "metadata": {"endpointPrefix": "sts"}, "operations": {}, "shapes": {}}


def _own_sts(root: Path) -> str:
    folder = root / "sts" / "2011-06-15"
    folder.mkdir(parents=True)
    (folder / "service-2.json").write_text(json.dumps(TINY_STS))
    return str(root)


def test_two_loaders_of_one_search_path_parse_a_model_once() -> None:
    shared_models.share()
    first, second = Loader(), Loader()
    assert first.load_service_model("sts", "service-2") is second.load_service_model(
        "sts", "service-2"
    )


def test_a_loader_that_searches_elsewhere_reads_its_own_files(tmp_path: Path) -> None:
    shared_models.share()
    plain, own = Loader(), Loader(extra_search_paths=[_own_sts(tmp_path)])
    assert plain.load_service_model("sts", "service-2")["operations"]  # botocore's, full
    assert own.load_service_model("sts", "service-2")["operations"] == {}


def test_a_search_path_added_after_the_loader_is_built_counts(tmp_path: Path) -> None:
    """boto3 appends its data directory to a Loader it did not build: the key is read at
    each call, not when the Loader was made."""
    shared_models.share()
    loader = Loader()
    assert loader.load_service_model("sts", "service-2")["operations"]
    loader.search_paths.insert(0, _own_sts(tmp_path))
    assert loader.load_service_model("sts", "service-2")["operations"] == {}
