"""AppTest: the Atlas page on a small atlas folder (synthetic sentences with precomputed vectors, built in
seconds: the tiles, the point under the cursor, a map selection) and on the demo corpus (PCA layout, so no UMAP
compile; the heavy tier: search, colours, the raw/calibrated switch, the jump to Neighbours), and bad input
through the file given to ``isoscope app``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from isoscope.data import load_corpus
from isoscope.paths import DEMO_CORPUS
from tests.conftest import private_cache
from tests.dashboard.conftest import APP


@pytest.fixture()
def atlas_app(tmp_path, monkeypatch) -> AppTest:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path / "cache")))
    at = AppTest.from_file(APP, default_timeout=900)  # the first build of the 4,846-text demo atlas
    at.session_state["atlas_layout"] = "pca"
    at.switch_page("views/atlas.py").run()
    assert not at.exception, at.exception
    return at


FOLDER_POINTS = 2_000


@pytest.fixture(scope="module")
def atlas_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from isoscope.atlas.synthetic import synthetic_atlas

    folder, _ = synthetic_atlas(tmp_path_factory.mktemp("atlas") / "small", FOLDER_POINTS, calibrate="whitening")
    return folder


@pytest.fixture()
def folder_app(atlas_folder: Path, tmp_path, monkeypatch) -> AppTest:
    """The Atlas page on ``atlas_folder`` given as ``ISOSCOPE_ATLAS_DIR`` (its first source: nothing is built)."""
    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path / "cache")))
    monkeypatch.setenv("ISOSCOPE_ATLAS_DIR", str(atlas_folder))
    at = AppTest.from_file(APP, default_timeout=300)
    at.switch_page("views/atlas.py").run()
    assert not at.exception, at.exception
    assert at.radio(key="atlas_source").value == "Atlas folder"
    return at


def map_data(at: AppTest) -> dict:
    """What the page handed the map component (``figures.atlas.map_data``), as the browser gets it."""
    (component,) = at.get("bidi_component")
    return json.loads(component.proto.json)


def captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def client():
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from isoscope.dashboard import tiles

    return TestClient(Starlette(routes=tiles.routes()))


def test_an_atlas_folder_map_is_served_as_tiles_with_labels_by_level(folder_app: AppTest) -> None:
    at = folder_app
    data = map_data(at)
    assert data["world"]["maxLevel"] >= 8 and data["highlight"] is None and data["showLabels"]
    assert data["levels"] >= 2 and {lab[0] for lab in data["labels"]} == set(range(data["levels"]))
    assert all(isinstance(lab[4], str) and lab[4] for lab in data["labels"])
    assert f"{FOLDER_POINTS:,} points, every one drawn at every zoom" in captions(at)
    http = client()
    top = http.get(data["tiles"].format(z=0, x=0, y=0))
    assert top.status_code == 200 and top.headers["content-type"] == "image/png" and top.content[:4] == b"\x89PNG"
    deep = data["world"]["maxLevel"]
    assert http.get(data["tiles"].format(z=deep + 1, x=0, y=0)).status_code == 404  # outside the pyramid
    assert (
        http.get(data["tiles"].replace(data["tiles"].split("/")[3], "not-a-token").format(z=0, x=0, y=0)).status_code
        == 404
    )


def test_the_point_under_the_cursor_comes_from_the_server(folder_app: AppTest) -> None:
    data = map_data(folder_app)
    http = client()
    x0, y0, x1, y1 = data["bounds"]
    hits = 0
    for fx, fy in ((0.3, 0.3), (0.5, 0.5), (0.7, 0.4)):
        x, y = x0 + fx * (x1 - x0), y0 + fy * (y1 - y0)
        got = http.get(data["pick"], params={"x": x, "y": y, "r": (x1 - x0) / 4}).json()
        if got["row"] >= 0:
            hits += 1
            assert isinstance(got["text"], str) and got["text"] and got["cluster"]
            assert (got["x"] - x) ** 2 + (got["y"] - y) ** 2 <= ((x1 - x0) / 4) ** 2 * 2
    assert hits >= 1
    assert http.get(data["pick"], params={"x": x1 + 100, "y": y1 + 100, "r": 0.01}).json() == {"row": -1}
    assert http.get(data["pick"], params={"x": "nan", "y": 0, "r": 1}).status_code == 404


def test_search_lights_up_selects_and_measures(atlas_app: AppTest) -> None:
    at = atlas_app
    at.text_input(key="atlas_search").set_value("football").run()
    assert not at.exception, at.exception
    data = map_data(at)
    assert data["highlight"] and client().get(data["highlight"].format(z=0, x=0, y=0)).status_code == 200
    texts = load_corpus(DEMO_CORPUS).texts
    hits = [i for i, t in enumerate(texts) if "football" in t.lower()]
    (table, metrics) = at.dataframe[:2]
    assert sorted(table.value["row"]) == hits[: len(table.value)] and len(table.value) == min(len(hits), 1_000)
    assert list(metrics.value.columns) == ["metric", "whole corpus", "selection"]
    assert set(metrics.value["metric"]) >= {"avg_cosine", "isoscore", "effective_rank"}
    at.text_input(key="atlas_search").set_value("no such words anywhere").run()
    assert map_data(at)["highlight"] is None and "select texts" in at.info[0].value


def test_a_map_selection_fills_the_table_until_cleared(folder_app: AppTest) -> None:
    from isoscope.dashboard import tiles
    from isoscope.dashboard.services import atlas as svc

    at = folder_app
    data = map_data(at)
    x0, y0, x1, y1 = data["bounds"]
    box = (x0, y0, (x0 + x1) / 2, (y0 + y1) / 2)
    folder = tiles._atlas_path(data["tiles"].split("/")[3])  # the folder the page's token names
    rows = svc.rows_in_box(folder, "raw", box).tolist()  # what a box drawn on the map selects
    assert rows
    at.session_state["atlas_map_selection"] = {
        "at": (folder, "raw"),
        "rows": rows,
        "how": "in the box drawn on the map",
    }
    at.run()
    assert not at.exception, at.exception
    assert sorted(at.dataframe[0].value["row"]) == rows and len(map_data(at)["selected"]) == len(rows)
    assert f"{len(rows):,} text(s) in the box drawn on the map" in captions(at)
    at.button(key="atlas_clear").click().run()
    assert "select texts" in at.info[0].value and map_data(at)["selected"] == []


def test_clusters_colour_and_space_switch(atlas_app: AppTest) -> None:
    at = atlas_app
    first = at.multiselect(key="atlas_clusters").options[0]
    at.multiselect(key="atlas_clusters").set_value([first]).run()
    table = at.dataframe[0].value
    assert len(table) > 0 and set(table["cluster"]) == {int(first.split(":")[0])}
    raw = map_data(at)
    at.radio(key="atlas_space").set_value("cal").run()
    assert not at.exception, at.exception
    cal = map_data(at)
    assert cal["bounds"] != raw["bounds"] and "/cal/" in cal["tiles"] and "/raw/" in raw["tiles"]
    at.selectbox(key="atlas_colour").set_value("norm").run()
    assert "from" in captions(at) and "(purple) to" in captions(at)
    assert map_data(at)["tiles"] != cal["tiles"]  # another colouring: other tiles
    at.selectbox(key="atlas_colour").set_value("topic").run()
    assert "sports" in captions(at)


def test_open_in_neighbours_passes_the_row(atlas_app: AppTest) -> None:
    at = atlas_app
    at.text_input(key="atlas_search").set_value("football").run()
    row = at.selectbox(key="atlas_open_pick").value
    at.button(key="atlas_open").click().run()
    assert not at.exception, at.exception
    assert at.session_state["atlas_open_row"]["row"] == row
    assert any(t.value == "Neighbours" for t in at.title)
    # the same corpus there, the row picked (not a typed query the model would embed again)
    assert at.radio(key="nb_source").value == "Demo corpus"
    assert at.selectbox(key="nb_pick").value == row and at.text_input(key="nb_query").value == ""
    assert "football" in " ".join(m.value for m in at.markdown if m.value.startswith("**Query:**")).lower()


def test_an_atlas_folder_typed_in_the_folder_box_opens(atlas_folder: Path, tmp_path, monkeypatch) -> None:
    """Without ISOSCOPE_ATLAS_DIR the Atlas page offers a folder box (last, so the demo stays the default); a
    wrong folder is one line, an atlas folder (isoscope atlas --out DIR) is shown as built."""
    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path / "cache")))
    monkeypatch.delenv("ISOSCOPE_ATLAS_DIR", raising=False)
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["atlas_source"] = "Atlas folder"
    at.switch_page("views/atlas.py").run()
    assert not at.exception, at.exception
    assert at.radio(key="atlas_source").options == ["Demo corpus", "Upload a file", "Atlas folder"]
    assert "isoscope atlas --input corpus.txt --out my-atlas/" in at.info[0].value
    at.text_input(key="atlas_folder").set_value(str(tmp_path)).run()
    assert len(at.error) == 1 and "is not an atlas folder" in at.error[0].value and not at.get("bidi_component")
    at.text_input(key="atlas_folder").set_value(str(tmp_path / "nowhere")).run()
    assert "atlas folder not found" in at.error[0].value
    at.text_input(key="atlas_folder").set_value(str(atlas_folder)).run()
    assert not at.exception and not at.error, at.exception or at.error
    assert f"{FOLDER_POINTS:,} points, every one drawn at every zoom" in captions(at)


def test_the_launched_atlas_folder_opens_and_its_rows_go_to_neighbours(atlas_folder: Path, tmp_path, monkeypatch):
    """``isoscope app my-atlas/`` (the environment ``launch.prepare`` gives the server): the Atlas page opens the
    folder first; "Open in Neighbours" searches the atlas's own texts with its vectors, the row picked."""
    from isoscope.dashboard.launch import ServerOptions, prepare

    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path / "cache")))
    for name, value in prepare(ServerOptions(data_file=str(atlas_folder)), environ={}).env.items():
        monkeypatch.setenv(name, value)
    at = AppTest.from_file(APP, default_timeout=300)
    at.switch_page("views/atlas.py").run()
    assert not at.exception, at.exception
    assert at.radio(key="atlas_source").value == "Atlas folder"
    assert at.text_input(key="atlas_folder").value == str(atlas_folder.resolve())
    assert f"{FOLDER_POINTS:,} points" in captions(at)
    at.text_input(key="atlas_search").set_value("guitar").run()
    row = at.selectbox(key="atlas_open_pick").value
    text = at.dataframe[0].value.set_index("row").loc[row, "text"]
    assert "guitar" in text.lower()
    at.button(key="atlas_open").click().run()
    assert not at.exception, at.exception
    assert any(t.value == "Neighbours" for t in at.title)
    assert at.radio(key="nb_source").value == "The atlas opened on the Atlas page"
    assert at.selectbox(key="nb_pick").value == row and at.text_input(key="nb_query").value == ""
    assert f"{FOLDER_POINTS:,} texts with the vectors it was built from (d = 32)" in captions(at)
    query = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("**Query:**")]
    assert query == [f"**Query:** {text}"]  # the atlas's row (Markdown-escaped), not a demo sentence
    raw_table = at.dataframe[0].value
    from isoscope.atlas.pipeline import load_atlas

    atlas_texts = set(load_atlas(atlas_folder).texts)
    assert len(raw_table) == 10 and set(raw_table["text"]) <= atlas_texts


def test_the_server_warms_the_launched_atlas_so_the_first_visit_computes_nothing(atlas_folder, tmp_path, monkeypatch):
    """What dashboard/serve.py's warm-up thread runs for ``ISOSCOPE_ATLAS_DIR``: afterwards the Atlas page's first
    run opens no folder, builds no tile map and computes no colours (all read from the shared caches); a folder
    that is not a finished atlas is the user's mistake, in one line."""
    from isoscope.dashboard.figures import atlas as figures
    from isoscope.dashboard.services import atlas as svc
    from isoscope.errors import InputError

    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path / "cache")))
    monkeypatch.setenv("ISOSCOPE_ATLAS_DIR", str(tmp_path))
    with pytest.raises(InputError):
        svc.launched_atlas()
    monkeypatch.setenv("ISOSCOPE_ATLAS_DIR", str(atlas_folder))
    svc.warm(svc.launched_atlas())
    calls = []
    for module, name in ((svc, "load_atlas"), (figures, "colour_codes"), (svc.TileMap, "of_index")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    at = AppTest.from_file(APP, default_timeout=300)
    at.switch_page("views/atlas.py").run()
    assert not at.exception, at.exception
    assert f"{FOLDER_POINTS:,} points" in captions(at) and map_data(at)["tiles"]
    assert calls == []


def test_classroom_mode_has_no_folder_box(tmp_path, monkeypatch) -> None:
    """Students may not name server paths: no folder box on the Atlas page in classroom mode."""
    from isoscope.dashboard.launch import code_hash

    monkeypatch.setenv("ISOSCOPE_CACHE", str(private_cache(tmp_path / "cache")))
    monkeypatch.delenv("ISOSCOPE_ATLAS_DIR", raising=False)
    monkeypatch.setenv("ISOSCOPE_CLASSROOM", "1")
    monkeypatch.setenv("ISOSCOPE_ACCESS_CODE_SHA256", code_hash("K7QM-3XHD"))
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.text_input(key="classroom_code").input("K7QM-3XHD")
    at.button[0].click().run()
    at.session_state["atlas_source"] = "Upload a file"
    at.switch_page("views/atlas.py").run()
    assert not at.exception, at.exception
    assert at.radio(key="atlas_source").options == ["Demo corpus", "Upload a file"]
    assert not [t for t in at.text_input if t.key == "atlas_folder"]


def test_preloaded_file_with_hostile_rows_and_a_missing_column(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ISOSCOPE_CACHE", str(tmp_path / "cache"))
    texts = [f"sentence number {i} about cooking soup" for i in range(30)]
    rows = [*texts, "", texts[0], "x" * 100_000]
    src = tmp_path / "corpus.csv"
    pd.DataFrame({"text": rows, "topic": ["a"] * len(rows)}).to_csv(src, index=False)
    monkeypatch.setenv("ISOSCOPE_DATA_FILE", str(src))
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["atlas_layout"] = "pca"
    at.switch_page("views/atlas.py").run()
    assert not at.exception, at.exception
    assert at.radio(key="atlas_source").value == "File given to isoscope app"
    shown = (captions(at) + "\n".join(w.value for w in at.warning)).replace("\\", "")  # markdown-escaped
    assert "dropped 1 row(s) with empty text" in shown and "truncated" in shown and "repeat" in shown
    assert "32 points, every one drawn" in captions(at)

    monkeypatch.setenv("ISOSCOPE_TEXT_COLUMN", "sentence")
    at2 = AppTest.from_file(APP, default_timeout=300)
    at2.switch_page("views/atlas.py").run()
    assert not at2.exception, at2.exception
    (err,) = at2.error
    assert "no column 'sentence'" in err.value and "\n" not in err.value.strip()
