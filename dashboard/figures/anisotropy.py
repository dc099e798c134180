"""The Anisotropy page's figures: pairwise cosines and singular-value spectra of each space, and every
metric per layer (``isoscope.space.figures``, which the one-file report draws too)."""

from __future__ import annotations

from isoscope.space.figures import cosine_histograms, layer_heatmap, spectra

__all__ = ["cosine_histograms", "layer_heatmap", "spectra"]
