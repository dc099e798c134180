"""Hostile pairs files: isoscope.data.load_pairs, ``python -m isoscope sts --pairs``, and the Sentence pairs upload."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from isoscope.data import load_pairs, safe_csv
from isoscope.errors import InputError, printable
from tests.dashboard.conftest import open_page
from tests.hostile.cases import ACCEPTED_PAIRS, FORMULAS, GOOD_PAIRS, GOOD_PAIRS_CSV, HTML, REFUSED_PAIRS, ids, write
from tests.hostile.conftest import assert_app_refused, assert_cli_refused, assert_one_line, new_app

# ---------------------------------------------------------------- loader


@pytest.mark.parametrize(("case", "name", "data", "fragments"), REFUSED_PAIRS, ids=ids(REFUSED_PAIRS))
def test_loader_refuses(case: str, name: str, data: bytes, fragments: tuple[str, ...], tmp_path: Path) -> None:
    for source in (data, write(tmp_path, name, data)):  # uploaded bytes and a path on disk
        with pytest.raises(InputError) as err:
            load_pairs(source, name)
        msg = str(err.value)
        assert_one_line(msg)
        assert name in msg  # says which file
        for f in fragments:
            assert f.lower() in msg.lower(), f"{f!r} not in {msg!r}"


@pytest.mark.parametrize(("case", "name", "data", "check"), ACCEPTED_PAIRS, ids=ids(ACCEPTED_PAIRS))
def test_loader_accepts(case: str, name: str, data: bytes, check, tmp_path: Path) -> None:
    pairs = load_pairs(write(tmp_path, name, data))
    check(pairs)
    for w in pairs.warnings:
        assert_one_line(w)


def test_loader_path_errors(tmp_path: Path) -> None:
    for source, fragment in ((tmp_path / "missing.csv", "not found"), (tmp_path, "folder")):
        with pytest.raises(InputError, match=fragment) as err:
            load_pairs(source)
        assert_one_line(str(err.value))


def test_formulas_stay_text_and_are_neutralised_in_downloads() -> None:
    rows = [[f, "x", 1] for f in FORMULAS]
    pairs = load_pairs(
        pd.DataFrame(rows, columns=["sentence1", "sentence2", "score"]).to_csv(index=False).encode(), "f.csv"
    )
    assert pairs.sentence1 == list(FORMULAS)  # kept as typed, never evaluated
    assert pairs.scores.tolist() == [1.0] * len(FORMULAS)
    out = pd.read_csv(io.BytesIO(safe_csv(pairs.to_frame())), dtype=str, keep_default_na=False)
    for cell in out["sentence1"]:
        assert cell[0] not in "=+-@", cell
        assert cell.startswith("'") and cell[1:] in FORMULAS


def test_formula_score_is_not_evaluated() -> None:
    """A score cell like =1+1 or +5 is not computed: =1+1 is dropped as not a number, +5 is read as 5."""
    p = load_pairs(b"sentence1,sentence2,score\nA,B,=1+1\nC,D,+5\nE,F,@SUM(1)\n", "s.csv")
    assert p.sentence1 == ["C"] and p.scores.tolist() == [5.0]


# ---------------------------------------------------------------- CLI


@pytest.mark.parametrize(("case", "name", "data", "fragments"), REFUSED_PAIRS, ids=ids(REFUSED_PAIRS))
def test_cli_sts_refuses(cli, case: str, name: str, data: bytes, fragments: tuple[str, ...], tmp_path: Path) -> None:
    assert_cli_refused(cli("sts", "--pairs", str(write(tmp_path, name, data))), *fragments)


def test_cli_sts_refuses_missing_file_and_no_scores(cli, tmp_path: Path) -> None:
    assert_cli_refused(cli("sts", "--pairs", str(tmp_path / "nope.csv")), "not found")
    no_scores = write(tmp_path, "n.csv", b"sentence1,sentence2\nA cat.,A dog.\n")
    assert_cli_refused(cli("sts", "--pairs", str(no_scores)), "score")
    good = write(tmp_path, "g.csv", GOOD_PAIRS_CSV)
    assert_cli_refused(cli("sts", "--pairs", str(good), "--pooling", "nonsense"), "pooling")


@pytest.mark.parametrize(
    ("case", "name", "data", "check"),
    [c for c in ACCEPTED_PAIRS if c[0] != "html_and_script"],  # all-'plain' second column: constant cosines
    ids=[c[0] for c in ACCEPTED_PAIRS if c[0] != "html_and_script"],
)
def test_cli_sts_accepts_with_warnings(cli, case: str, name: str, data: bytes, check, tmp_path: Path) -> None:
    r = cli("sts", "--pairs", str(write(tmp_path, name, data)), "--json")
    assert r.code == 0, r.err
    result = json.loads(r.out.strip().splitlines()[-1])
    assert r.err_lines == [f"warning: {printable(w)}" for w in result["warnings"]]  # stderr: the warnings alone
    pairs = load_pairs(data, name)
    assert result["n_pairs"] == len(pairs)
    assert result["warnings"] == pairs.warnings


# ---------------------------------------------------------------- dashboard upload (AppTest)


# Streamlit's uploader itself refuses extensions outside its list (in the browser and on the server).
APP_REFUSED = [c for c in REFUSED_PAIRS if c[0] != "unsupported_extension"]


def _upload(at, name: str, data: bytes):
    at.file_uploader(key="sim_upload").set_value((name, data, "text/csv")).run()
    return at


@pytest.fixture(scope="module")
def loaded():
    """One Sentence pairs session with a good file uploaded; every refused upload below must leave it loaded."""
    at = open_page(new_app(), "similarity")
    at.radio(key="sim_source").set_value("Upload a file").run()
    _upload(at, "good.csv", GOOD_PAIRS_CSV)
    assert not at.exception and not at.error
    assert len(at.dataframe[-1].value) == len(GOOD_PAIRS)
    return at


def _fresh_upload_page():
    at = open_page(new_app(), "similarity")
    at.radio(key="sim_source").set_value("Upload a file").run()
    return at


def _table(at) -> pd.DataFrame:
    tables = [d.value for d in at.dataframe if "sentence1" in d.value.columns]
    assert tables, "no pairs table"
    return tables[-1]


@pytest.mark.parametrize(("case", "name", "data", "fragments"), APP_REFUSED, ids=ids(APP_REFUSED))
def test_app_upload_refused_keeps_good_file(loaded, case, name, data, fragments) -> None:
    metric = {m.label: m.value for m in loaded.metric}
    _upload(loaded, name, data)
    assert_app_refused(loaded, *fragments)
    assert _table(loaded)["sentence1"].tolist() == [p[0] for p in GOOD_PAIRS]  # the good file is still there
    assert {m.label: m.value for m in loaded.metric} == metric
    assert "good.csv" in " ".join(c.value for c in loaded.caption).replace("\\", "")


APP_ACCEPTED = ("utf16_with_bom", "latin1", "sentence_100k_chars", "tabs_in_csv", "utf8_with_one_latin1_line")


@pytest.mark.parametrize(
    ("case", "name", "data", "check"),
    [c for c in ACCEPTED_PAIRS if c[0] in APP_ACCEPTED],
    ids=list(APP_ACCEPTED),
)
def test_app_upload_with_warning(case, name, data, check) -> None:
    loaded = _fresh_upload_page()
    _upload(loaded, name, data)
    assert not loaded.exception and not loaded.error
    expected = load_pairs(data, name)
    assert _table(loaded)["sentence1"].tolist() == expected.sentence1
    warnings = [w.value.replace("\\", "") for w in loaded.warning]
    assert len(warnings) == len(expected.warnings) >= 1
    for w in warnings:
        assert_one_line(w)


def test_app_formulas_and_html_shown_literally() -> None:
    loaded = _fresh_upload_page()
    rows = [[f, h, 2.0] for f, h in zip(FORMULAS, (*HTML, "<u>u</u>"), strict=True)]
    data = pd.DataFrame(rows, columns=["sentence1", "sentence2", "score"]).to_csv(index=False).encode()
    _upload(loaded, "hostile.csv", data)
    assert not loaded.exception and not loaded.error
    table = _table(loaded)
    assert table["sentence1"].tolist() == list(FORMULAS)
    assert table["sentence2"].tolist() == [r[1] for r in rows]
    # no user text reaches a Markdown/HTML element: it only appears in the dataframe
    rendered = [m.value for m in loaded.markdown] + [c.value for c in loaded.caption] + [t.value for t in loaded.title]
    for text in (*FORMULAS, *HTML):
        assert not any(text in r for r in rendered), text


@pytest.mark.parametrize(
    "rows",
    [GOOD_PAIRS[:1], GOOD_PAIRS[:2], [[a, b, 3.0] for a, b, _ in GOOD_PAIRS]],
    ids=["one_pair", "two_pairs", "one_score_value"],
)
def test_app_undefined_correlation_is_not_shown_as_nan(rows) -> None:
    """Issue 17: one or two pairs gave Spearman null silently (the CLI now refuses); the page says why there is
    no correlation and shows the cosines instead of a 'nan' metric."""
    from tests.hostile.cases import csv_bytes

    at = _fresh_upload_page()
    _upload(at, "few.csv", csv_bytes(rows, ["sentence1", "sentence2", "score"]))
    assert not at.exception and not at.error
    assert any("at least 3 pairs whose scores differ" in i.value for i in at.info)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics and all(label.startswith("cosine") and "nan" not in value for label, value in metrics.items())
