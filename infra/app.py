"""`cdk synth` / `cdk deploy` entry point (cdk.json "app"): the whole app is built elsewhere."""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script by the CDK CLI: import from the project root, not from infra/ itself.
sys.path[0] = str(Path(__file__).resolve().parents[1])

from infra.application import build  # noqa: E402

build().synth()
