"""The results of docs/results.md from precision and size to loss surfaces, and the vectors file of docs/models.md:
their commands, tables and quoted numbers (scripts/docs_tables.py says how a result is written)."""

from __future__ import annotations

from collections.abc import Callable

from docs_results_sts import GEOMETRY_RUN
from docs_tables import (
    RESULTS_PAGE,
    TEST,
    Get,
    Result,
    Snippet,
    bold,
    f,
    markdown,
    pct,
    pm,
)

# ------------------------------------------------------------------ precision and size

SWEEP_RUN = f"isoscope sweep --input {TEST} --text-column column0 --pairs {TEST} --dims 32,64,128,256 --json"
SWEEP_LABELS = {"int8-model": "int8 model", "int8-vectors": "int8 vectors", "binary": "binary (1 bit/dim)"}


def _sweep_order(row: dict) -> tuple[int, int, int]:
    """The precisions first, then each size from the largest, PCA before the first dimensions."""
    family = row["variant"].split(":")[0]
    return (family in ("pca", "truncate"), -int(row["dims"]), family != "pca")


def _sweep_label(variant: str) -> str:
    family, _, k = variant.partition(":")
    return {"pca": f"PCA to {k}", "truncate": f"first {k} dims"}.get(family) or SWEEP_LABELS.get(variant, variant)


def sweep_table(get: Get) -> list[str]:
    out = get(SWEEP_RUN)
    rows = [
        [
            _sweep_label(r["variant"]),
            f"{r['bytes_per_vector']:.0f}",
            f(r["overlap_at_k"], 3),
            f(r["spearman"], 2),
            f(r["isoscore"], 3),
            f(r["avg_cosine"], 3),
            f(r["effective_rank"], 0),
        ]
        for r in sorted(out["rows"], key=_sweep_order)  # stable: the precisions in the command's order
    ]
    header = ["variant", "bytes/vector", f"overlap@{out['k']}", "STS Spearman", "IsoScore", "avg cosine"]
    return markdown([*header, "effective rank"], "-rrrrrr", rows)


def sweep_quotes(get: Get) -> list[tuple[str, str]]:
    out = get(SWEEP_RUN)
    rows = {r["variant"]: r for r in out["rows"]}
    fp32, binary = rows["fp32"], rows["binary"]
    return [
        (
            RESULTS_PAGE,
            f"{out['n_texts']:,} test sentences, overlap@{out['k']} with the fp32 space; Spearman on the "
            f"{out['n_pairs']:,} test pairs",
        ),
        (
            RESULTS_PAGE,
            f"binary vectors ({fp32['bytes_per_vector'] / binary['bytes_per_vector']:.0f}x smaller) lose "
            f"{fp32['spearman'] - binary['spearman']:.1f} Spearman points but keep only {binary['overlap_at_k']:.2f} "
            f"of each text's {out['k']} nearest neighbours",
        ),
        (
            RESULTS_PAGE,
            f"the int8 *model* moves neighbourhoods more ({rows['int8-model']['overlap_at_k']:.2f}) than storing fp32 "
            f"vectors as int8 codes ({rows['int8-vectors']['overlap_at_k']:.2f})",
        ),
    ]


SWEEP = Result("sweep-stsb", RESULTS_PAGE, (SWEEP_RUN,), sweep_table, sweep_quotes, shown=(SWEEP_RUN,))

# ------------------------------------------------------------------ comparing spaces

COMPARE_LAYERS = f"isoscope compare --input {TEST} --a pooling=mean --b pooling=cls --layers --json"
COMPARED = (
    ("pooling=mean", "pooling=mean,calibrate=whitening"),
    ("pooling=cls", "pooling=cls,calibrate=whitening"),
    ("pooling=mean", "pooling=mean,calibrate=flow"),
    ("init=pretrained", "init=random"),
)
COMPARE_RUNS = (COMPARE_LAYERS, *(f"isoscope compare --input {TEST} --a {a} --b {b} --json" for a, b in COMPARED))
COMPARE_SPECS = (("pooling=mean", "pooling=cls"), *COMPARED)  # each command's --a and --b, as the rows name them


def compare_row(specs: tuple[str, str], out: dict) -> list[str]:
    hub = out["hubness"]
    return [
        f"`{specs[0]}` vs `{specs[1]}`",
        f(out["cka_linear"], 3),
        f(out["cka_debiased"], 3),
        f(out["overlap_at_k"], 3),
        f(out["procrustes_disparity"], 3),
        f"{hub['a']['skewness']:.2f} / {hub['b']['skewness']:.2f}",
        f"{hub['a']['max_occurrence']} / {hub['b']['max_occurrence']}",
    ]


def compare_table(get: Get) -> list[str]:
    k = get(COMPARE_RUNS[0])["k"]
    header = ["A vs B", "CKA", "debiased CKA", f"overlap@{k}", "Procrustes", "hubness skew A / B"]
    rows = [compare_row(specs, get(c)) for specs, c in zip(COMPARE_SPECS, COMPARE_RUNS, strict=True)]
    return markdown([*header, "max occurrence A / B"], "-------", rows)


def compare_quotes(get: Get) -> list[tuple[str, str]]:
    mean_cls, mean_white, cls_white, _, random = (get(c) for c in COMPARE_RUNS)
    k, hub = mean_cls["k"], mean_cls["hubness"]
    whitened = [r["hubness"]["b"] for r in (mean_white, cls_white)]
    layers = mean_cls["cka_layers"]  # (L + 1, L + 1): layer 0 (embeddings) to L, A's model with itself
    last = len(layers) - 1
    neighbouring = [layers[i][i + 1] for i in range(last - 1)]
    apart = [layers[last][i] for i in range(last)]
    return [
        (RESULTS_PAGE, f"The {mean_cls['n_texts']:,} distinct sentences of STS-B test, default model, k = {k}"),
        (
            RESULTS_PAGE,
            f"cls and mean pooling agree on the global geometry (CKA {mean_cls['cka_linear']:.2f}) yet share only "
            f"{mean_cls['overlap_at_k']:.0%} of each sentence's neighbours",
        ),
        (
            RESULTS_PAGE,
            f"One sentence sits in {hub['b']['max_occurrence']} of the {mean_cls['n_texts']:,} top-{k} lists under cls "
            f"(skewness {hub['b']['skewness']:.1f}), against {hub['a']['max_occurrence']} under mean pooling",
        ),
        (
            RESULTS_PAGE,
            f"Whitening removes the hubs for either pooling (skewness {max(h['skewness'] for h in whitened):.1f}, at "
            f"most {max(h['max_occurrence'] for h in whitened)})",
        ),
        (
            RESULTS_PAGE,
            f"Whitening keeps half the CKA ({mean_white['cka_linear']:.3f}) and {mean_white['overlap_at_k']:.0%} of the "
            "neighbours of the raw mean space",
        ),
        (
            RESULTS_PAGE,
            f"CKA between the mean-pooled layers of the model is {min(neighbouring):.2f}-{max(neighbouring):.2f} for "
            f"neighbouring layers 0-{last - 1}, but the last layer stands apart ({min(apart):.2f}-{max(apart):.2f} "
            "against every other layer)",
        ),
        (
            RESULTS_PAGE,
            f"A randomly initialised model of the same architecture shares {random['overlap_at_k']:.0%} of the "
            f"neighbours and a CKA of {random['cka_linear']:.2f}",
        ),
    ]


COMPARE = Result("compare-stsb", RESULTS_PAGE, COMPARE_RUNS, compare_table, compare_quotes, shown=COMPARE_RUNS)

# ------------------------------------------------------------------ retrieval

BEIR = f"python scripts/stsb_retrieval.py {TEST} /tmp/stsb-beir"
RETRIEVAL_RUN = (
    "isoscope retrieval --beir /tmp/stsb-beir --calibrate centre --calibrate whitening --calibrate whitening:64 "
    "--calibrate sn --calibrate abtt --calibrate flow --calibrate whitening:64@queries --calibrate csls --json"
)


def retrieval_table(get: Get) -> list[str]:
    rows = []
    for v in get(RETRIEVAL_RUN)["variants"]:
        test = v["vs_raw"].get("ndcg@10")
        if test:
            change = f"{test['mean_difference']:+.4f} [{test['ci_low']:+.4f}, {test['ci_high']:+.4f}]"
            vs_raw = [change, f(test["p_value"], 4), test["verdict"]]
        else:
            vs_raw = ["", "", "baseline"]
        means = [f(v[m], 4) for m in ("ndcg@10", "recall@10", "mrr@10")]
        geometry = [f(v["avg_cosine"], 3), f(v["isoscore"], 3), f(v["hubness_skew"], 2)]
        rows.append([v["variant"], *means, *vs_raw, *geometry])
    header = ["variant", "nDCG@10", "Recall@10", "MRR@10", "Δ nDCG@10 [95% CI]", "p", "verdict", "avg cosine"]
    return markdown([*header, "IsoScore", "hubness skew"], "-rrr-r-rrr", rows)


def retrieval_quotes(get: Get) -> list[tuple[str, str]]:
    out = get(RETRIEVAL_RUN)
    task, rows = out["task"], {v["variant"]: v for v in out["variants"]}
    raw, white, flow, w64, centre = (rows[v] for v in ("raw", "whitening", "flow", "whitening:64", "centre"))
    same = f"{flow['ndcg@10']:.4f}" == f"{white['ndcg@10']:.4f}"
    test64, test_centre = w64["vs_raw"]["ndcg@10"], centre["vs_raw"]["ndcg@10"]
    fixes = len(rows) - 1
    return [
        (
            RESULTS_PAGE,
            f"the {task['queries']} first sentences of the pairs graded 4 or more are the queries, each relevant to "
            f"its pair's second sentence ({task['judgements']} judgements); the corpus is the {task['documents']:,} "
            "other distinct test sentences",
        ),
        (RESULTS_PAGE, f"on the {task['documents']:,} documents (`@queries`: on the {task['queries']} queries)"),
        (
            RESULTS_PAGE,
            f"Whitening and the flow take the documents from IsoScore {raw['isoscore']:.2f} to {white['isoscore']:.2f} "
            f"and cut hubness from {raw['hubness_skew']:.2f} to {white['hubness_skew']:.2f}",
        ),
        (RESULTS_PAGE, f"A contrastively trained sentence encoder already ranks well ({raw['ndcg@10']:.3f})"),
        (RESULTS_PAGE, "(The flow ranks exactly as full whitening does here, to four decimals.)" if same else "(flow)"),
        (
            RESULTS_PAGE,
            f"Keeping 64 whitened directions loses {-test64['mean_difference']:.3f} (p = {test64['p_value']:.2f})",
        ),
        (RESULTS_PAGE, f"{NUMBER_WORDS.get(fixes, str(fixes))} fixes were each tested at 0.05"),
        (
            RESULTS_PAGE,
            f"Centring lifts nDCG@10 by {test_centre['mean_difference']:.4f} and its bootstrap interval "
            f"[{test_centre['ci_low']:+.4f}, {test_centre['ci_high']:+.4f}] leaves out zero, yet the randomisation "
            f"test gives p = {test_centre['p_value']:.2f}",
        ),
        (
            RESULTS_PAGE,
            f"{task['queries']} queries are few to estimate 64 whitened directions (`whitening:64@queries`, "
            f"{rows['whitening:64@queries']['vs_raw']['ndcg@10']['mean_difference']:.3f}, not significant)",
        ),
    ]


NUMBER_WORDS = {n: w for n, w in enumerate("Zero One Two Three Four Five Six Seven Eight Nine Ten".split())}

RETRIEVAL = Result(
    "retrieval-stsb",
    RESULTS_PAGE,
    (RETRIEVAL_RUN,),
    retrieval_table,
    retrieval_quotes,
    shown=(BEIR, RETRIEVAL_RUN),
    setup=(BEIR,),
)

# ------------------------------------------------------------------ loss surfaces

LANDSCAPE_RUN = (
    "isoscope landscape --task stsb --seeds 3 --n-train 200 --epochs 4 --grid 7 --filter-grid 7 --points-1d 11 "
    "--filter-points 9 --hessian-iters 5 --learning-heldout 128 --json"
)
GROUPS = ("embeddings", "lower", "middle", "upper")


def landscape_table(get: Get) -> list[str]:
    out = get(LANDSCAPE_RUN)
    inits, n_eval, config = out["inits"], out["n_eval"]["heldout"], out["config"]
    stats = {init: out["summary"][init] for init in inits}
    sharp = out["filter_normalized"][inits[0]]["sharpness"]
    alphas = ", ".join(f"+-{a:g}" for a in sharp["alphas"] if a > 0)
    epochs = len(out["learning_curves"][inits[0]]["epoch"]) - 1

    def row(label: str, cell: Callable[[str], str]) -> list[str]:
        return [label, *(cell(init) for init in inits)]

    def stat(name: str, digits: int) -> Callable[[str], str]:
        return lambda init: pm(stats[init][name], digits)

    def each_group(prefix: str, render: Callable[[float], str]) -> Callable[[str], str]:
        return lambda init: " / ".join(render(stats[init][f"{prefix}{g}"]["mean"]) for g in GROUPS)

    rows = [
        row(
            "train loss at theta0 -> theta1",
            lambda i: f"{stat('train_loss_theta0', 3)(i)} -> {stat('train_loss_theta1', 3)(i)}",
        ),
        row(f"held-out loss at theta1 ({n_eval} pairs)", stat("heldout_loss_theta1", 3)),
        row(f"held-out accuracy at theta1 ({n_eval} pairs)", stat("heldout_acc_theta1", 2)),
        row(
            f"**filter-normalised sharpness** (mean train-loss rise at alpha = {alphas} over {sharp['n_directions']} "
            "directions; scale-invariant: yes)",
            lambda i: bold(stat("filter_sharpness", 4)(i), True),
        ),
        row("the same on held-out loss (scale-invariant: yes)", stat("filter_sharpness_heldout", 4)),
        row(
            f"top Hessian eigenvalue at theta1 (power iteration, {config['hessian_size']} examples; scale-invariant: "
            "**no**)",
            stat("hessian_top_eigenvalue", 0),
        ),
        row("cos(delta1, delta2)", stat("cos_delta1_delta2", 3)),
        row("share of delta2 kept by Gram-Schmidt", lambda i: pct(stats[i]["kept_fraction"]["mean"])),
        row("epoch-1 checkpoint's off-plane residual (share of its length)", stat("epoch1_residual", 2)),
        row(
            f"learning curve: held-out loss, epochs 0 -> {epochs} ({out['n_learning_heldout']} pairs)",
            lambda i: " -> ".join(f(x, 3) for x in out["learning_curves"][i]["heldout_loss_mean"]),
        ),
        row("held-out loss: final minus best epoch (overfitting)", stat("lc_overfit_gap", 3)),
        row(
            f"relative change of {' / '.join(GROUPS)} layers",
            each_group("relative_change_", lambda x: pct(x, 2)),
        ),
        row(
            f"train loss after rolling back {' / '.join(GROUPS)} to theta0",
            lambda i: " / ".join(f(stats[i][f"rollback_{g}_train_loss"]["mean"], 3) for g in GROUPS),
        ),
    ]
    return markdown(["", *(init.replace("pretrained", "pre-trained") for init in inits)], "-" + "r" * len(inits), rows)


LANDSCAPE = Result(
    "landscape-stsb",
    RESULTS_PAGE,
    (LANDSCAPE_RUN,),
    landscape_table,
    shown=(LANDSCAPE_RUN,),
    pending=(
        "This table is not yet written by `make docs-numbers`: its command has not been rerun since (65 CPU-minutes, "
        "about 35 minutes alone on 2 cores, more than an hour on a shared machine); `make docs-numbers "
        "ARGS=landscape-stsb` reruns it and writes the table."
    ),
)

# ------------------------------------------------------------------ a vectors file (docs/models.md)

CLS_PARQUET = Snippet("docs/models.md", "cls.parquet")
VECTORS_RUNS = (
    "isoscope geometry --vectors cls.parquet:emb --text-column text --calibrate whitening --json",
    "isoscope geometry --vectors cls.parquet:emb --input ~/.cache/isoscope/data/stsb/stsb-en-test.csv "
    "--calibrate whitening --json",
    "isoscope compare --input cls.parquet --a vectors=cls.parquet:emb --b pooling=mean --json",
    "isoscope compare --input cls.parquet --a vectors=cls.parquet:emb --b pooling=cls --json",
)


def vectors_table(get: Get) -> list[str]:
    rows_out, pairs_out = get(VECTORS_RUNS[0]), get(VECTORS_RUNS[1])
    n, n_pairs, n_sentences = rows_out["n_texts"], pairs_out["overlap"]["n_pairs"], pairs_out["n_texts"]
    method = {"whitening": "whitened"}.get(rows_out["calibrate"], rows_out["calibrate"])
    spaces = [
        (f"as written ({n:,} rows)", rows_out["raw"], None),
        (f"{method} ({n:,} rows)", rows_out["calibrated"], None),
        (f"as written, on the {n_pairs:,} pairs ({n_sentences:,} sentences)", pairs_out["raw"], "raw"),
        (f"{method}, on the pairs", pairs_out["calibrated"], "calibrated"),
    ]
    rows = [
        [
            label,
            f(m["avg_cosine"], 3),
            f(m["isoscore"], 3),
            f(m["effective_rank"], 1),
            pct(m["explained_variance_top10"]),
            "" if sts is None else f(pairs_out["sts"][sts], 2),
        ]
        for label, m, sts in spaces
    ]
    header = ["`cls.parquet:emb`", "avg cosine", "IsoScore", "effective rank", "top-10 PCs' variance"]
    return markdown([*header, "STS-B test Spearman"], "------", rows)


def vectors_quotes(get: Get) -> list[tuple[str, str]]:
    rows_out, pairs_out = get(VECTORS_RUNS[0]), get(VECTORS_RUNS[1])
    vs_mean, vs_cls = get(VECTORS_RUNS[2]), get(VECTORS_RUNS[3])
    k, hub = vs_mean["k"], vs_mean["hubness"]
    lift = pairs_out["sts"]["calibrated"] - pairs_out["sts"]["raw"]
    model_path = get(GEOMETRY_RUN.replace("$pooling", "cls").replace("$method", "whitening")), get(COMPARE_LAYERS)
    same = [
        f"{a:.3f}" == f"{b:.3f}"
        for a, b in (
            (pairs_out["sts"]["calibrated"], model_path[0]["sts"]["calibrated"]),
            (pairs_out["calibrated"]["avg_cosine"], model_path[0]["calibrated"]["avg_cosine"]),
            (vs_mean["cka_linear"], model_path[1]["cka_linear"]),
            (vs_mean["overlap_at_k"], model_path[1]["overlap_at_k"]),
        )
    ]
    return [
        (
            "docs/models.md",
            "so the pairs rows and the comparison are the numbers the model path gives for `--pooling cls`"
            if all(same)
            else "(the model path gives other numbers)",
        ),
        (
            "docs/models.md",
            f"(`--b pooling=mean`, k = {k}): CKA {vs_mean['cka_linear']:.3f}, debiased CKA "
            f"{vs_mean['cka_debiased']:.3f}, overlap@{k} {vs_mean['overlap_at_k']:.3f}, Procrustes disparity "
            f"{vs_mean['procrustes_disparity']:.3f}; the file's space makes hubs (hubness skewness "
            f"{hub['a']['skewness']:.2f}, one sentence in {hub['a']['max_occurrence']} of the {vs_mean['n_texts']:,} "
            f"top-{k} lists) where mean pooling does not ({hub['b']['skewness']:.2f}, at most "
            f"{hub['b']['max_occurrence']})",
        ),
        (
            "docs/models.md",
            f"very (average cosine {rows_out['raw']['avg_cosine']:.2f}), and yes, {lift:+.1f} Spearman points on "
            "STS-B test",
        ),
        (
            "docs/models.md",
            f"`compare --a vectors=cls.parquet:emb --b pooling=cls` gives CKA {vs_cls['cka_linear']:.3f} and "
            f"overlap@{vs_cls['k']} {vs_cls['overlap_at_k']:.3f}",
        ),
    ]


VECTORS = Result(
    "vectors-file",
    "docs/models.md",
    VECTORS_RUNS,
    vectors_table,
    vectors_quotes,
    shown=VECTORS_RUNS[:3],
    setup=(CLS_PARQUET,),
)
