"""`python -m indexer SITE_DIR [--out DIR] [--embedder hashing|titan]`."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
