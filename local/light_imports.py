"""Import moto's EC2 model without the data the local runtime never reads.

moto's SSM model and the Step Functions engine's Batch task module both import
``moto.ec2``; at import it parses about 95 JSON files of instance types and per-Region
offerings and builds three boto3 sessions to list Regions: most of a `chatguard chat`'s
start-up (``python -X importtime``, docs/benchmarks.md "CLI"). The local runtime calls no
EC2 API, so those tables load empty and the Region list comes from one shared session.
Applied once per process, before moto's first import of ``moto.ec2``; a process that
already imported it (a test that mocks EC2) keeps the full tables.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_EMPTY_TABLES = {
    "ec2/resources/instance_types.json": dict,
    "ec2/resources/instance_type_offerings/": list,
}


def import_ec2_lightly() -> None:
    if "moto.ec2" in sys.modules:
        return
    with _empty_instance_tables(), _one_boto3_session():
        import moto.ec2  # noqa: F401


@contextmanager
def _empty_instance_tables() -> Iterator[None]:
    from moto.utilities import utils

    original = utils.load_resource

    def load_resource(resource: str) -> Any:
        for prefix, empty in _EMPTY_TABLES.items():
            if resource.startswith(prefix):
                return empty()
        return original(resource)

    utils.load_resource = load_resource
    try:
        yield
    finally:
        utils.load_resource = original


@contextmanager
def _one_boto3_session() -> Iterator[None]:
    import boto3

    original = boto3.Session
    shared = original()

    def session(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs) if args or kwargs else shared

    boto3.Session = session  # type: ignore[assignment,misc]
    try:
        yield
    finally:
        boto3.Session = original  # type: ignore[misc]
