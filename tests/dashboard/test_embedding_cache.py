"""One embedding cache for the command line and the app (issue 50, item 5): ``isoscope embed`` then the app on the
same texts and model runs no forward pass, and the reverse. The passes are counted by a forward hook on each real
model (the command line's torch model, the app's ONNX Runtime engine), never by a mock of either."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isoscope.dashboard.services import embeddings
from isoscope.dashboard.services.models import ModelKey, fast_encoder
from isoscope.encode.pooling import layer_names
from tests.core.encode.test_embed import ForwardRows


def _corpus(tmp_path: Path, tag: str) -> tuple[Path, list[str]]:
    """A corpus file of texts no other test embeds (the app's in-memory caches cannot answer for them), one repeated."""
    texts = [f"{tag}: sentence {i} about {topic}" for i, topic in enumerate(["rain", "chess", "bread", "trains"] * 5)]
    texts.append(texts[3])
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return path, texts


def test_the_app_reads_what_isoscope_embed_cached(cli_main, encoder, tmp_cache, tmp_path) -> None:
    """``isoscope embed`` (256 tokens, torch) caches its pass with the companions the app's pages read: the app
    (128 tokens, ONNX Runtime) embeds the same texts, their layers and another pooling without running its model,
    and gets the command line's vectors."""
    path, texts = _corpus(tmp_path, "cli first")
    out = tmp_path / "vectors.npy"
    with ForwardRows(encoder.model) as cli:
        assert cli_main(["embed", "--input", str(path), "--out", str(out), "--quiet"]) == 0
    assert sum(cli.rows) == len(set(texts))  # each distinct text once
    layers = layer_names(encoder.num_layers)
    with ForwardRows(fast_encoder(ModelKey()).model) as app:
        got = embeddings.embed(
            ModelKey(), texts, "model", 128
        )  # the sidebar's defaults: the model's pooling, 128 tokens
        others = embeddings.embed_many(ModelKey(), texts, ["mean", *layers], 128)  # Anisotropy's other vectors
    assert app.rows == [], "the app ran its model on texts the command line had embedded"
    np.testing.assert_array_equal(got.array, np.load(out))
    assert set(others) == {"mean", *layers}


def test_isoscope_embed_reads_what_the_app_cached(cli_main, encoder, tmp_cache, tmp_path) -> None:
    path, texts = _corpus(tmp_path, "app first")
    with ForwardRows(fast_encoder(ModelKey()).model) as app:
        got = embeddings.embed(ModelKey(), texts, "model", 128)
    assert sum(app.rows) == len(set(texts))
    out = tmp_path / "vectors.npy"
    with ForwardRows(encoder.model) as cli:
        assert cli_main(["embed", "--input", str(path), "--out", str(out), "--quiet"]) == 0
        cls = ["embed", "--input", str(path), "--out", str(tmp_path / "cls.npy"), "--pooling", "cls", "--quiet"]
        assert cli_main(cls) == 0  # a companion of the app's pass
    assert cli.rows == [], "isoscope embed ran its model on texts the app had embedded"
    np.testing.assert_array_equal(np.load(out), got.array)
