"""Every page of the installed ``isoscope app`` opened once (streamlit's AppTest), by the wheel gate's venv from an
empty folder: ``python app_pages.py`` with ``ISOSCOPE_DATA_FILE`` naming a small launched file, as
``isoscope app FILE`` would. Imports only what the wheel installed (no pytest). Prints one line per page with its
seconds; exits 1 naming each page that raised or showed an error box."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

import isoscope.dashboard


def main() -> int:
    app = Path(isoscope.dashboard.__file__).resolve().parent / "app.py"  # the installed package's, not a checkout's
    pages = sorted(p.stem for p in (app.parent / "views").glob("*.py") if p.stem != "__init__")
    at = AppTest.from_file(str(app), default_timeout=600)
    at.run()
    failed = []
    for page in pages:
        start = time.perf_counter()
        at.switch_page(f"views/{page}.py").run()
        problems = [e.message for e in at.exception] + [e.value for e in at.error]
        print(f"page {page}: {time.perf_counter() - start:.1f} s{' FAILED' if problems else ''}", flush=True)
        if problems:
            failed.append(f"{page}: {problems[0][:2000]}")
    for line in failed:
        print(line, file=sys.stderr)
    print(f"pages: {len(pages) - len(failed)} opened, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
