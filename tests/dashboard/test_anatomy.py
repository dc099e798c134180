"""AppTest: the Embedding anatomy page: budgets, spectrum, rank-k shrink."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import open_page


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_budget_presets_and_shrink(app: AppTest) -> None:
    at = open_page(app, "anatomy")
    m = metrics(at)
    assert m["Table shape"] == "30,522 x 384"
    assert m["Parameters (pre-training)"].endswith("M")
    at.selectbox(key="anat_preset").set_value("xlm-roberta-base").run()
    assert not at.exception
    share = float(metrics(at)["Embedding share, fine-tuning"].rstrip("%"))
    assert 60 < share < 80  # a 250k vocabulary: most of the model is embeddings
    at.multiselect(key="anat_ranks").set_value([16, 128]).run()
    at.button(key="anat_go").click().run()
    assert not at.exception, at.exception
    curve = at.dataframe[-1].value
    assert list(curve["k"]) == [16, 128]
    assert curve["spearman"].iloc[0] < curve["spearman"].iloc[1]


def test_custom_architecture_error_is_one_line(app: AppTest) -> None:
    at = open_page(app, "anatomy")
    at.selectbox(key="anat_preset").set_value("custom").run()
    at.toggle(key="anat_tied").set_value(True).run()
    at.number_input(key="anat_eout").set_value(128).run()
    assert not at.exception
    assert len(at.error) == 1 and "tied" in at.error[0].value
