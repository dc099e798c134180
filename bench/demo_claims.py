"""Measure what the home page's guided tour can claim, on the shipped demo data with the app's defaults.

Usage (from the repo root)::

    .venv/bin/python bench/demo_claims.py            # every pooling x calibrator (flow included), all figures
    .venv/bin/python bench/demo_claims.py --quick    # cls, mean, layer:3; linear calibrators; static tokens
    .venv/bin/python bench/demo_claims.py --cached   # read/write the embedding cache, skip embedding timings

The embedded all-MiniLM-L6-v2 at max 128 tokens (the sidebar's defaults) on ``assets/demo_corpus.csv`` and
``assets/demo_pairs.csv`` (``--corpus`` / ``--pairs`` to measure other files). Every figure comes from the
library, computed as the pages compute it:

- **Sentence pairs** (tour steps 1-2): raw Spearman (x100) per pooling, the mean cosine of the pairs per gold
  bin, and the cosine of the tour's *The dog bit the man.* / *The man bit the dog.*
- **Calibration** (step 4): Spearman of every pooling x calibrator, each calibrator fitted on "demo corpus +
  these sentences" (the page's default: the corpus texts, then the pairs' sentences, duplicates dropped), as
  ``dashboard/services/calibration.calibration_table`` does; ``whitening:64`` is added (the ``whitening:K``
  default of the other pages); and whether ``isoscope.calibrate.fitting.fit_size_warning`` warns.
- **Anisotropy** (step 3): ``isoscope.geometry.metrics.all_metrics`` of the corpus's cls and mean vectors, raw
  and after whitening / sn+abtt:3 fitted on the corpus itself (the page's defaults).
- **Compare spaces** (step 6, *CLS vs mean*): hubness at k = 10 (``isoscope.comparison.hubness`` over
  ``isoscope.neighbours.exact.knn_table``) of the corpus's cls and mean vectors, raw and whitened.
- **Frequency bias**: ``isoscope.geometry.frequency.frequency_analysis`` over the corpus (static token vectors;
  contextual too without ``--quick``), raw and whitened: mean norm and kNN distance per frequency bucket.
- Seconds to embed the corpus without the cache (the app does it on a first visit): mean pooling alone, and
  every pooling in one pass (full run only; ``--quick`` times only the one pass over the fit texts).

Prints tables, then as its LAST line one JSON object; ``claims`` holds one boolean per checked sentence.
The exit status is 0 whether or not a claim holds (this measures; the tour tests assert).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from isoscope.cache import ArrayCache  # noqa: E402
from isoscope.calibrate import make_calibrator  # noqa: E402
from isoscope.calibrate.fitting import fit_size_warning  # noqa: E402
from isoscope.comparison.hubness import hubness  # noqa: E402
from isoscope.data import load_corpus, load_pairs  # noqa: E402
from isoscope.encode.embed import EmbedConfig, encode_many  # noqa: E402
from isoscope.encode.models import load_encoder  # noqa: E402
from isoscope.encode.pooling import pooling_choices  # noqa: E402
from isoscope.evaluate.similarity import sts_scores  # noqa: E402
from isoscope.geometry.frequency import FrequencyConfig, frequency_analysis  # noqa: E402
from isoscope.geometry.metrics import all_metrics  # noqa: E402
from isoscope.neighbours.exact import knn_table  # noqa: E402
from isoscope.paths import DEMO_CORPUS, DEMO_PAIRS  # noqa: E402

MAX_LENGTH = 128  # the sidebar's default
# The Calibration page's table offers these (dashboard/views/calibration.py), plus whitening:64, the other
# pages' whitening:K default.
METHODS = ("none", "whitening", "whitening:64", "whitening:128", "sn", "abtt:3", "sn+abtt:3", "flow")
QUICK_METHODS = ("none", "whitening", "whitening:64", "whitening:128", "sn+abtt:3")
QUICK_POOLINGS = ("cls", "mean", "layer:3")
ANISOTROPY_METHODS = ("whitening", "sn+abtt:3")  # the Anisotropy page's default calibrators
HUB_K = 10
MEAN_TOLERANCE = 3.0  # "mean stays about where it is": within 3 Spearman points of raw
TOUR_PAIR = ("The dog bit the man.", "The man bit the dog.")  # tour step 2


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of (n, d) and (n, d). (n,)"""
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def calibration_grid(fit: dict, pairs_vecs: dict, gold: np.ndarray, methods) -> dict[str, dict[str, float]]:
    """Spearman x100 of every pooling x method, each fitted on ``fit[pooling]`` (the page's table)."""
    n = len(gold)
    grid: dict[str, dict[str, float]] = {}
    for pooling, x in pairs_vecs.items():
        row = {}
        for method in methods:
            z = x if method == "none" else make_calibrator(method).fit(fit[pooling]).transform(x)  # (2n, k)
            row[method] = round(sts_scores(z[:n], z[n:], gold)["spearman"], 2)
        grid[pooling] = row
    return grid


def cosine_by_bin(pairs_vecs: dict, gold: np.ndarray, poolings) -> dict[str, dict[str, float]]:
    """Mean raw cosine of the pairs in each gold bin [0,1) .. [4,5]."""
    n = len(gold)
    bins = np.minimum(gold.astype(int), 4)  # (n,)
    out = {}
    for pooling in poolings:
        c = cosines(pairs_vecs[pooling][:n], pairs_vecs[pooling][n:])  # (n,)
        out[pooling] = {f"{b}-{b + 1}": round(float(c[bins == b].mean()), 3) for b in range(5) if (bins == b).any()}
    return out


def anisotropy(vectors: dict, poolings) -> dict[str, dict[str, dict[str, float]]]:
    """avg cosine, IsoScore and effective rank of the corpus, raw and calibrated on itself."""
    keys = ("avg_cosine", "isoscore", "effective_rank")
    out = {}
    for pooling in poolings:
        x = vectors[pooling]
        spaces = {"raw": x} | {m: make_calibrator(m).fit(x).transform(x) for m in ANISOTROPY_METHODS}
        out[pooling] = {name: {k: round(all_metrics(z)[k], 4) for k in keys} for name, z in spaces.items()}
    return out


def hub_figures(vectors: dict, poolings) -> dict[str, dict[str, dict[str, float]]]:
    """Hubness (k = 10) of the corpus's vectors, raw and whitened on the corpus."""
    out = {}
    for pooling in poolings:
        x = vectors[pooling]
        out[pooling] = {}
        for name, z in (("raw", x), ("whitening", make_calibrator("whitening").fit(x).transform(x))):
            h = hubness(knn_table(z, HUB_K)[0])
            out[pooling][name] = {
                "skewness": round(h.skewness, 3),
                "max_occurrence": h.max_occurrence,
                "antihub_share": round(h.antihub_share, 4),
            }
    return out


def frequency_figures(encoder, texts, spaces, config: EmbedConfig) -> dict:
    """Mean token norm and kNN distance per frequency bucket, and Spearman(norm, count), raw and whitened."""
    result = frequency_analysis(
        encoder, texts, spaces=spaces, calibrator="whitening", config=FrequencyConfig(), embed_config=config
    )
    buckets = {
        f"{r.space}/{r.stage}/{r.bucket}": {
            "n_tokens": int(r.n_tokens),
            "mean_norm": round(float(r.mean_norm), 3),
            "mean_knn_dist": round(float(r.mean_knn_dist), 3),
        }
        for r in result.buckets.itertuples()
    }
    corr = {f"{r.space}/{r.stage}": round(float(r.spearman_norm_count), 1) for r in result.correlations.itertuples()}
    return {"buckets": buckets, "spearman_norm_count": corr}


def lifts(grid: dict, method: str, poolings) -> bool:
    return all(grid[p][method] > grid[p]["none"] for p in poolings)


def keeps_mean(grid: dict, method: str) -> bool:
    return abs(grid["mean"][method] - grid["mean"]["none"]) <= MEAN_TOLERANCE


def claims_from(grid, bins, tour_cos, aniso, hubs, freq, layers) -> dict[str, bool]:
    """One boolean per sentence the tour could state, from the measured figures."""
    out = {
        "step 1: mean pooling beats cls on the demo pairs": grid["mean"]["none"] > grid["cls"]["none"],
        "step 1: under cls even unrelated pairs (gold < 1) have cosine > 0.5": bins["cls"]["0-1"] > 0.5,
        "step 2: dog bit man / man bit dog cosine > 0.9 (cls and mean)": min(tour_cos.values()) > 0.9,
        "step 3: raw cls is anisotropic (avg cosine > 0.3)": aniso["cls"]["raw"]["avg_cosine"] > 0.3,
        "step 3: raw mean is nearly isotropic (avg cosine < 0.1)": aniso["mean"]["raw"]["avg_cosine"] < 0.1,
        "step 3: whitening takes cls to avg cosine ~0 and IsoScore > 0.9": abs(aniso["cls"]["whitening"]["avg_cosine"])
        < 0.05
        and aniso["cls"]["whitening"]["isoscore"] > 0.9,
    }
    for method in [m for m in METHODS if m != "none" and m in grid["cls"]]:
        out[f"step 4: {method} lifts cls"] = lifts(grid, method, ["cls"])
        if layers:
            out[f"step 4: {method} lifts every intermediate layer"] = lifts(grid, method, layers)
        out[f"step 4: {method} keeps mean within {MEAN_TOLERANCE:g} points"] = keeps_mean(grid, method)
    out |= {
        "step 6: cls has hubs (skewness > 5)": hubs["cls"]["raw"]["skewness"] > 5,
        "step 6: mean has far fewer hubs (skewness < 2)": hubs["mean"]["raw"]["skewness"] < 2,
        "step 6: whitening removes cls hubs (skewness < 2)": hubs["cls"]["whitening"]["skewness"] < 2,
    }
    b = freq["buckets"]
    for space in ("static", "contextual"):
        if f"{space}/raw/0-100" not in b:
            continue
        top, rare = b[f"{space}/raw/0-100"], b[f"{space}/raw/5k+"]
        out[f"frequency: the 100 most frequent tokens have smaller {space} norms than 5k+"] = (
            top["mean_norm"] < rare["mean_norm"]
        )
        out[f"frequency: the 100 most frequent tokens sit closer together ({space} kNN)"] = (
            top["mean_knn_dist"] < rare["mean_knn_dist"]
        )
    return out


def print_grid(grid: dict, methods) -> None:
    print(f"{'pooling':<16}" + "".join(f"{m:>15}" for m in methods))
    for pooling, row in grid.items():
        print(f"{pooling:<16}" + "".join(f"{row[m]:>15.1f}" for m in methods))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="cls, mean, layer:3; no flow, no contextual tokens")
    parser.add_argument("--corpus", type=Path, default=DEMO_CORPUS)
    parser.add_argument("--pairs", type=Path, default=DEMO_PAIRS)
    parser.add_argument("--cached", action="store_true", help="use the embedding cache; no embedding timings")
    args = parser.parse_args(argv)

    load_at_start = os.getloadavg()[0]  # a contended machine inflates every timing below
    encoder = load_encoder()
    config = EmbedConfig(max_length=MAX_LENGTH)
    corpus, pairs = load_corpus(args.corpus), load_pairs(args.pairs)
    gold = np.asarray(pairs.scores, np.float64)  # (n,)
    fit_texts = list(dict.fromkeys(corpus.texts + list(pairs.texts)))  # "demo corpus + these sentences"
    poolings = list(QUICK_POOLINGS) if args.quick else pooling_choices(encoder.num_layers)
    methods = QUICK_METHODS if args.quick else METHODS
    last = f"layer:{encoder.num_layers}"  # the last layer's mean is mean pooling, not an intermediate layer
    layers = [p for p in poolings if p.startswith("layer:") and p != last]

    cache = ArrayCache() if args.cached else None
    seconds = {}
    if not (args.cached or args.quick):  # what a first visit costs: the corpus alone, mean, then every pooling
        _, seconds["embed_corpus_mean"] = timed(encode_many, encoder, corpus.texts, ["mean"], config)
        _, seconds["embed_corpus_all_poolings"] = timed(encode_many, encoder, corpus.texts, poolings, config)
    fit, seconds["embed_fit_texts"] = timed(encode_many, encoder, fit_texts, poolings, config, cache=cache)
    row = {t: i for i, t in enumerate(fit_texts)}
    pairs_vecs = {p: fit[p][[row[t] for t in pairs.texts]] for p in poolings}  # (2n, d)
    corpus_vecs = {p: fit[p][[row[t] for t in corpus.texts]] for p in poolings}  # (N, d)
    tour = encode_many(encoder, list(TOUR_PAIR), ["cls", "mean"], config=config)
    tour_cos = {p: round(float(cosines(v[:1], v[1:])[0]), 4) for p, v in tour.items()}

    grid, seconds["calibration_table"] = timed(calibration_grid, fit, pairs_vecs, gold, methods)
    bins = cosine_by_bin(pairs_vecs, gold, ("cls", "mean"))
    n_fit, d = fit["cls"].shape
    warning = fit_size_warning(make_calibrator("whitening"), n_fit, d)
    aniso = anisotropy(corpus_vecs, ("cls", "mean"))
    hubs = hub_figures(corpus_vecs, ("cls", "mean"))
    spaces = ("static",) if args.quick else ("static", "contextual")
    freq, seconds["frequency"] = timed(frequency_figures, encoder, corpus.texts, spaces, config)
    claims = claims_from(grid, bins, tour_cos, aniso, hubs, freq, layers)

    print(f"demo: {len(corpus)} texts, {len(pairs)} pairs; fit set {n_fit} x {d} (fit-size warning: {warning})")
    print_grid(grid, methods)
    print("mean raw cosine per gold bin:", bins)
    print("tour pair cosine:", tour_cos)
    for pooling, spaces_ in aniso.items():
        for name, m in spaces_.items():
            print(f"anisotropy {pooling:<5} {name:<10} " + "  ".join(f"{k} {v:.3f}" for k, v in m.items()))
    for pooling, spaces_ in hubs.items():
        for name, h in spaces_.items():
            print(f"hubness@{HUB_K} {pooling:<5} {name:<10} " + "  ".join(f"{k} {v}" for k, v in h.items()))
    for key, b in freq["buckets"].items():
        print(f"frequency {key:<32} tokens {b['n_tokens']:>6}  norm {b['mean_norm']:.3f}  knn {b['mean_knn_dist']:.3f}")
    print("spearman(norm, count):", freq["spearman_norm_count"])
    for claim, holds in claims.items():
        print(f"{'HOLDS' if holds else 'FAILS'}  {claim}")
    print("seconds:", {k: round(v, 1) for k, v in seconds.items()}, f"(load average at start {load_at_start:.1f})")
    result = {
        "mode": "quick" if args.quick else "full",
        "n_texts": len(corpus),
        "n_pairs": len(pairs),
        "n_fit": n_fit,
        "fit_size_warning": warning,
        "spearman": grid,
        "cosine_by_bin": bins,
        "tour_pair_cosine": tour_cos,
        "anisotropy": aniso,
        "hubness": hubs,
        "frequency": freq,
        "claims": claims,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "load_average_1min_at_start": round(load_at_start, 2),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
