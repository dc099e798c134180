"""Benchmark calibrator fit times: one flow epoch, the default flow schedule, and whitening, side by side.

Usage (from the repo root)::

    .venv/bin/python bench/calibrate.py            # STS-B train+dev+test cls embeddings (17256 x 384), cached
    .venv/bin/python bench/calibrate.py --quick    # seeded synthetic anisotropic vectors (4000 x 384)

The default run embeds STS-B with the embedded all-MiniLM-L6-v2 through ``isoscope.encode.embed`` and the embedding
cache (``~/.cache/isoscope``), so only the first run pays for the forward passes; if STS-B is missing it falls
back to synthetic vectors of the same size. Target: the default flow fit takes at most 60 s. Prints a table,
then as its LAST line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from isoscope.calibrate import Flow, Whitening  # noqa: E402
from isoscope.paths import stsb_dir  # noqa: E402

TARGET_SECONDS = 60.0
STSB_DIR = stsb_dir()


def synthetic(n: int, d: int, seed: int) -> np.ndarray:
    """Seeded sentence-vector-like cloud: low-rank factors, a LayerNorm (rank d-1), gains and an offset (a cone)."""
    rng = np.random.default_rng(seed)
    h = rng.standard_normal((n, 32)) @ rng.standard_normal((32, d)) + 0.5 * rng.standard_normal((n, d))
    h = np.tanh(h / 4) * 4  # (n, d), non-linear
    h = (h - h.mean(1, keepdims=True)) / h.std(1, keepdims=True)
    return (h * np.geomspace(2.0, 0.05, d) + rng.standard_normal(d)).astype(np.float32)


def stsb_cls() -> np.ndarray | None:
    """cls embeddings of every STS-B sentence (train + dev + test), via isoscope.encode.embed and the cache."""
    if not (STSB_DIR / "stsb-en-test.csv").exists():
        return None
    from isoscope.cache import ArrayCache
    from isoscope.data import load_pairs
    from isoscope.encode.embed import encode
    from isoscope.encode.models import load_encoder

    encoder, cache = load_encoder(), ArrayCache()
    parts = [encode(encoder, load_pairs(STSB_DIR / f"stsb-en-{s}.csv").texts, "cls", cache=cache) for s in SPLITS]
    return np.concatenate(parts)


SPLITS = ("train", "dev", "test")


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def run(quick: bool, seed: int) -> dict[str, object]:
    data = None if quick else stsb_cls()
    source = "stsb-cls" if data is not None else "synthetic"
    if data is None:
        data = synthetic(4000 if quick else 17256, 384, seed)
    whitening_seconds, _ = timed(lambda: Whitening().fit(data))
    config = Flow(seed=seed)
    one_seconds, one = timed(lambda: Flow(epochs=1, seed=seed).fit(data))
    default_seconds, flow = timed(lambda: clone(config).fit(data))
    assert isinstance(one, Flow) and isinstance(flow, Flow)
    epochs = [h["seconds"] for h in flow.history_]
    return {
        "source": source,
        "n": int(data.shape[0]),
        "d": int(data.shape[1]),
        "seed": seed,
        "flow_config": config.get_params(),
        "flow_epoch_seconds": round(float(np.median(epochs)) if epochs else float("nan"), 3),
        "flow_one_epoch_fit_seconds": round(one_seconds, 3),
        "flow_default_fit_seconds": round(default_seconds, 3),
        "flow_default_epochs": len(flow.history_),
        "flow_diverged": bool(flow.diverged_),
        "flow_bits_per_dim": round(flow.bits_per_dim_, 5),
        "gaussian_bits_per_dim": round(flow.gaussian_bits_per_dim_, 5),
        "whitening_fit_seconds": round(whitening_seconds, 3),
        "flow_over_whitening_ratio": round(default_seconds / max(whitening_seconds, 1e-9), 1),
        "target_seconds": TARGET_SECONDS,
        "within_target": default_seconds <= TARGET_SECONDS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="synthetic 4000 x 384 vectors, well under a minute")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    r = run(args.quick, args.seed)
    print(f"calibrator fit times on {r['source']} vectors, {r['n']} x {r['d']}")
    print(f"{'what':<34}{'seconds':>10}")
    print(f"{'whitening fit':<34}{r['whitening_fit_seconds']:>10.2f}")
    print(f"{'flow fit, 1 epoch (incl. setup)':<34}{r['flow_one_epoch_fit_seconds']:>10.2f}")
    print(f"{'flow epoch (median)':<34}{r['flow_epoch_seconds']:>10.2f}")
    label = f"flow fit, default ({r['flow_default_epochs']} epochs)"
    print(f"{label:<34}{r['flow_default_fit_seconds']:>10.2f}   target <= {TARGET_SECONDS:.0f} s")
    print(f"bits/dim: gaussian (whitening) {r['gaussian_bits_per_dim']:.4f} -> flow {r['flow_bits_per_dim']:.4f}")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
