"""Shared widgets, one concern per module; pages use them as ``from isoscope.dashboard import ui`` + ``ui.xxx``.

- ``sidebar``: the shared sidebar and its ``Settings`` (``ui.sidebar()`` in the router, ``ui.settings()`` in pages)
- ``space``: the session's space, the model or a vectors file (``ui.space_box()`` in the router, ``ui.space()``,
  ``ui.space_corpus``, ``ui.space_vectors`` and ``ui.needs_model`` in pages)
- ``pickers``: demo data, uploads kept in the session, typed sentences
- ``calibration``: calibration controls, fit texts, the calibrated space
- ``controls``: widget state (``clamp``, ``run_button``) and a run's cost before it starts (``estimate``)
- ``outputs``: charts with PNG + HTML downloads, CSV tables, the one-file report's build and download
- ``errors``: the user's mistake in one line, a bug shown as a bug, warnings
- ``atlas_map``: the Atlas's tiled map (a custom component with its JavaScript in the package)
- ``isoscope.dashboard.text``: user text shown literally (``literal``, ``plot_text``), never as HTML
"""

from __future__ import annotations

from isoscope.dashboard.text import glossary, literal, plot_text
from isoscope.dashboard.ui.atlas_map import atlas_map
from isoscope.dashboard.ui.calibration import (
    CALIBRATION_CHOICES,
    CALIBRATION_HELP,
    FIT_CHOICES,
    CalibratedSpace,
    Calibration,
    calibrate,
    calibrated_space,
    calibration_controls,
    calibration_help,
    fit_texts,
    fixed_model_download,
    safe_default,
    warn_fit_size,
)
from isoscope.dashboard.ui.controls import ESTIMATE_PREFIX, clamp, estimate, run_button
from isoscope.dashboard.ui.errors import bug_report, show_warnings, user_error
from isoscope.dashboard.ui.outputs import chart, download_table, report_download
from isoscope.dashboard.ui.pickers import (
    ATLAS_OPENED,
    CORPUS_SOURCES,
    PRELOADED,
    corpus_from,
    corpus_input,
    corpus_source,
    meta_columns,
    pairs_input,
    scored_pairs_input,
    uploaded,
)
from isoscope.dashboard.ui.sidebar import MAX_LENGTHS, PRECISION_HELP, Settings, pooling_help, settings, sidebar
from isoscope.dashboard.ui.space import (
    SessionSpace,
    needs_model,
    space,
    space_box,
    space_corpus,
    space_name,
    space_vectors,
)

__all__ = [
    "ATLAS_OPENED",
    "CALIBRATION_CHOICES",
    "CALIBRATION_HELP",
    "CORPUS_SOURCES",
    "ESTIMATE_PREFIX",
    "FIT_CHOICES",
    "MAX_LENGTHS",
    "PRECISION_HELP",
    "PRELOADED",
    "CalibratedSpace",
    "Calibration",
    "SessionSpace",
    "Settings",
    "atlas_map",
    "bug_report",
    "calibrate",
    "calibrated_space",
    "calibration_controls",
    "calibration_help",
    "chart",
    "clamp",
    "corpus_from",
    "corpus_input",
    "corpus_source",
    "download_table",
    "estimate",
    "fit_texts",
    "fixed_model_download",
    "glossary",
    "literal",
    "meta_columns",
    "needs_model",
    "pairs_input",
    "plot_text",
    "pooling_help",
    "report_download",
    "run_button",
    "safe_default",
    "scored_pairs_input",
    "settings",
    "show_warnings",
    "sidebar",
    "space",
    "space_box",
    "space_corpus",
    "space_name",
    "space_vectors",
    "uploaded",
    "user_error",
    "warn_fit_size",
]
