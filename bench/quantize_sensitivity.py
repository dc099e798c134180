"""Per-layer int8 sensitivity of the embedded all-MiniLM-L6-v2 on STS-B *dev* (never the test set we report).

Usage (from the repo root)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/quantize_sensitivity.py            # 1,500 dev pairs
    HF_HUB_OFFLINE=1 .venv/bin/python bench/quantize_sensitivity.py --quick    # 300 dev pairs

Quantises one group of Linear layers at a time (each kind across all layers: query, key, value, attention
output, FFN in, FFN out; then each transformer layer as a whole), the rest kept in fp32, and reports the
Spearman drop against fp32 (mean pooling); then everything int8 with per-channel and with per-tensor weight
scales. Last stdout line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from isoscope.data import load_pairs  # noqa: E402
from isoscope.encode.embed import encode  # noqa: E402
from isoscope.encode.models import load_encoder  # noqa: E402
from isoscope.encode.onnx_runtime import export_onnx, onnx_encoder  # noqa: E402
from isoscope.encode.quantize import Int8Config, quantize_onnx  # noqa: E402
from isoscope.geometry.pairs import correlations, cosine_pairs  # noqa: E402
from isoscope.paths import stsb_dir  # noqa: E402

KINDS = {
    "query": "*.attention.self.query",
    "key": "*.attention.self.key",
    "value": "*.attention.self.value",
    "attention_output": "*.attention.output.dense",
    "ffn_in": "*.intermediate.dense",
    "ffn_out": "*.layer.*.output.dense",
}


def groups(num_layers: int) -> dict[str, Int8Config]:
    out = {f"only {k}": Int8Config(only=(p,)) for k, p in KINDS.items()}
    out |= {f"only layer {i}": Int8Config(only=(f"encoder.layer.{i}.*",)) for i in range(num_layers)}
    out["all, per-channel"] = Int8Config()
    out["all, per-tensor"] = Int8Config(per_channel=False)
    return out


def run(quick: bool) -> dict[str, object]:
    pairs = load_pairs(stsb_dir() / "stsb-en-dev.csv")
    n = 300 if quick else len(pairs.sentence1)
    s1, s2, gold = pairs.sentence1[:n], pairs.sentence2[:n], np.asarray(pairs.scores[:n], float)
    encoder = load_encoder()

    def spearman(enc) -> float:
        return correlations(cosine_pairs(encode(enc, s1), encode(enc, s2)), gold)["spearman"]

    base = spearman(encoder)
    rows = {}
    tmp = Path(tempfile.mkdtemp(prefix="isoscope-sensitivity-"))
    export_onnx(encoder, tmp / "fp32.onnx", "last")  # once; each group is quantised from it
    for i, (name, config) in enumerate(groups(encoder.num_layers).items()):
        quantize_onnx(tmp / "fp32.onnx", tmp / f"{i}.onnx", config)
        model = (tmp / f"{i}.onnx").read_bytes()
        score = spearman(
            onnx_encoder(encoder, lambda _kind, m=model: m, f"{encoder.fingerprint}+sens{i}", precision="int8")
        )
        rows[name] = {"spearman": round(score, 2), "drop": round(base - score, 2)}
        logging.info("%-22s %.2f (drop %.2f)", name, score, base - score)
    return {
        "bench": "quantize_sensitivity",
        "split": "dev",
        "n_pairs": n,
        "fp32_spearman": round(base, 2),
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 dev pairs")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    result = run(args.quick)
    for name, row in result["rows"].items():
        print(f"{name:22s} spearman {row['spearman']:6.2f}  drop {row['drop']:5.2f}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
