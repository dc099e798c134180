"""Which int8 API? Every candidate on the embedded all-MiniLM-L6-v2, side by side in one run.

Usage (from the repo root; the candidates are optional packages, a missing one is reported and skipped)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/quantize_survey.py            # 1,000 sentences timed, STS-B test scored
    HF_HUB_OFFLINE=1 .venv/bin/python bench/quantize_survey.py --quick    # 300 timed, 400 test pairs scored

Candidates: sentence-transformers fp32 (the speed reference), ours fp32, torch's deprecated
``quantize_dynamic``, torchao (int8 dynamic activations + int8 weights, and int8 weight-only), optimum-quanto
(int8 weights) and ONNX Runtime (an offline ``torch.onnx`` export, fp32 and dynamic int8 with per-channel
weights). Each row: sentences/s (best of ``--repeat``, engines interleaved), ``ratio`` to sentence-transformers,
STS-B test Spearman (mean pooling) and its loss against fp32, and ``batch_drift``: the largest
1 - cosine between a sentence encoded alone and inside a padded batch (per-tensor activation scales make a
sentence's vector depend on its batch neighbours; per-token scales do not).

Last stdout line: one JSON object.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from isoscope.data import load_pairs  # noqa: E402
from isoscope.encode.embed import EmbedConfig, encode  # noqa: E402
from isoscope.encode.models import Encoder, default_model_path, load_encoder  # noqa: E402
from isoscope.geometry.pairs import correlations, cosine_pairs, l2_normalize  # noqa: E402
from isoscope.paths import stsb_dir  # noqa: E402

log = logging.getLogger("quantize_survey")
# run only when named with --only: eager torchao int8 x int8 on the CPU took 47 s to encode 64 sentences here
# (fp32: 4-6 s), so timing it on the full set would take most of an hour
SLOW = ("torchao_int8_dyn",)
EncodeFn = Callable[[list[str]], np.ndarray]


def _torch_dynamic(encoder: Encoder) -> Encoder:
    from torch.ao.quantization import quantize_dynamic

    model = quantize_dynamic(copy.deepcopy(encoder.model), {torch.nn.Linear}, dtype=torch.qint8)
    return Encoder(encoder.name, encoder.tokenizer, model, encoder.fingerprint + "+tdyn")


def _torchao(encoder: Encoder, weight_only: bool) -> Encoder:
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, Int8WeightOnlyConfig, quantize_

    model = copy.deepcopy(encoder.model)
    quantize_(model, Int8WeightOnlyConfig() if weight_only else Int8DynamicActivationInt8WeightConfig())
    return Encoder(encoder.name, encoder.tokenizer, model, encoder.fingerprint + "+ao")


def _quanto(encoder: Encoder) -> Encoder:
    from optimum.quanto import freeze, qint8, quantize

    model = copy.deepcopy(encoder.model)
    quantize(model, weights=qint8)
    freeze(model)
    return Encoder(encoder.name, encoder.tokenizer, model, encoder.fingerprint + "+quanto")


class _OrtModel(torch.nn.Module):
    """An ONNX Runtime session behind the call signature isoscope.encode.embed uses (last_hidden_state only)."""

    def __init__(self, path: str, config: object) -> None:
        super().__init__()
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = torch.get_num_threads()
        self.session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        self.config = config

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, output_hidden_states: bool = False):
        from transformers.modeling_outputs import BaseModelOutput

        (out,) = self.session.run(None, {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()})
        return BaseModelOutput(last_hidden_state=torch.from_numpy(out))


class _LastHidden(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def _onnx_export(encoder: Encoder, folder: str) -> str:
    path = os.path.join(folder, "model.onnx")
    ids = torch.ones((2, 8), dtype=torch.long)
    mask = torch.ones((2, 8), dtype=torch.long)
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}, "h": {0: "batch", 1: "seq"}}
    torch.onnx.export(
        _LastHidden(copy.deepcopy(encoder.model)),  # tracing leaves the traced model wrong on padded batches
        (ids, mask),
        path,
        input_names=["input_ids", "attention_mask"],
        output_names=["h"],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )
    return path


def _ort(encoder: Encoder, folder: str, int8: bool, per_channel: bool = True) -> Encoder:
    path = _onnx_export(encoder, folder) if not os.path.exists(os.path.join(folder, "model.onnx")) else None
    path = os.path.join(folder, "model.onnx")
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        out = os.path.join(folder, f"model_int8_{int(per_channel)}.onnx")
        quantize_dynamic(path, out, per_channel=per_channel, weight_type=QuantType.QInt8)
        path = out
    return Encoder(encoder.name, encoder.tokenizer, _OrtModel(path, encoder.model.config), encoder.fingerprint + "+ort")


def _stsb(quick: bool) -> tuple[list[str], list[str], np.ndarray]:
    pairs = load_pairs(stsb_dir() / "stsb-en-test.csv")
    n = 400 if quick else len(pairs.sentence1)
    return pairs.sentence1[:n], pairs.sentence2[:n], np.asarray(pairs.scores[:n], float)


def _spearman(fn: EncodeFn, s1: list[str], s2: list[str], gold: np.ndarray) -> float:
    return correlations(cosine_pairs(fn(s1), fn(s2)), gold)["spearman"]


def _batch_drift(fn: EncodeFn, texts: list[str]) -> float:
    """Largest 1 - cos between each of a few sentences encoded alone and inside one padded batch."""
    together = l2_normalize(fn(texts))  # (m, d)
    alone = l2_normalize(np.concatenate([fn([t]) for t in texts]))  # (m, d)
    return float(1.0 - np.min(np.sum(together * alone, axis=1)))


def run(quick: bool, repeat: int, only: list[str] | None) -> dict[str, object]:
    from sentence_transformers import SentenceTransformer

    encoder = load_encoder()
    config = EmbedConfig()
    s1, s2, gold = _stsb(quick)
    texts = list(dict.fromkeys(s1 + s2))[: 300 if quick else 1000]
    drift_texts = [*texts[:8], " ".join(texts[:6])]  # short ones padded next to a long one
    st = SentenceTransformer(default_model_path(), device="cpu")
    st.max_seq_length = config.max_length
    tmp = tempfile.mkdtemp(prefix="isoscope-ort-")

    builders: dict[str, Callable[[], Encoder | None]] = {
        "ours_fp32": lambda: encoder,
        "torch_dynamic": lambda: _torch_dynamic(encoder),
        "torchao_int8_dyn": lambda: _torchao(encoder, weight_only=False),
        "torchao_int8_weight_only": lambda: _torchao(encoder, weight_only=True),
        "quanto_int8_weights": lambda: _quanto(encoder),
        "ort_fp32": lambda: _ort(encoder, tmp, int8=False),
        "ort_int8_per_tensor": lambda: _ort(encoder, tmp, int8=True, per_channel=False),
        "ort_int8_per_channel": lambda: _ort(encoder, tmp, int8=True, per_channel=True),
    }
    fns: dict[str, EncodeFn] = {
        "sentence_transformers": lambda t: st.encode(t, batch_size=64, show_progress_bar=False, convert_to_numpy=True)
    }
    rows: dict[str, dict[str, object]] = {}
    for name, build in builders.items():
        if (only and name not in only and name != "ours_fp32") or (not only and name in SLOW):
            continue
        try:
            start = time.perf_counter()
            enc = build()
            rows[name] = {"build_s": round(time.perf_counter() - start, 1)}
        except Exception as exc:  # a candidate that does not install or run here is a finding, not a crash
            rows[name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
            log.warning("%s: %s", name, rows[name]["error"])
            continue
        fns[name] = lambda t, enc=enc: encode(enc, t, "mean", config=config, cache=None)
        start = time.perf_counter()
        fns[name](texts[:64])  # warm-up
        log.info("%s built in %.1f s, warm-up %.1f s", name, rows[name]["build_s"], time.perf_counter() - start)
    rows.setdefault("sentence_transformers", {})
    best = {name: float("inf") for name in fns}
    for i in range(repeat):
        names = list(fns) if i % 2 == 0 else list(reversed(fns))
        for name in names:
            start = time.perf_counter()
            fns[name](texts)
            best[name] = min(best[name], time.perf_counter() - start)
            log.info("run %d %s: %.1f s", i, name, time.perf_counter() - start)
    ref = len(texts) / best["sentence_transformers"]
    base = None
    for name, fn in fns.items():
        rate = len(texts) / best[name]
        spearman = _spearman(fn, s1, s2, gold)
        base = spearman if name == "ours_fp32" else base
        rows[name].update(
            sentences_per_s=round(rate, 1),
            ratio=round(rate / ref, 3),
            spearman=round(spearman, 2),
            batch_drift=_batch_drift(fn, drift_texts),
        )
    for row in rows.values():
        if "spearman" in row and base is not None:
            row["spearman_loss"] = round(base - float(row["spearman"]), 2)
    return {
        "bench": "quantize_survey",
        "mode": "quick" if quick else "full",
        "n_timed": len(texts),
        "n_pairs": len(s1),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "load_avg": os.getloadavg()[0],
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 sentences timed, 400 test pairs scored")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--only", nargs="*", help=f"candidate names to run (ours_fp32 always runs; {', '.join(SLOW)} only when named)"
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    result = run(args.quick, args.repeat, args.only)
    for name, row in result["rows"].items():
        print(f"{name:28s} {json.dumps(row)}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
