"""Encoders run by ONNX Runtime: the export, the session, and a module that answers like a transformers encoder.

Two exports per model, each made once and cached (``isoscope.encode.onnx_cache``): ``last`` has one output, the
last hidden state (what ``cls``, ``mean``, ``max`` and the T5 poolings read), and ``all`` has every hidden state
(the layer poolings). A graph whose every layer is an output keeps every layer's buffer alive and copies it out:
measured on all-MiniLM-L6-v2 int8, one thread, 800 STS-B sentences, ``last`` took 2.44 CPU-s against 2.80 for
``all`` (bench/encode_peers.py measures the whole engine).

How the cores are used (measured before anything else was tuned, because the int8 path lost to
sentence-transformers' ONNX export as soon as other jobs shared the cores): ONNX Runtime's default intra-op
pool splits each matrix product over the threads, which then wait for each other and spin while they wait. On
two cores shared with other processes (load 6-9), one session with 2 spinning threads embedded 87 sentences/s,
the same without spinning 112/s, and two single-threaded runs of *different batches* at once 118/s (235/s vs
149/s at a lighter load). So a session here has one intra-op thread that never spins, and
``OrtEncoderBody.concurrent_batches`` (the process's torch thread count, read once) batches run at the same
time (``isoscope.encode.embed`` does that): no thread ever waits for another, whatever else runs on the cores.
Each batch's result depends only on that batch, so vectors stay the same whatever the scheduling.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import torch

from isoscope.encode.encoder import Encoder

log = logging.getLogger(__name__)

OPSET = 17
EXPORT_VERSION = 2  # bump when export_onnx changes the graph it writes
Outputs = Literal["last", "all"]
OUTPUTS: tuple[str, ...] = ("last", "all")
SourceFn = Callable[[str], bytes]  # outputs kind -> verified ONNX model bytes
CheckFn = Callable[[str, "OrtEncoderBody"], None]  # raises EngineMismatch when a new session disagrees with torch


class EngineMismatch(Exception):
    """An exported graph whose vectors are not the fp32 model's within the stated tolerance."""


# --------------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------------


class _Exported(torch.nn.Module):
    """(input_ids, attention_mask) -> the last hidden state, or every hidden state (embeddings first)."""

    def __init__(self, body: torch.nn.Module, outputs: str) -> None:
        super().__init__()
        self.body = body
        self.all = outputs == "all"

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.body(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=self.all)
        return tuple(out.hidden_states) if self.all else (out.last_hidden_state,)


def encoder_body(model: torch.nn.Module, is_encoder_decoder: bool) -> torch.nn.Module:
    """What gets exported: the model, or a T5 model's encoder stack."""
    return model.get_encoder() if is_encoder_decoder else model


def export_onnx(encoder: Encoder, path: Path, outputs: str = "all") -> int:
    """Export the encoder body of ``encoder`` (fp32, torch) to ONNX at ``path``; returns the number of outputs.
    Dynamic batch and sequence axes; traced on a padded batch, from a private copy of the model (tracing leaves
    the traced module computing wrong results on padded batches afterwards)."""
    if outputs not in OUTPUTS:
        raise ValueError(f"outputs must be one of {OUTPUTS}, got {outputs!r}")
    body = copy.deepcopy(encoder_body(encoder.model, encoder.is_encoder_decoder)).eval()
    names = [f"hidden_{i}" for i in range(encoder.num_layers + 1)] if outputs == "all" else ["last_hidden_state"]
    ids = torch.full((2, 8), 5, dtype=torch.long)  # (2, 8): any in-vocabulary id traces the same graph
    mask = torch.ones((2, 8), dtype=torch.long)
    mask[1, 5:] = 0  # one padded row, so the mask path is traced as it runs
    axes = {name: {0: "batch", 1: "sequence"} for name in ["input_ids", "attention_mask", *names]}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer and deprecation warnings of the TorchScript exporter
        torch.onnx.export(
            _Exported(body, outputs),
            (ids, mask),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=names,
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
    return len(names)


# --------------------------------------------------------------------------------------------------
# The session and the module behind the Encoder
# --------------------------------------------------------------------------------------------------


def make_session(model: bytes):
    """A CPU session of ``model`` (verified bytes) with one intra-op thread that never spins (module docstring)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3  # errors only: ORT warns about initializers it folds
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


class OrtEncoderBody(torch.nn.Module):
    """ONNX Runtime sessions answering like a transformers encoder: ``last_hidden_state`` and ``hidden_states``.

    ``source(kind)`` gives the model bytes of an export (``last`` or ``all``); each session is made on first use.
    ``check(kind, body)``, when given, runs once per new session and raises ``EngineMismatch`` when its vectors
    are not the torch model's; that export is then never used and ``fallback`` (the torch body) answers instead.
    """

    def __init__(
        self,
        source: SourceFn,
        config: object,
        input_embeddings: torch.nn.Module,
        *,
        check: CheckFn | None = None,
        fallback: torch.nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.config = config
        self.embeddings_fp32 = input_embeddings  # static token vectors (frequency pages) stay fp32
        self.check = check
        self.fallback = fallback
        self.concurrent_batches = max(1, torch.get_num_threads())  # read once, never set (shared processes)
        self._sessions: dict[str, object] = {}
        self._lock = threading.Lock()

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.embeddings_fp32

    def session(self, kind: str):
        """The session of export ``kind``, made on first use (None: that export failed its check)."""
        with self._lock:
            if kind not in self._sessions:
                self._sessions[kind] = make_session(self.source(kind))
                if self.check is not None:
                    try:
                        self.check(kind, self)
                    except EngineMismatch as exc:
                        log.warning("ONNX Runtime is not used for this model's %s export: %s", kind, exc)
                        self._sessions[kind] = None
            return self._sessions[kind]

    def run(self, kind: str, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The outputs of export ``kind`` for one batch, each (b, t, d); ``session(kind)`` must exist."""
        feed = {"input_ids": input_ids.cpu().numpy(), "attention_mask": attention_mask.cpu().numpy()}
        return tuple(torch.from_numpy(h) for h in self._sessions[kind].run(None, feed))

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        **_: object,
    ):
        from transformers.modeling_outputs import BaseModelOutput

        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        kind = "all" if output_hidden_states else "last"
        if self.session(kind) is None and self.fallback is not None:
            return self.fallback(
                input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=output_hidden_states
            )
        hidden = self.run(kind, input_ids, attention_mask)
        return BaseModelOutput(last_hidden_state=hidden[-1], hidden_states=hidden if output_hidden_states else None)


class OrtSeq2Seq(torch.nn.Module):
    """A T5-style model whose encoder runs in ONNX Runtime and whose decoder stays the fp32 torch one."""

    def __init__(self, body: OrtEncoderBody, fp32_model: torch.nn.Module) -> None:
        super().__init__()
        self.body = body
        self.decoder = fp32_model.get_decoder()
        self.config = fp32_model.config
        self.concurrent_batches = body.concurrent_batches

    def get_encoder(self) -> OrtEncoderBody:
        return self.body

    def get_decoder(self) -> torch.nn.Module:
        return self.decoder

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.body.get_input_embeddings()

    def forward(self, *args: object, **kwargs: object):
        raise TypeError("call get_encoder() and get_decoder() of an ONNX Runtime encoder-decoder model")


def require_onnxruntime(what: str = "--precision int8") -> None:
    """ONNX Runtime needs onnxruntime and onnx; without them, one line that says what to install."""
    import importlib.util

    from isoscope.errors import InputError

    missing = [m for m in ("onnxruntime", "onnx") if importlib.util.find_spec(m) is None]
    if missing:
        raise InputError(f"{what} needs {' and '.join(missing)}: pip install onnxruntime onnx")


def onnx_encoder(
    encoder: Encoder,
    source: SourceFn,
    fingerprint: str,
    *,
    precision: str,
    check: CheckFn | None = None,
) -> Encoder:
    """An ``Encoder`` whose body runs in ONNX Runtime from the exports ``source`` gives (made from the torch
    ``encoder``); T5's decoder and the input embeddings come from ``encoder``. With a ``check``, an export that
    fails it falls back to the torch body."""
    fp32 = encoder.model
    fallback = encoder_body(fp32, encoder.is_encoder_decoder) if check is not None else None
    body = OrtEncoderBody(source, fp32.config, fp32.get_input_embeddings(), check=check, fallback=fallback)
    model = OrtSeq2Seq(body, fp32) if encoder.is_encoder_decoder else body
    model.eval()
    return dataclasses.replace(encoder, model=model, fingerprint=fingerprint, precision=precision, engine="onnx")
