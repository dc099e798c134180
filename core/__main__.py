"""``python -m core ...``: the Isoscope command line."""

from __future__ import annotations

import sys

from core.cli import main

sys.exit(main())
