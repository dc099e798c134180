"""``python -m isoscope ...``: the Isoscope command line."""

from __future__ import annotations

import sys

from isoscope.cli import main

sys.exit(main())
