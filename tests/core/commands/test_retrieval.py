"""``isoscope retrieval``: a BEIR folder through the command, its JSON (one row per variant, its interval and test
against raw), the per-query file, prompts, a table and two vectors files, options that do not go together."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from isoscope.paths import DEMO_RETRIEVAL
from tests.core.commands.cli_checks import exit_status, one_error_line


def _run(cli, capsys, *argv: str) -> dict:
    assert cli(["retrieval", *argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_beir_folder_one_row_per_variant_with_its_test_and_the_per_query_file(cli, capsys, tmp_path: Path) -> None:
    out = tmp_path / "per_query.csv"
    got = _run(
        cli, capsys, "--beir", str(DEMO_RETRIEVAL), "--calibrate", "centre", "--calibrate", "csls",
        "--per-query-out", str(out), "--resamples", "1000",
    )  # fmt: skip
    assert got["task"] == {"name": "demo_retrieval (test)", "queries": 55, "documents": 300, "judgements": 68,
                           "unjudged_queries": 0}  # fmt: skip
    assert [v["variant"] for v in got["variants"]] == ["raw", "centre", "csls"]
    assert got["metrics"] == ["ndcg@10", "recall@10", "recall@100", "mrr@10", "map@100"] and got["depth"] == 100
    raw, centre = got["variants"][0], got["variants"][1]
    assert raw["vs_raw"] == {} and raw["fit_on"] is None
    test = centre["vs_raw"]["ndcg@10"]
    assert test["verdict"] in ("better", "worse", "no difference") and test["n_queries"] == 55
    assert test["ci_low"] <= test["mean_difference"] <= test["ci_high"]
    assert test["mean_difference"] == pytest.approx(centre["ndcg@10"] - raw["ndcg@10"], abs=1e-12)
    assert centre["fit_on"] == "documents" and centre["n_fit"] == 300
    assert {"avg_cosine", "isoscore", "hubness_skew"} <= set(centre)
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 * 55 and set(rows[0]) >= {"variant", "query_id", "query", "ndcg@10", "map@100"}
    mean = np.mean([float(r["ndcg@10"]) for r in rows if r["variant"] == "centre"])
    assert mean == pytest.approx(centre["ndcg@10"], rel=1e-9)


def test_a_prompt_reaches_the_queries(cli, capsys) -> None:
    """A query prompt changes the query vectors (hence the scores) and is reported; the documents keep none."""
    plain = _run(cli, capsys, "--calibrate", "raw", "--resamples", "100")
    prompted = _run(cli, capsys, "--calibrate", "raw", "--resamples", "100", "--query-prompt", "Represent this query: ")
    assert prompted["prompts"] == {"query": "Represent this query: ", "document": ""}
    assert prompted["variants"][0]["map@100"] != plain["variants"][0]["map@100"]
    assert exit_status(cli, ["retrieval", "--query-prompt-name", "query", "--quiet"]) == 2  # the model has none
    assert "has prompts: none" in one_error_line(capsys)


def test_a_table_and_two_vectors_files(cli, capsys, tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text(
        "query,document\nwhere do penguins live,Penguins live in the south.\nhow hot is the sun,The Sun is hot.\n"
        ",Cats sleep a lot.\n,Rain is wet.\n"
    )
    got = _run(cli, capsys, "--table", str(table), "--calibrate", "centre", "--resamples", "100")
    assert got["task"]["documents"] == 4 and got["variants"][0]["ndcg@10"] == 1.0

    rng = np.random.default_rng(0)
    D = rng.normal(size=(40, 8)).astype(np.float32)
    np.save(tmp_path / "q.npy", D[:5] + 0.01)
    np.save(tmp_path / "d.npy", D)
    (tmp_path / "qrels.tsv").write_text("".join(f"{i}\t{i}\t1\n" for i in range(5)))
    got = _run(cli, capsys, "--queries-vectors", str(tmp_path / "q.npy"), "--docs-vectors", str(tmp_path / "d.npy"),
               "--qrels", str(tmp_path / "qrels.tsv"), "--calibrate", "centre", "--resamples", "100")  # fmt: skip
    assert got["variants"][0]["mrr@10"] == 1.0 and got["model"] == "q.npy | d.npy"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--queries-vectors", "q.npy"], "go together"),
        (["--qrels", "q.tsv"], "--qrels goes with"),
        (["--calibrate", "pca"], "unknown fix 'pca'"),
        (["--calibrate", "csls:0"], "csls:K"),
        (["--depth", "5"], "at least 10"),
        (["--beir", "/nonexistent/folder"], "file not found"),
    ],
)
def test_options_that_do_not_go_together_are_one_line(cli, capsys, argv: list[str], fragment: str) -> None:
    assert exit_status(cli, ["retrieval", *argv, "--quiet"]) == 2
    assert fragment in one_error_line(capsys)
