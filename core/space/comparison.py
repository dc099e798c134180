"""``Comparison``: how two spaces of the same texts differ, with the numbers of ``isoscope compare``.

cmp = isoscope.compare(space, space.calibrate("whitening"), k=10)
cmp.cka_linear, cmp.overlap_at_k, cmp.hubness["b"]["skewness"]; cmp.to_dict()  # the keys of compare --json
cmp.maps()                                                                       # two aligned, linked maps

The measuring is ``isoscope.comparison.compare_spaces`` (CKA, exact neighbour overlap, hubness, Procrustes-aligned
maps) and, with ``layers=True``, ``isoscope.comparison.layer_cka`` over the mean-pooled layers of both models.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from isoscope.comparison import CKAMatrix, ComparisonMetrics
    from isoscope.space.space import Space


@dataclass
class Comparison:
    """Two spaces ``a`` and ``b`` of the same texts and everything ``compare_spaces`` measured between them."""

    a: Space
    b: Space
    measured: ComparisonMetrics
    layers: CKAMatrix | None = None  # layers of A's model x layers of B's, with ``layers=True``
    top: int = 10  # texts listed as most changed and as hubs

    @property
    def n_texts(self) -> int:
        return self.measured.n

    @property
    def k(self) -> int:
        return self.measured.overlap.k

    @property
    def cka_linear(self) -> float:
        return self.measured.cka_linear

    @property
    def cka_debiased(self) -> float:
        return self.measured.cka_debiased

    @property
    def overlap_at_k(self) -> float:
        return self.measured.overlap_at_k

    @property
    def overlap(self) -> np.ndarray:
        """Each text's Jaccard of its k neighbours in A and in B. (n,)"""
        return self.measured.overlap.overlap

    @property
    def overlap_histogram(self) -> pd.DataFrame:
        return self.measured.overlap.histogram()

    @property
    def most_changed(self) -> list[dict]:
        return self.measured.moved(self.a.texts, self.top)

    @property
    def hubness(self) -> dict[str, dict]:
        texts = self.a.texts
        return {
            "a": self.measured.hubness_a.summary(texts, self.top),
            "b": self.measured.hubness_b.summary(texts, self.top),
        }

    @property
    def procrustes_disparity(self) -> float | None:
        return self.measured.maps.disparity if self.measured.maps is not None else None

    @property
    def cka_layers(self) -> np.ndarray | None:
        return None if self.layers is None else self.layers.linear

    @property
    def cka_layers_debiased(self) -> np.ndarray | None:
        return None if self.layers is None else self.layers.debiased

    def to_dict(self) -> dict[str, Any]:
        """The keys of ``isoscope compare --json``: both spaces, CKA, overlap, hubness, maps (and layers)."""
        out: dict[str, Any] = {
            side: {"spec": sp.label, "name": sp.name, "model": sp.provenance.get("model"), "dims": sp.shape[1]}
            for side, sp in (("a", self.a), ("b", self.b))
        }
        out.update(self.measured.to_dict(self.a.texts, self.top))
        if self.layers is not None:
            from isoscope.encode.pooling import layer_names

            out["layers_a"] = layer_names(self.layers.linear.shape[0] - 1)
            out["layers_b"] = layer_names(self.layers.linear.shape[1] - 1)
            out["cka_layers"], out["cka_layers_debiased"] = self.layers.linear, self.layers.debiased
        out["warnings"] = [*self.a.warnings, *self.b.warnings]
        return out

    def maps(self, color: str | None = None, **kwargs: Any) -> Any:
        """A's and B's aligned 2-D maps side by side, with linked selection and hover (``isoscope.space.widget``)."""
        from isoscope.space.widget import comparison_maps

        return comparison_maps(self, color=color, **kwargs)

    def report(self, path: str | Path | None = None, **kwargs: Any) -> Any:
        """A one-file HTML report of the comparison (``isoscope.space.report.comparison_report``)."""
        from isoscope.space.report import comparison_report

        return comparison_report(self, path, **kwargs)

    def _repr_html_(self) -> str:
        from isoscope.space.cards import Card, CardStat
        from isoscope.space.html import bars_svg, fmt

        ha, hb = self.measured.hubness_a, self.measured.hubness_b
        hist = self.overlap_histogram
        return Card(
            title="Compare · A vs B",
            subtitle=f"A: {self.a.name} ({self.a.label}) · B: {self.b.name} ({self.b.label}) · {self.n_texts:,} texts",
            stats=[
                CardStat("CKA linear", fmt(self.cka_linear), "1 = the same up to rotation and scale"),
                CardStat("CKA debiased", fmt(self.cka_debiased)),
                CardStat(f"overlap@{self.k}", fmt(self.overlap_at_k), "mean Jaccard of each text's k neighbours"),
                CardStat("Procrustes", fmt(self.procrustes_disparity), "residual of B's map aligned onto A's"),
                CardStat("hubness skew", f"{fmt(ha.skewness, '.2f')} → {fmt(hb.skewness, '.2f')}"),
            ],
            figure=bars_svg(hist["share"].to_numpy(), label="shared neighbours histogram"),
            caption=f"texts sharing 0..{self.k} of their {self.k} neighbours",
            kind="comparison",
        ).html()


def _same_texts(a: Space, b: Space) -> None:
    if len(a) != len(b):
        raise InputError(f"A has {len(a):,} rows and B {len(b):,}: compare two spaces of the same texts")
    if a.texts is not None and b.texts is not None and a.texts != b.texts:
        raise InputError("A and B hold different texts (or the same in another order); compare the same texts")


def measure(
    a: Space,
    b: Space,
    *,
    k: int = 10,
    layers: bool = False,
    map: str = "pca",
    map_points: int = 5000,
    seed: int = 0,
    top: int = 10,
    progress: bool = True,
) -> Comparison:
    """How ``b`` differs from ``a`` (two spaces of the same texts, rows in the same order): CKA, overlap@k,
    hubness and aligned ``map`` maps (pca, umap, tsne or none) of ``map_points`` texts; ``layers=True`` adds the
    layer x layer CKA of both models. ``isoscope.compare`` checks that both are spaces, then calls this."""
    from isoscope.comparison import compare_spaces, layer_cka
    from isoscope.space.progress import progress_callback

    _same_texts(a, b)
    if map not in ("pca", "umap", "tsne", "none"):
        raise InputError(f"map must be one of pca, umap, tsne, none; got {map!r}")
    measured = compare_spaces(
        a.vectors,
        a.vectors if b is a else b.vectors,
        k,
        maps=map != "none",
        map_method=map if map != "none" else "pca",
        map_points=map_points,
        seed=seed,
        progress=lambda stage: progress_callback(f"compare: {stage}", enabled=progress),
    )
    matrix = None
    if layers:
        root_a, root_b = a.lineage()[0], b.lineage()[0]
        la = root_a.layer_vectors(progress)
        same = root_a.encoder is not None and root_b.encoder is not None
        same = same and root_a.encoder.fingerprint == root_b.encoder.fingerprint and root_a.texts == root_b.texts
        matrix = layer_cka(la, None if same else root_b.layer_vectors(progress))
    return Comparison(a, b, measured, matrix, top)
