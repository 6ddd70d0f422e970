"""`python -m chatguard ...`: the same command as the `chatguard` console script."""

from __future__ import annotations

import sys

from chatguard.cli import main

sys.exit(main())
