"""``isoscope migrate``: tiny real models of different widths on the demo task, vectors files looked up by text, a
corpus alone, a task read from vectors files as the old side, the saved adapter and report, and the gate's exit
status (``--threshold``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from isoscope.migrate.adapters import Adapter
from tests.core.commands.cli_checks import exit_status, one_error_line
from tests.core.migrate.synthetic import rotation, synthetic
from tests.retrieval_helpers import write_beir
from tests.vector_files import write_parquet

FAST = ["--json", "--quiet", "--resamples", "200"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, Path]:
    """Two tiny random sentence-transformers models saved by sentence-transformers: bge-like (CLS, Dense 64->32,
    Normalize: 32 dimensions) and a mean-pooled one with query/passage prompts (64 dimensions)."""
    from tests.tiny_st_models import save_recipe

    root = tmp_path_factory.mktemp("migrate-models")
    return save_recipe("bge", root / "bge"), save_recipe("prompted", root / "prompted")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Synthetic tasks as BEIR folders with vectors files of their texts: ``old`` and ``rotated`` (B = A R: no
    better), and ``cone_old`` and ``cone_new`` (B = A W + 0.1 shrinks A's dominant direction: far better, and
    exactly affine, so ridge recovers it all and procrustes cannot)."""
    root = tmp_path_factory.mktemp("migrate-files")
    out = {"root": root}
    for name, s in (("", synthetic(seed=3)), ("cone_", synthetic(seed=0, cone=2.0, noise=0.3))):
        ids = (
            [(f"q{i}", t) for i, t in enumerate(s.task.queries)],
            [(f"d{i}", t) for i, t in enumerate(s.task.documents)],
        )
        qrels = [(q, d, 1) for q, docs in s.task.qrels.items() for d in docs]
        out[f"{name}beir"] = write_beir(root / f"{name}beir", *ids, qrels)
        texts = [*s.task.queries, *s.task.documents]
        A = np.vstack([s.Q, s.D]).astype(np.float32)  # (q + n, 16)
        W = rotation(16, 2) if not name else np.diag([0.02, *np.ones(15)]) @ rotation(16, 5)
        out[f"{name}old"] = write_parquet(root / f"{name}old.parquet", A, texts)
        out[f"{name}new"] = write_parquet(root / f"{name}new.parquet", A @ W + (0.1 if name else 0.0), texts)
        if not name:
            write_parquet(root / "queries.parquet", A[:60], texts[:60], extra={"_id": [f"q{i}" for i in range(60)]})
            write_parquet(root / "docs.parquet", A[60:], texts[60:], extra={"_id": [f"d{i}" for i in range(240)]})
            (root / "qrels.tsv").write_text("".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels))
            (root / "corpus.txt").write_text("\n".join(texts[60:]) + "\n", encoding="utf-8")
    return out


def _json(cli, capsys, argv: list[str], status: int = 0) -> tuple[dict, str]:
    assert exit_status(cli, ["migrate", *argv, *FAST]) == status
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_tiny_models_of_different_widths_on_the_demo_task(cli, capsys, tiny, tmp_path):
    bge, prompted = tiny
    out = tmp_path / "adapter"
    got, _ = _json(cli, capsys, ["--old", f"model={bge}", "--new", str(prompted), "--curve", "0.05,0.25",
                                 "--out", str(out)])  # fmt: skip
    assert got["task"]["name"] == "demo_retrieval (test)" and got["documents"] == 300
    assert (got["old"]["dims"], got["new"]["dims"]) == (32, 64) and got["new"]["kind"] == "model"
    assert got["new"]["provenance"]["prompts"] == {"query": "query: ", "document": "passage: "}  # the model's own
    assert got["old"]["provenance"]["prompts"] == {"query": "", "document": ""}
    assert got["fit"] == {"pairs": 15, "corpus_pairs": 15, "generic_pairs": 0, "fraction": 0.05}
    methods = {a["method"] for a in got["adapters"]}
    assert methods == {"procrustes", "ridge", "ridge:procrustes"}  # lowrank:64 and mlp left out, and said so
    assert any(n.startswith("lowrank:64 left out") for n in got["notes"])
    assert any(n.startswith("mlp left out: it needs at least 20 fit pairs") for n in got["notes"])
    assert [s["role"] for s in got["systems"][:2]] == ["old", "new"]
    assert sorted({p["pairs"] for p in got["curve"]}) == [15, 75]
    rec = got["recommendation"]
    assert rec["verdict"] in ("stay", "re-embed", "migrate") and rec["words"].startswith(rec["verdict"])
    saved = Adapter.load(out)
    assert saved.method == rec["method"] and saved.metadata_["direction"] == rec["direction"]
    assert saved.n_features_in_ == (64 if rec["direction"] == "new->legacy" else 32)


def test_vectors_files_looked_up_by_text_and_the_gate(cli, capsys, files, tmp_path):
    """The gate reads the kept share's 95% lower bound: a rotation (stay) keeps c/b = 1; on a pair where the new
    model is far better, ridge recovers all of the gain (migrate, exit 0) and procrustes little (re-embed: exit 1,
    one gate line on stderr, the result still on stdout)."""
    common = ["--curve", "none", "--fit-fraction", "0.25", "--threshold", "0.95"]
    got, err = _json(cli, capsys, ["--old", f"vectors={files['old']}:emb", "--new", f"vectors={files['new']}:emb",
                                   "--beir", str(files["beir"]), "--methods", "procrustes", *common])  # fmt: skip
    rec = got["recommendation"]
    assert (rec["verdict"], rec["measure"], rec["kept"]["ci_low"]) == ("stay", "c/b", 1.0) and "gate" not in err
    assert got["old"]["kind"] == "vectors" and got["old"]["name"] == "old.parquet:emb"
    cone = ["--old", f"vectors={files['cone_old']}:emb", "--new", f"vectors={files['cone_new']}:emb",
            "--beir", str(files["cone_beir"])]  # fmt: skip
    got, err = _json(cli, capsys, [*cone, "--methods", "ridge", *common])
    rec = got["recommendation"]
    assert (rec["verdict"], rec["method"], rec["direction"], rec["kept"]["ci_low"]) == ("migrate", "ridge",
                                                                                         "old->new", 1.0)  # fmt: skip
    assert "gate" not in err
    report = tmp_path / "r.html"
    got, err = _json(cli, capsys, [*cone, "--methods", "procrustes", *common, "--report", str(report)], status=1)
    assert got["recommendation"]["verdict"] == "re-embed" and got["recommendation"]["kept"]["ci_low"] < 0.95
    assert err.count("gate: ") == 1 and "below --threshold 0.95" in err and got["report"] == str(report)
    assert "Migration: switch models without re-embedding?" in report.read_text(encoding="utf-8")


def test_a_corpus_alone_and_a_task_of_vectors_as_the_old_side(cli, capsys, files):
    root = files["root"]
    got, _ = _json(cli, capsys, ["--old", f"vectors={files['old']}:emb", "--new", f"vectors={files['new']}:emb",
                                 "--corpus", str(root / "corpus.txt"), "--curve", "none", "--methods", "ridge"])  # fmt: skip
    assert got["task"] is None and got["metrics"] == [] and got["label_free_on"] == "held-out documents"
    assert "whether the new model is better here was not measured" in got["recommendation"]["words"]
    got, _ = _json(cli, capsys, ["--queries-vectors", f"{root / 'queries.parquet'}:emb", "--docs-vectors",
                                 f"{root / 'docs.parquet'}:emb", "--qrels", str(root / "qrels.tsv"),
                                 "--new", f"vectors={files['new']}:emb", "--curve", "none", "--methods", "procrustes"])  # fmt: skip
    assert got["task"]["queries"] == 60 and got["old"]["kind"] == "vectors"
    assert got["systems"][1]["ndcg@10"] == pytest.approx(got["systems"][0]["ndcg@10"], abs=1e-12)


def test_the_apply_hook(cli, capsys):
    """``isoscope migrate apply`` is the subcommand of isoscope.commands.migrate_apply where that module exists;
    without it, ``apply`` is no option of this command."""
    if importlib.util.find_spec("isoscope.commands.migrate_apply") is None:
        assert exit_status(cli, ["migrate", "apply"]) == 2
        assert "unrecognized arguments: apply" in capsys.readouterr().err
    else:
        assert exit_status(cli, ["migrate", "apply", "--help"]) == 0
        assert "--adapter" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--new", "x", "--methods", "pca"], "--methods: unknown"),
        (["--new", "x", "--fit-fraction", "1.5"], "--fit-fraction: the fit fraction must be between 0"),
        (["--new", "x", "--directions", "sideways"], "--directions: unknown direction 'sideways'"),
        (["--new", "x", "--curve", "0.1,abc"], "--curve: give shares separated by commas"),
        (["--new", "x", "--threshold", "2"], "--threshold: the threshold must be between 0 and 1"),
        (["--old", "x"], "give the new model"),
        (["--new", "x", "--qrels", "q.tsv"], "--qrels goes with"),
        (["--new", "x", "--old", "pooling=bogus"], "--old: space 'pooling=bogus'"),
    ],
)
def test_options_that_cannot_run_are_one_line(cli, capsys, argv, fragment):
    assert exit_status(cli, ["migrate", *argv, "--quiet"]) == 2
    assert fragment in one_error_line(capsys)
