"""`cdk synth` / `cdk deploy` entry point (cdk.json "app"): the whole app is built elsewhere.

A configuration the app refuses (a bad cdk.json value, an index Retrieve cannot read, a
Lambda asset that cannot be built) ends synthesis with one line on stderr and exit 1,
not a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script by the CDK CLI: import from the project root, not from infra/ itself.
sys.path[0] = str(Path(__file__).resolve().parents[1])

from infra.application import build  # noqa: E402
from infra.bundling import BundlingError  # noqa: E402
from infra.config import ConfigError  # noqa: E402
from infra.index_check import IndexMismatch  # noqa: E402

try:
    build().synth()
except (ConfigError, IndexMismatch, BundlingError) as refused:
    print(f"chatguard: synthesis refused: {refused}", file=sys.stderr)
    sys.exit(1)
