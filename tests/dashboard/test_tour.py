"""The Home page's guided tour says what the shipped demo shows (issue 26: the tour claimed calibration lifts
the anisotropic poolings while the demo lowered every one). One test per tour step: the step's figures
(constants of ``isoscope.dashboard.tour``, interpolated into its text) are measured on the pages it names, with
the demo data and the app's default settings, as a class would see them."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from isoscope.dashboard import tour
from tests.dashboard.conftest import open_page


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def frame(at: AppTest, column: str):
    """The first dataframe shown with ``column``."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def no_warnings(at: AppTest) -> None:
    assert not at.warning and not at.error, ([w.value for w in at.warning], [e.value for e in at.error])


def test_home_shows_the_tour_and_lists_every_page(app: AppTest) -> None:
    from isoscope.dashboard import navigation

    shown = "\n".join(m.value for m in app.markdown)
    assert tour.STEPS.strip() in shown
    titles = [entry.title for entries in navigation.pages().values() for entry in entries if not entry.default]
    listed = re.findall(r"^\| \*\*(.+?)\*\* \|", shown, flags=re.MULTILINE)
    assert sorted(listed) == sorted(titles) and "Atlas" in listed and "Migration" in listed  # every page but Home


def test_step_1_mean_beats_cls_and_cls_scores_unrelated_pairs_high(app: AppTest) -> None:
    at = open_page(app, "similarity")
    assert at.selectbox(key="pooling").value == "model"  # the sidebar's default, which the step starts from
    at.multiselect(key="sim_poolings:model").select("cls").run()
    no_warnings(at)
    m = metrics(at)
    mean, cls = float(m["Spearman (model)"]), float(m["Spearman (cls)"])
    assert abs(mean - tour.MEAN_SPEARMAN) <= tour.SPEARMAN_ROUNDING, mean
    assert abs(cls - tour.CLS_SPEARMAN) <= tour.SPEARMAN_ROUNDING, cls
    assert cls < mean
    table = frame(at, "cosine cls")
    unrelated = table["score"] < 1
    assert unrelated.sum() >= 50
    assert table.loc[unrelated, "cosine cls"].mean() > tour.CLS_UNRELATED_COSINE
    assert table.loc[unrelated, "cosine model"].mean() < tour.MEAN_UNRELATED_COSINE


def test_step_2_swapped_roles_score_almost_1(app: AppTest) -> None:
    at = open_page(app, "similarity")
    at.radio(key="sim_source").set_value("Type two sentences").run()
    at.text_input(key="sim_a").set_value(tour.SWAPPED[0]).run()
    at.text_input(key="sim_b").set_value(tour.SWAPPED[1]).run()
    at.multiselect(key="sim_poolings:model").select("cls").run()
    m = metrics(at)
    assert float(m["cosine (model)"]) > tour.SWAPPED_COSINE and float(m["cosine (cls)"]) > tour.SWAPPED_COSINE, m


def test_step_3_mean_is_nearly_isotropic_cls_a_cone_whitening_spreads_both(app: AppTest) -> None:
    at = open_page(app, "anisotropy")
    no_warnings(at)
    assert at.multiselect(key="ani_methods").value[0] == "whitening"  # the demo is big enough to whiten fully
    mean = frame(at, "avg_cosine")
    assert mean.loc["raw", "avg_cosine"] < tour.MEAN_AVG_COSINE
    assert mean.loc["raw", "isoscore"] < tour.MEAN_ISOSCORE
    at.session_state["pooling"] = "cls"  # the step's sidebar switch
    at.run()
    no_warnings(at)
    cls = frame(at, "avg_cosine")
    assert cls.loc["raw", "avg_cosine"] > tour.CLS_AVG_COSINE
    for table in (mean, cls):
        assert abs(table.loc["whitening", "avg_cosine"]) < tour.WHITENED_AVG_COSINE, table
        assert table.loc["whitening", "isoscore"] > tour.WHITENED_ISOSCORE, table


def test_step_4_kept_whitening_lifts_the_anisotropic_poolings_full_whitening_lowers_mean(app: AppTest) -> None:
    at = open_page(app, "calibration")
    assert at.radio(key="calp_fit_on").value == "Demo corpus + these sentences"
    assert at.multiselect(key="calp_tp").value == list(tour.TABLE_POOLINGS)
    assert {"none", "whitening", tour.KEPT_WHITENING} <= set(at.multiselect(key="calp_tm").value)
    at.multiselect(key="calp_tm").set_value(["none", "whitening", tour.KEPT_WHITENING]).run()
    at.button(key="calp_table_go").click().run()
    no_warnings(at)
    grid = frame(at, tour.KEPT_WHITENING)
    grid = grid.set_index(grid.columns[0]) if "none" not in grid.index and grid.columns[0] != "none" else grid
    for pooling in tour.LIFTED:
        assert grid.loc[pooling, tour.KEPT_WHITENING] > grid.loc[pooling, "none"], grid
    assert abs(grid.loc["model", tour.KEPT_WHITENING] - grid.loc["model", "none"]) <= tour.MEAN_KEPT, grid
    assert grid.loc["model", "whitening"] < grid.loc["model", "none"] - tour.FULL_WHITENING_DROP, grid


def test_step_5_calibration_moves_neighbours(app: AppTest) -> None:
    at = open_page(app, "neighbours")
    no_warnings(at)
    assert at.selectbox(key="nb_cal_method").value == "whitening:K"
    m = metrics(at)
    (label,) = [k for k in m if k.startswith("mean overlap@10 under ")]
    assert label.endswith("whitening:64")
    assert float(m[label]) < tour.NEIGHBOURS_CHANGED


def test_step_6_random_weights_keep_few_neighbours_and_cls_has_hubs_calibration_removes(app: AppTest) -> None:
    at = open_page(app, "compare")
    assert at.selectbox(key="cmp_preset").value == "CLS vs mean"
    skew_cls, skew_mean = (float(x) for x in metrics(at)["hubness skew A → B"].split(" → "))
    assert skew_cls > tour.CLS_HUB_SKEWNESS and skew_mean < tour.MEAN_HUB_SKEWNESS
    at.selectbox(key="cmp_preset").set_value("Choose A and B yourself").run()
    at.selectbox(key="cmp_b_pooling").set_value("cls").run()
    at.selectbox(key="cmp_b_cal_method").set_value("whitening:K").run()
    no_warnings(at)
    assert float(metrics(at)["hubness skew A → B"].split(" → ")[1]) < tour.MEAN_HUB_SKEWNESS  # cls calibrated

    at.selectbox(key="cmp_preset").set_value("Trained vs untrained").run()
    assert not at.exception, at.exception
    m = metrics(at)
    assert float(m["overlap@10"]) < tour.RANDOM_OVERLAP
    assert float(m["CKA (linear)"]) > 0 and float(m["CKA (debiased)"]) > 0


def test_step_7_most_of_xlm_roberta_is_embeddings(app: AppTest) -> None:
    at = open_page(app, "anatomy")
    at.selectbox(key="anat_preset").set_value("xlm-roberta-base").run()
    share = float(metrics(at)["Embedding share, fine-tuning"].rstrip("%")) / 100
    assert share > tour.XLMR_EMBEDDING_SHARE


def test_step_8_retrieval_raw_is_strong_full_whitening_is_worse_centring_no_different(app: AppTest) -> None:
    at = open_page(app, "retrieval")
    at.multiselect(key="ret_fixes").set_value([tour.RETRIEVAL_WORSE, *tour.RETRIEVAL_SAME]).run()
    at.button(key="ret_run").click().run()
    assert not at.exception, at.exception
    table = frame(at, "verdict").set_index("variant")
    assert table.loc["raw", "ndcg@10"] > tour.RETRIEVAL_RAW_NDCG
    assert table.loc[tour.RETRIEVAL_WORSE, "verdict"] == "worse"
    assert all(table.loc[v, "verdict"] == "no difference" for v in tour.RETRIEVAL_SAME)
