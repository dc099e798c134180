"""The results of docs/results.md from calibration to embedding anatomy: their commands, tables and quoted numbers
(scripts/docs_tables.py says how a result is written)."""

from __future__ import annotations

from docs_tables import (
    RESULTS_PAGE,
    SPLITS,
    TEST,
    Get,
    Result,
    bold,
    expand,
    f,
    loop,
    markdown,
    pct,
    small,
)

# ------------------------------------------------------------------ calibration and pooling

POOLINGS = ("cls", "mean", "first_last_avg")
METHODS = ("none", "whitening", "whitening:256", "sn", "abtt:3", "sn+abtt:3", "flow")
METHOD_LABELS = {"none": "raw", "flow": "flow (default)"}
SENTENCES = (
    'python -c "import csv, sys; print(*(s for f in sys.argv[1:] for row in csv.reader(open(f)) for s in row[:2]), '
    f"sep='\\n')\" {SPLITS} > /tmp/stsb-all.txt"
)
STS = f"isoscope sts --pairs {TEST} --pooling $pooling --calibrate $method --fit-on /tmp/stsb-all.txt --json"
STS_RUNS = expand(STS, **{"$pooling": POOLINGS, "$method": METHODS})


def sts(get: Get, pooling: str, method: str) -> float:
    out = get(STS.replace("$pooling", pooling).replace("$method", method))
    return out["spearman"] if method == "none" else out["calibrated"]["spearman"]


def calibration_table(get: Get) -> list[str]:
    cells = {(p, m): sts(get, p, m) for p in POOLINGS for m in METHODS}
    best = {p: max(cells[p, m] for m in METHODS) for p in POOLINGS}
    rows = [
        [METHOD_LABELS.get(m, m), *(bold(f(cells[p, m], 2), cells[p, m] == best[p]) for p in POOLINGS)] for m in METHODS
    ]
    return markdown(["calibration", *(f"`{p}`" for p in POOLINGS)], "----", rows)


POOLING_RUN = f"python -m isoscope pooling --pairs {TEST} --calibrate whitening --calibrate flow --json"


def pooling_cells(get: Get) -> dict[str, dict[str, float]]:
    """pooling -> calibration -> Spearman, in the pooling command's order (``none``: raw)."""
    out: dict[str, dict[str, float]] = {}
    for r in get(POOLING_RUN)["table"]:
        out.setdefault(r["pooling"], {})[r["calibration"]] = r["spearman"]
    return out


def _pooling_label(pooling: str, cells: dict[str, dict[str, float]]) -> str:
    """The name, with what it is where the name does not say it: the embeddings layer, the last layer = mean."""
    if pooling == "layer:0":
        return "layer:0 (embeddings)"
    if pooling.startswith("layer:") and cells[pooling] == cells.get("mean"):
        return f"{pooling} (= mean)"
    return "model (the recipe: mean, normalised)" if pooling == "model" else pooling


def pooling_table(get: Get) -> list[str]:
    cells, best = pooling_cells(get), get(POOLING_RUN)["best"]["pooling"]
    calibrations = list(next(iter(cells.values())))
    rows = [
        [
            bold(_pooling_label(pooling, cells), pooling == best),
            *(bold(f(by[c], 2), pooling == best and c == "none") for c in calibrations),
        ]
        for pooling, by in cells.items()
    ]
    header = [{"none": "raw"}.get(c, c) for c in calibrations]
    return markdown(["pooling", *header], "-" * (1 + len(calibrations)), rows)


def pooling_quotes(get: Get) -> list[tuple[str, str]]:
    cells = pooling_cells(get)
    last = max(int(p.split(":")[1]) for p in cells if p.startswith("layer:"))
    lifts = [
        by[c] - by["none"]
        for p, by in cells.items()
        if p.startswith("layer:") and int(p.split(":")[1]) < last
        for c in by
        if c != "none"
    ]
    return [
        (RESULTS_PAGE, f"Calibration lifts every intermediate layer by {min(lifts):.0f} to {max(lifts):.0f} points")
    ]


def calibration_quotes(get: Get) -> list[tuple[str, str]]:
    def c(pooling: str, method: str) -> float:  # as the table shows it: differences are the reader's
        return round(sts(get, pooling, method), 2)

    flow_cls = get(STS.replace("$pooling", "cls").replace("$method", "flow"))["calibrated"]
    published = (
        "reproduces the published 82.0" if f"{c('mean', 'none'):.1f}" == "82.0" else f"gives {c('mean', 'none'):.2f}"
    )
    return [
        (RESULTS_PAGE, f"fitted without labels on all {flow_cls['n_fit']:,} sentences of train+dev+test"),
        (RESULTS_PAGE, f"`mean` pooling {published} for all-MiniLM-L6-v2"),
        (
            RESULTS_PAGE,
            f"the flow lifts it by {c('cls', 'flow') - c('cls', 'none'):.2f} points and brings the mean cosine to "
            f"{flow_cls['avg_cosine_after']:.3f}, {c('cls', 'whitening') - c('cls', 'flow'):.2f} below whitening",
        ),
        (
            RESULTS_PAGE,
            f"whitening or the flow *lower* Spearman by {c('mean', 'none') - c('mean', 'whitening'):.2f} and "
            f"{c('mean', 'none') - c('mean', 'flow'):.2f} points; only the gentle per-dimension standardisation (`sn`) "
            f"helps a little ({c('mean', 'sn') - c('mean', 'none'):+.2f})",
        ),
        ("README.md", f"whitening lowers its Spearman ({c('mean', 'none'):.2f} to {c('mean', 'whitening'):.2f})"),
        ("README.md", f"whitening lifts them from {c('cls', 'none'):.2f} to {c('cls', 'whitening'):.2f}"),
    ]


CALIBRATION = Result(
    "calibration-stsb",
    RESULTS_PAGE,
    STS_RUNS,
    calibration_table,
    calibration_quotes,
    shown=(SENTENCES, loop(POOLINGS, METHODS), STS),
    setup=(SENTENCES,),
)
POOLING = Result("pooling-stsb", RESULTS_PAGE, (POOLING_RUN,), pooling_table, pooling_quotes, shown=(POOLING_RUN,))


# ------------------------------------------------------------------ geometry

GEOMETRY_RUN = f"isoscope geometry --input {TEST} --pooling $pooling --calibrate $method --frequency none --json"
GEOMETRY_POOLINGS, GEOMETRY_METHODS = ("cls", "mean"), ("flow", "whitening")
GEOMETRY_RUNS = expand(GEOMETRY_RUN, **{"$pooling": GEOMETRY_POOLINGS, "$method": GEOMETRY_METHODS})
FREQUENCY_RUN = f"isoscope geometry --input {TEST} --pooling cls --calibrate flow --frequency-input {SPLITS} --json"


def geometry(get: Get, pooling: str, method: str) -> dict:
    return get(GEOMETRY_RUN.replace("$pooling", pooling).replace("$method", method))


def geometry_table(get: Get) -> list[str]:
    rows = []
    for pooling in GEOMETRY_POOLINGS:
        runs = {m: geometry(get, pooling, m) for m in GEOMETRY_METHODS}
        spaces = [("raw", runs["flow"]["raw"], runs["flow"]["sts"]["raw"])]
        spaces += [(m, runs[m]["calibrated"], runs[m]["sts"]["calibrated"]) for m in GEOMETRY_METHODS]
        for space, metrics, spearman in spaces:
            rows.append(
                [
                    pooling,
                    space,
                    f(metrics["avg_cosine"], 3),
                    f(metrics["isoscore"], 3),
                    small(metrics["partition_isotropy"]),
                    f(metrics["effective_rank"], 1),
                    f(spearman, 2),
                ]
            )
    header = ["pooling", "space", "avg cosine", "IsoScore", "partition isotropy", "effective rank", "STS-B Spearman"]
    return markdown(header, "--rrrrr", rows)


def edit_distance_table(get: Get) -> list[str]:
    rows = []
    for pooling in GEOMETRY_POOLINGS:
        runs = {m: geometry(get, pooling, m)["overlap"]["spearman"] for m in GEOMETRY_METHODS}
        cells = [runs["flow"]["gold"], runs["flow"]["raw"], *(runs[m]["calibrated"] for m in GEOMETRY_METHODS)]
        rows.append([pooling, *(f(x, 1) for x in cells)])
    header = ["pooling", "gold", "raw cosine", *(f"{m} cosine" for m in GEOMETRY_METHODS)]
    return markdown(header, "-rrrr", rows)


def geometry_tables(get: Get) -> list[str]:
    n_pairs = geometry(get, "cls", "flow")["overlap"]["n_pairs"]
    return [
        *geometry_table(get),
        "",
        f"Spearman (x100) of each similarity with the word edit distance of the pair ({n_pairs:,} test pairs):",
        "",
        *edit_distance_table(get),
    ]


def frequency_rows(get: Get) -> dict[tuple[str, str], list[dict]]:
    """(space, stage) -> its buckets, in the command's order."""
    out: dict[tuple[str, str], list[dict]] = {}
    for b in get(FREQUENCY_RUN)["frequency"]["buckets"]:
        out.setdefault((b["space"], b["stage"]), []).append(b)
    return out


def _norm(x: float | None) -> str:
    return "" if x is None else f(x, 2) if abs(x) >= 2 else f(x, 3)


def frequency_table(get: Get) -> list[str]:
    freq = get(FREQUENCY_RUN)["frequency"]
    stage_label = {"raw": "raw", "calibrated": get(FREQUENCY_RUN)["calibrate"]}
    order = sorted(frequency_rows(get).items(), key=lambda kv: (kv[0][0] != "contextual", kv[0][1] != "raw"))
    rows = [
        [
            space,
            stage_label[stage],
            *(_norm(b["mean_norm"]) for b in buckets),
            *(_norm(b["mean_knn_dist"]) for b in buckets),
        ]
        for (space, stage), buckets in order
    ]
    labels = freq["labels"]
    header = ["space", "stage", f"norm {labels[0]}", *labels[1:], f"kNN {labels[0]}", *labels[1:]]
    return markdown(header, "--" + "r" * 2 * len(labels), rows)


def geometry_quotes(get: Get) -> list[tuple[str, str]]:
    cls, mean = geometry(get, "cls", "flow"), geometry(get, "mean", "flow")
    overlap = mean["overlap"]["spearman"]
    cone = f"{cls['raw']['avg_cosine']:.3f}"
    return [
        (RESULTS_PAGE, f"The {cls['n_texts']:,} sentences of the test pairs"),
        (
            RESULTS_PAGE,
            f"(average cosine {mean['raw']['avg_cosine']:.2f}, and its cosine tracks word overlap about as much as the "
            f"human scores do: {overlap['raw']:.1f} vs {overlap['gold']:.1f})",
        ),
        (RESULTS_PAGE, f"The `cls` vector is still a narrow cone (average cosine {cls['raw']['avg_cosine']:.2f})"),
        (
            RESULTS_PAGE,
            f"after the flow on `mean` pooling it is {small(mean['calibrated']['partition_isotropy'])} although "
            f"IsoScore is {mean['calibrated']['isoscore']:.3f} (a few heavy-tailed directions dominate it), where "
            f"whitening gives {small(geometry(get, 'mean', 'whitening')['calibrated']['partition_isotropy'])}",
        ),
        (RESULTS_PAGE, f"`cls` pooling is strongly anisotropic here (mean cosine of random pairs {cone})"),
        (RESULTS_PAGE, f"the space is already nearly isotropic (mean cosine {mean['raw']['avg_cosine']:.3f})"),
        ("README.md", f"its `cls` vectors sit in a narrow cone (mean cosine of random pairs {cone})"),
    ]


GEOMETRY = Result(
    "geometry-stsb",
    RESULTS_PAGE,
    GEOMETRY_RUNS,
    geometry_tables,
    geometry_quotes,
    shown=(loop(GEOMETRY_POOLINGS, GEOMETRY_METHODS), GEOMETRY_RUN),
)


def frequency_quotes(get: Get) -> list[tuple[str, str]]:
    freq = get(FREQUENCY_RUN)["frequency"]
    top = {b["stage"]: b["rel_norm"] for b in freq["buckets"] if b["space"] == "contextual" and b["rank_lo"] == 0}
    return [
        (
            RESULTS_PAGE,
            f"Token frequency (all {freq['n_texts']:,} STS-B sentences, {freq['n_distinct_tokens']:,} distinct tokens;",
        ),
        (
            RESULTS_PAGE,
            f"the {freq['edges'][1]} most frequent tokens have {1 - top['raw']:.0%} smaller norms than average",
        ),
        (
            RESULTS_PAGE,
            f"the flow evens the bucket means out ({top['raw']:.2f} to {top['calibrated']:.2f} of the average)",
        ),
    ]


FREQUENCY = Result(
    "frequency-stsb", RESULTS_PAGE, (FREQUENCY_RUN,), frequency_table, frequency_quotes, shown=(FREQUENCY_RUN,)
)

# ------------------------------------------------------------------ anatomy

PARAMS_RUNS = ("python -m isoscope params --preset all --json", "python -m isoscope params --model default --json")
SHRINK_RUN = (
    'python -c "import json; from isoscope.anatomy.spectrum import shrink_curve; from isoscope.cache import ArrayCache; '
    "from isoscope.data import load_pairs; from isoscope.encode.models import load_encoder; "
    "from isoscope.paths import stsb_dir; "
    "r = shrink_curve(load_encoder(), load_pairs(stsb_dir() / 'stsb-en-test.csv'), cache=ArrayCache()); "
    'print(json.dumps(r.to_dict(), default=float))"'
)
MODEL_NAMES = {"rembert": "RemBERT"}


def params_table(get: Get) -> list[str]:
    models = [*get(PARAMS_RUNS[0])["presets"], get(PARAMS_RUNS[1])]
    rows = []
    for m in models:
        name = MODEL_NAMES.get(m["name"], m["name"])
        if not m["tied"]:
            name += f" (E_in {m['input_embedding_size']}, E_out {m['output_embedding_size']}, untied)"
        share = (pct(m["embedding_share_pretraining"]), pct(m["embedding_share_finetuning"]))
        rows.append([name, f"{m['pretraining_total'] / 1e6:.1f} M", *share])
    return markdown(
        ["model", "parameters (pre-training)", "embedding share, pre-training", "fine-tuning"], "----", rows
    )


def params_quotes(get: Get) -> list[tuple[str, str]]:
    (rembert,) = [m for m in get(PARAMS_RUNS[0])["presets"] if m["name"] == "rembert"]
    pre, fine = rembert["embedding_share_pretraining"], rembert["embedding_share_finetuning"]
    return [(RESULTS_PAGE, f"the fine-tuned model's embedding share falls from {pre:.0%} to {fine:.0%}")]


PARAMS = Result("params", RESULTS_PAGE, PARAMS_RUNS, params_table, params_quotes, shown=PARAMS_RUNS)


def shrink_quotes(get: Get) -> list[tuple[str, str]]:
    out = get(SHRINK_RUN)
    (at128,) = [r for r in out["curve"] if r["k"] == 128]
    vocab, width = out["shape"]
    return [
        (
            RESULTS_PAGE,
            f"Shrinking MiniLM's {vocab} x {width} input table by SVD is costly: its spectrum is nearly flat (effective "
            f"rank {out['effective_rank']:.1f} of {width}), and rank 128 keeps {at128['energy']:.0%} of the energy, "
            f"{at128['spearman']:.1f} STS-B Spearman (of {out['full']['spearman']:.1f}) and "
            f"{at128['overlap_at_10']:.0%} of each sentence's 10 nearest neighbours",
        )
    ]


SHRINK = Result(
    "shrink-stsb",
    RESULTS_PAGE,
    (SHRINK_RUN,),
    None,
    shrink_quotes,
    shown=("`isoscope.anatomy.spectrum.shrink_curve` on the STS-B test pairs",),
)
