"""isoscope.encode.chunked: resumable chunked embedding on one machine, and the embed command's engine options."""

from __future__ import annotations

import json

import numpy as np
import pytest

import isoscope.encode.chunked as ce
from isoscope.cli import main
from isoscope.encode.embed import EmbedConfig, encode
from isoscope.errors import InputError
from tests.core.commands.cli_checks import one_error_line

TEXTS = [
    f"{subject} {verb} the {thing} {when}."
    for subject in ("A cat", "The old man", "Two children", "My neighbour", "A small robot")
    for verb in ("watches", "paints", "forgets")
    for thing in ("river", "cake")
    for when in ("today", "at night")
]  # 60 short texts
CONFIG = EmbedConfig(batch_size=16, max_length=64)


class StopAfter(Exception):
    pass


@pytest.fixture(scope="module")
def reference(encoder) -> np.ndarray:
    """The single-call embeddings of TEXTS, (60, 384)."""
    return encode(encoder, TEXTS, None, config=CONFIG)  # the model's own pooling, embed_to_npy's default


@pytest.fixture()
def counted(monkeypatch) -> list[int]:
    """Records how many texts each ``encode`` call inside isoscope.encode.chunked embedded (the real model runs)."""
    sizes: list[int] = []

    def spy(encoder, texts, *args, **kwargs):
        sizes.append(len(texts))
        return encode(encoder, texts, *args, **kwargs)

    monkeypatch.setattr(ce, "encode", spy)
    return sizes


def test_chunked_run_equals_one_call(tmp_path, encoder, reference, counted):
    out = tmp_path / "vectors.npy"
    calls: list[tuple[int, int]] = []
    run = ce.embed_to_npy(encoder, TEXTS, out, config=CONFIG, chunk_size=25, progress=lambda d, t: calls.append((d, t)))
    assert (run.n, run.dim, run.num_chunks) == (60, 384, 3)
    assert run.computed_chunks == [0, 1, 2] and run.resumed_chunks == []
    assert counted == [25, 25, 10]
    assert calls == [(25, 60), (50, 60), (60, 60)]
    vectors = np.load(out, allow_pickle=False)
    assert vectors.dtype == np.float32 and vectors.shape == (60, 384)
    np.testing.assert_allclose(vectors, reference, atol=1e-5)
    assert not ce.partial_path(out).exists() and not ce.progress_path(out).exists()


def test_interrupted_run_resumes_with_the_remaining_chunks(tmp_path, encoder, reference, counted):
    out = tmp_path / "vectors.npy"

    def stop_after_two(done: int, total: int) -> None:
        if done >= 2 * 13:
            raise StopAfter

    with pytest.raises(StopAfter):
        ce.embed_to_npy(encoder, TEXTS, out, config=CONFIG, chunk_size=13, progress=stop_after_two)
    assert not out.exists()  # never a half-written result under the final name
    assert json.loads(ce.progress_path(out).read_text())["done"] == [0, 1]
    assert counted == [13, 13]

    counted.clear()
    run = ce.embed_to_npy(encoder, TEXTS, out, config=CONFIG, chunk_size=13)
    assert run.resumed_chunks == [0, 1] and run.computed_chunks == [2, 3, 4]
    assert counted == [13, 13, 8]  # only the missing chunks were embedded
    straight = tmp_path / "straight.npy"
    ce.embed_to_npy(encoder, TEXTS, straight, config=CONFIG, chunk_size=13)
    np.testing.assert_array_equal(np.load(out), np.load(straight))
    np.testing.assert_allclose(np.load(out), reference, atol=1e-5)


def test_changed_input_starts_over(tmp_path, encoder, counted):
    out = tmp_path / "vectors.npy"

    def stop(done: int, total: int) -> None:
        raise StopAfter

    with pytest.raises(StopAfter):
        ce.embed_to_npy(encoder, TEXTS[:40], out, config=CONFIG, chunk_size=20, progress=stop)
    counted.clear()
    other = [t.upper() for t in TEXTS[:40]]
    run = ce.embed_to_npy(encoder, other, out, config=CONFIG, chunk_size=20)
    assert run.resumed_chunks == [] and run.computed_chunks == [0, 1] and counted == [20, 20]
    np.testing.assert_allclose(np.load(out), encode(encoder, other, None, config=CONFIG), atol=1e-5)


def test_text_file_is_streamed_line_by_line(tmp_path, encoder, reference):
    src = tmp_path / "corpus.txt"
    lines = []
    for i, t in enumerate(TEXTS):
        lines.append(f"  {t}  ")
        if i % 20 == 0:
            lines.append("")  # blank lines are skipped, as load_corpus does
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert ce.scan_source(src)[0] == 60
    out = tmp_path / "vectors.npy"
    run = ce.embed_to_npy(encoder, src, out, config=CONFIG, chunk_size=32)
    assert run.n == 60
    np.testing.assert_allclose(np.load(out), reference, atol=1e-5)


def test_input_errors(tmp_path, encoder):
    with pytest.raises(InputError, match=r"must end in \.npy"):
        ce.embed_to_npy(encoder, TEXTS, tmp_path / "x.csv")
    with pytest.raises(InputError, match="no texts"):
        ce.embed_to_npy(encoder, [], tmp_path / "x.npy")
    with pytest.raises(ValueError, match="unknown pooling"):
        ce.embed_to_npy(encoder, TEXTS, tmp_path / "x.npy", pooling="median")
    mixed = tmp_path / "mixed.txt"  # a UTF-8 file with one Windows-1252 line: decoded line by line, named
    mixed.write_bytes(b"fine line\n\xff\xfe\xfa broken\n")
    run = ce.embed_to_npy(encoder, mixed, tmp_path / "x.npy")
    assert run.n == 2 and any("line 2" in w and "Latin-1" in w for w in run.warnings), run.warnings
    (tmp_path / "corpus.csv").write_text("text\nhello\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"\.txt file"):
        ce.embed_to_npy(encoder, tmp_path / "corpus.csv", tmp_path / "x.npy")


def test_cli_chunked_local_engine(cli, tmp_path, reference, capsys):
    src = tmp_path / "corpus.txt"
    src.write_text("\n".join(TEXTS), encoding="utf-8")
    out = tmp_path / "v.npy"
    argv = ["embed", "--input", str(src), "--out", str(out), "--chunk-size", "40", "--batch-size", "16"]
    assert cli([*argv, "--max-length", "64", "--quiet", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 60 and result["chunks"] == 2 and result["computed_chunks"] == 2
    np.testing.assert_allclose(np.load(out), reference, atol=1e-5)


def test_cli_engine_options_are_checked(tmp_path, capsys):
    src = tmp_path / "corpus.txt"
    src.write_text("one\ntwo\n", encoding="utf-8")
    assert main(["embed", "--input", str(src), "--engine", "ray"]) == 2
    assert "--shard-dir" in one_error_line(capsys)
    assert main(["embed", "--input", str(src)]) == 2
    assert "--out is required" in one_error_line(capsys)
    with pytest.raises(SystemExit) as usage:  # a count out of isoscope.data.limits.COUNTS: refused while parsing
        main(["embed", "--input", str(src), "--out", str(tmp_path / "v.npy"), "--chunk-size", "0"])
    assert usage.value.code == 2
    assert "--chunk-size" in one_error_line(capsys)
