"""The Atlas colours by a migration's adapter cosine (issue 53.3): ``isoscope.migrate.where.atlas_column`` writes it
into an atlas folder as an extra per-point column (``isoscope.atlas.extras``), checked on load like the build's
files, and the Atlas page's colours offer and code it."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.migrate.config import MigrationConfig
from isoscope.migrate.run import evaluate_migration

CONFIG = MigrationConfig(methods=("procrustes",), fit_fraction=0.5, curve=(), resamples=200)
EXACT = 1e-5  # float32 search vectors of unit rows: a cosine with itself is 1 within d x 6e-8


def test_the_atlas_colours_by_the_adapter_cosine(tmp_path):
    """An identity migration over an atlas's texts, written into the atlas as an extra column: load_atlas reads it
    back checked (1 on every held-out text, NaN on the fit pairs), the Atlas page offers it and codes it as a
    scale; a changed file is named as damaged, and a wrong length, a bad name or an infinite value is one line."""
    from isoscope.atlas.extras import write_extra
    from isoscope.atlas.folder import AtlasDamaged, load_atlas
    from isoscope.atlas.synthetic import synthetic_atlas
    from isoscope.dashboard.figures.atlas import colour_codes, colour_options
    from isoscope.migrate.where import atlas_column
    from isoscope.retrieval.task import build_task

    folder, _ = synthetic_atlas(tmp_path / "atlas", 200)
    atlas = load_atlas(folder)
    texts = [str(t) for t in atlas.texts]
    docs = list(dict.fromkeys(texts))
    rng = np.random.default_rng(0)
    D = rng.normal(size=(len(docs), 8))
    Q = D[:20] + 0.3 * rng.normal(size=(20, 8))
    task = build_task(
        "atlas", [(f"q{i}", f"q {i}") for i in range(20)], [(f"d{i}", t) for i, t in enumerate(docs)],
        [(f"q{i}", f"d{i}", 1) for i in range(20)],
    )  # fmt: skip
    result = evaluate_migration((Q, D), (Q, D), task, config=CONFIG)
    out = atlas_column(result, folder)
    again = load_atlas(folder)
    column = np.asarray(again.extras["adapter_cosine"], np.float64)
    fit = {docs[i] for i in result.fit_rows}
    held = np.array([t not in fit for t in texts])
    np.testing.assert_allclose(column[held], 1.0, atol=EXACT)
    assert np.isnan(column[~held]).all() and (~held).any()
    assert "extra: adapter_cosine" in colour_options(again)
    codes, _lut, legend = colour_codes(again, "raw", "extra: adapter_cosine")
    assert codes.shape == (200,) and len(legend) == 2
    for call, fragment in (
        (lambda: write_extra(folder, "x", np.zeros(199)), "200 points"),
        (lambda: write_extra(folder, "../x", np.zeros(200)), "name"),
        (lambda: write_extra(folder, "x", np.full(200, np.inf)), "infinite"),
        (lambda: write_extra(tmp_path, "x", np.zeros(200)), "not an atlas folder"),
    ):
        with pytest.raises(InputError, match=fragment):
            call()
    data = bytearray(out.read_bytes())
    data[-4:] = np.float32(0.5).tobytes()  # the last point's value changed after it was written
    out.write_bytes(bytes(data))
    with pytest.raises(AtlasDamaged, match=r"adapter_cosine\.npy was changed"):
        load_atlas(folder)
