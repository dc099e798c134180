"""BERT-flow (Li et al. 2020): a Glow-style normalizing flow that maps sentence vectors to a standard normal.

Read top to bottom: the layers (``_ActNorm``, ``_LULinear``/``_Permutation``, ``_Coupling``), the network
(``_FlowNet``), the likelihood (``_nll``) and the calibrator (``Flow``: its hyperparameters, fit by maximum
likelihood with Adam, transform, inverse_transform, save/load).

It starts where whitening ends (a fixed whitening pre-transform, zero-initialised coupling outputs: the
untrained flow gives whitening's cosines); training then removes non-Gaussian structure. On STS-B that
structure is partly semantic: longer training lowers the likelihood further but also lowers STS Spearman,
so the default schedule is short (see ``Flow``).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from isoscope.calibrate.base import Calibrator, EpochProgressFn, check_array
from isoscope.calibrate.linear import Whitening
from isoscope.errors import InputError

log = logging.getLogger(__name__)

FlowLinear = Literal["lu", "permutation"]
FLOW_LINEARS: tuple[str, ...] = ("lu", "permutation")
FlowCoupling = Literal["additive", "affine"]
FLOW_COUPLINGS: tuple[str, ...] = ("additive", "affine")
EVAL_ROWS = 4096  # rows of the fit data used for actnorm init and the flow's bits/dim summaries
# (lowest, highest) of each whole-number Flow parameter: the defaults are 4 steps, 1 level, 256 hidden
FLOW_BOUNDS: dict[str, tuple[int, int]] = {
    "n_steps": (1, 256),
    "n_levels": (1, 16),
    "hidden": (1, 65_536),
    "batch_size": (1, 10_000_000),
    "epochs": (0, 100_000),
    "seed": (-(2**63), 2**64 - 1),  # what torch.Generator.manual_seed accepts
}
# the real-valued parameters: finite, and >= 0 (noise, weight decay) or > 0 (the rest)
FLOW_NONNEGATIVE: tuple[str, ...] = ("noise_std", "weight_decay")
FLOW_POSITIVE: tuple[str, ...] = ("lr", "scale_bound", "whiten_eps", "clip_grad_norm", "divergence_bits")


class _ActNorm(nn.Module):
    """y = (x + bias) * exp(log_scale), initialised from data so the output has zero mean, unit variance."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(d))
        self.log_scale = nn.Parameter(torch.zeros(d))

    @torch.no_grad()
    def data_init(self, x: torch.Tensor) -> None:
        self.bias.copy_(-x.mean(0))
        self.log_scale.copy_(-torch.log(x.std(0).clamp_min(1e-6)))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (x + self.bias) * torch.exp(self.log_scale), self.log_scale.sum().expand(x.shape[0])

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        return y * torch.exp(-self.log_scale) - self.bias


class _LULinear(nn.Module):
    """Invertible y = x W^T with W = L U Q: a fixed random rotation Q then a learned LU-parameterised map.

    As in Glow, W is factored as (fixed) x (unit lower triangular) x (upper triangular with diagonal
    ``sign * exp(log_s)``), so log|det W| = sum(log_s). Glow's fixed factor is the permutation P of the LU
    decomposition of a random rotation; at d = 384 those factors are badly conditioned (a small step on L
    moves W a lot), so here the fixed factor is the rotation itself and L = U = I at the start.
    """

    def __init__(self, d: int, generator: torch.Generator | None = None) -> None:
        super().__init__()
        q, r = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=torch.float64))
        q = q * torch.sign(torch.diagonal(r))  # (d, d) Haar-distributed rotation
        self.register_buffer("rotation", q.float())
        self.register_buffer("lower_mask", torch.tril(torch.ones(d, d), -1))
        self.register_buffer("sign_s", torch.ones(d))
        self.lower = nn.Parameter(torch.zeros(d, d))
        self.upper = nn.Parameter(torch.zeros(d, d))
        self.log_s = nn.Parameter(torch.zeros(d))

    def _factors(self) -> tuple[torch.Tensor, torch.Tensor]:
        eye = torch.eye(self.lower.shape[0], dtype=self.lower.dtype)
        lower = self.lower * self.lower_mask + eye  # (d, d) unit lower triangular
        upper = self.upper * self.lower_mask.T + torch.diag(self.sign_s * torch.exp(self.log_s))  # (d, d)
        return lower, upper

    def weight(self) -> torch.Tensor:
        lower, upper = self._factors()
        return lower @ upper @ self.rotation  # (d, d)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lower, upper = self._factors()
        y = ((x @ self.rotation.T) @ upper.T) @ lower.T  # (b, d), cheaper than forming W for b < 2d
        return y, self.log_s.sum().expand(x.shape[0])

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        lower, upper = (f.double() for f in self._factors())
        v = torch.linalg.solve_triangular(lower, y.double().T, upper=False, unitriangular=True)  # (d, b)
        v = torch.linalg.solve_triangular(upper, v, upper=True)
        return (self.rotation.double().T @ v).T.to(y.dtype)


class _Permutation(nn.Module):
    """A fixed random permutation of the dimensions (log-det 0)."""

    def __init__(self, d: int, generator: torch.Generator | None = None) -> None:
        super().__init__()
        perm = torch.randperm(d, generator=generator)
        self.register_buffer("perm", perm)
        self.register_buffer("inv_perm", torch.argsort(perm))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x[:, self.perm], x.new_zeros(x.shape[0])

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        return y[:, self.inv_perm]


def _init_linear(layer: nn.Linear, generator: torch.Generator) -> None:
    """``nn.Linear.reset_parameters`` (Kaiming-uniform weight, uniform bias) drawing from ``generator``."""
    with torch.no_grad():
        nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
        bound = 1 / math.sqrt(layer.in_features) if layer.in_features > 0 else 0
        nn.init.uniform_(layer.bias, -bound, bound, generator=generator)


class _Coupling(nn.Module):
    """x = [a, b]: b' = b + t(a) (additive) or b * s(a) + t(a) with log s bounded by tanh (affine).

    The net's layers are initialised like ``nn.Linear`` but from ``generator`` (never the global RNG, which
    other users of the process share); the last layer is zero, so the untrained coupling is the identity.
    """

    def __init__(self, d: int, hidden: int, affine: bool, scale_bound: float, generator: torch.Generator) -> None:
        super().__init__()
        self.d_a = d // 2
        self.d_b = d - self.d_a
        self.affine = affine
        self.scale_bound = scale_bound
        out = 2 * self.d_b if affine else self.d_b
        layers = [nn.Linear(self.d_a, hidden, device="meta"), nn.ReLU(), nn.Linear(hidden, hidden, device="meta")]
        self.net = nn.Sequential(*layers, nn.ReLU(), nn.Linear(hidden, out, device="meta")).to_empty(device="cpu")
        for layer in (self.net[0], self.net[2], self.net[4]):  # all three draw, as nn.Linear would
            _init_linear(layer, generator)
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def _shift_logscale(self, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        h = self.net(a)
        if not self.affine:
            return h, None
        shift, raw = h[:, : self.d_b], h[:, self.d_b :]
        return shift, self.scale_bound * torch.tanh(raw / self.scale_bound)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = x[:, : self.d_a], x[:, self.d_a :]
        shift, log_s = self._shift_logscale(a)
        if log_s is None:
            return torch.cat([a, b + shift], 1), x.new_zeros(x.shape[0])
        return torch.cat([a, b * torch.exp(log_s) + shift], 1), log_s.sum(1)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        a, b = y[:, : self.d_a], y[:, self.d_a :]
        shift, log_s = self._shift_logscale(a)
        if log_s is None:
            return torch.cat([a, b - shift], 1)
        return torch.cat([a, (b - shift) * torch.exp(-log_s)], 1)


class _FlowNet(nn.Module):
    """The trainable part of the flow: levels of steps with dimensions factored out between levels."""

    def __init__(self, d: int, flow: Flow) -> None:
        """The network of ``flow``'s hyperparameters (architecture and seed) for ``d`` dimensions."""
        super().__init__()
        gen = torch.Generator().manual_seed(flow.seed)  # fixed mixing maps
        init_gen = torch.Generator().manual_seed(flow.seed)  # coupling nets
        self.d = d
        self.level_dims: list[int] = []
        self.levels = nn.ModuleList()
        width = d
        for level in range(flow.n_levels):
            if level > 0:
                width = width - width // 2  # the first half continues, the rest went to the prior
            self.level_dims.append(width)
            steps = nn.ModuleList()
            for _ in range(flow.n_steps):
                linear = _LULinear(width, gen) if flow.linear == "lu" else _Permutation(width, gen)
                steps.append(
                    nn.ModuleList(
                        [
                            _ActNorm(width),
                            linear,
                            _Coupling(width, flow.hidden, flow.coupling == "affine", flow.scale_bound, init_gen),
                        ]
                    )
                )
            self.levels.append(steps)

    @staticmethod
    def shapes(d: int, flow: Flow) -> dict[str, tuple[int, ...]]:
        """The names and shapes of ``_FlowNet(d, flow).state_dict()``, without building it (nothing allocated)."""
        out: dict[str, tuple[int, ...]] = {}
        width, h = d, flow.hidden
        for level in range(flow.n_levels):
            if level > 0:
                width = width - width // 2
            d_a = width // 2
            d_b = width - d_a
            n_out = 2 * d_b if flow.coupling == "affine" else d_b
            for step in range(flow.n_steps):
                pre = f"levels.{level}.{step}."
                out.update({pre + "0.bias": (width,), pre + "0.log_scale": (width,)})
                if flow.linear == "lu":
                    square, vector = (width, width), (width,)
                    for k in ("lower", "upper", "rotation", "lower_mask"):
                        out[pre + "1." + k] = square
                    out.update({pre + "1.log_s": vector, pre + "1.sign_s": vector})
                else:
                    out.update({pre + "1.perm": (width,), pre + "1.inv_perm": (width,)})
                for i, (n_in, n_o) in enumerate(((d_a, h), (h, h), (h, n_out))):
                    out[f"{pre}2.net.{2 * i}.weight"] = (n_o, n_in)
                    out[f"{pre}2.net.{2 * i}.bias"] = (n_o,)
        return out

    @torch.no_grad()
    def data_init(self, x: torch.Tensor) -> None:
        """Initialise every actnorm from the activations it sees on ``x``."""
        for i, steps in enumerate(self.levels):
            if i > 0:
                x = x[:, : self.level_dims[i]]
            for step in steps:
                step[0].data_init(x)
                for layer in step:
                    x = layer(x)[0]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(b, d) -> latent (b, d), log|det J| (b,)."""
        log_det = x.new_zeros(x.shape[0])
        factored: list[torch.Tensor] = []
        for i, steps in enumerate(self.levels):
            if i > 0:
                keep = self.level_dims[i]
                factored.append(x[:, keep:])
                x = x[:, :keep]
            for step in steps:
                for layer in step:
                    x, ld = layer(x)
                    log_det = log_det + ld
        return torch.cat([x, *reversed(factored)], 1), log_det

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        widths = self.level_dims
        x = z[:, : widths[-1]]
        offset = widths[-1]
        for i in range(len(self.levels) - 1, -1, -1):
            for step in reversed(self.levels[i]):
                for layer in reversed(step):
                    x = layer.inverse(x)
            if i > 0:
                n_out = widths[i - 1] - widths[i]
                x = torch.cat([x, z[:, offset : offset + n_out]], 1)
                offset += n_out
        return x


def _nll(z: torch.Tensor, log_det: torch.Tensor) -> torch.Tensor:
    """Per-sample negative log-likelihood (nats) under a standard normal prior. (b,)"""
    d = z.shape[1]
    return 0.5 * (z * z).sum(1) + 0.5 * d * math.log(2 * math.pi) - log_det


class Flow(Calibrator):
    """BERT-flow (Li et al. 2020): a Glow-style normalizing flow to a standard normal, trained on embeddings.

    Conditioning (a plain Glow on raw sentence vectors diverged in a trial, NLL ~1e12):

    - the input is first whitened by a fixed ``Whitening`` (part of the flow, its log-det counted);
    - the mixing maps are fixed permutations, or (``linear="lu"``) LU-parameterised maps that start as a
      random rotation; actnorm is initialised from the data; the last layer of every coupling net is zero,
      so the untrained flow is whitening followed by a rotation/permutation and a near-identity actnorm:
      it gives the same cosines as whitening;
    - Gaussian noise (``noise_std``, in whitened units) is added to the training vectors: sentence vectors
      lie in a lower-dimensional subspace (e.g. LayerNorm outputs lose a direction), where the likelihood
      is unbounded and training diverges; the noise makes the density proper;
    - small learning rate, gradient-norm clipping, and a divergence guard.

    ``history_`` holds ``{"epoch", "bits_per_dim", "seconds"}`` per epoch (training loss on the noised
    vectors). ``gaussian_bits_per_dim_`` (untrained flow = a Gaussian fit, i.e. whitening) and
    ``bits_per_dim_`` (trained) are computed on the clean fit vectors (a fixed sample of at most
    ``EVAL_ROWS``, also used for the data-dependent actnorm init). Bits/dim is the negative
    log-likelihood of the input vectors, the whitening log-det included, divided by ``d ln 2``; embeddings
    are continuous and small, so it is often negative. A run whose loss becomes NaN/inf (or more than
    ``divergence_bits`` worse than at the start) stops with a warning, keeps the parameters of the last good
    epoch and sets ``diverged_ = True``; it never returns NaN vectors.

    The hyperparameters (``get_params``/``set_params``, checked by ``fit``): each of ``n_levels`` levels has
    ``n_steps`` steps of actnorm -> invertible linear map (``linear="lu"``) or fixed permutation -> coupling
    (``additive``, or ``affine`` with ``|log scale| < scale_bound``) whose nets are ``hidden`` wide; after each
    level but the last, half of the remaining dimensions are factored out to the prior (multi-scale, as in
    Glow). ``whiten``: the fixed whitening pre-transform (eigenvalue floor ``whiten_eps``). Adam (``lr``,
    ``weight_decay``) on batches of ``batch_size`` for ``epochs`` epochs, gradient norm clipped at
    ``clip_grad_norm``; ``seed`` seeds every random draw. The defaults are tuned on STS-B (all-MiniLM-L6-v2,
    17k x 384 vectors, fit on train+dev+test):

    - ``linear="permutation"``: after the fixed whitening the best linear map is already found, so learned
      LU maps only random-walk (same STS, 2-3x the time per epoch); ``"lu"`` is available.
    - a short schedule (3 epochs at lr 3e-4, about 25 s on one busy core): longer or faster training keeps
      lowering the NLL (held-out too) but also lowers STS Spearman - e.g. 1e-3 for 4 epochs cost about
      2 points on cls - because the non-Gaussian structure it removes (topic clusters) carries meaning.
    - ``noise_std=0.05``: needed for rank-deficient inputs (LayerNorm outputs), see above.
    """

    name = "flow"
    summary = "BERT-flow, a normalizing flow to an isotropic Gaussian (trained without labels)"
    order = 20
    trains_for_epochs = True

    def __init__(
        self,
        *,
        n_steps: int = 4,
        n_levels: int = 1,
        hidden: int = 256,
        coupling: FlowCoupling = "additive",
        linear: FlowLinear = "permutation",
        scale_bound: float = 2.0,
        whiten: bool = True,
        whiten_eps: float = 1e-6,
        noise_std: float = 0.05,
        lr: float = 3e-4,
        weight_decay: float = 0.0,
        clip_grad_norm: float = 1.0,
        epochs: int = 3,
        batch_size: int = 256,
        seed: int = 0,
        divergence_bits: float = 2.0,  # an epoch this many bits/dim worse than the start counts as diverged
    ) -> None:
        self.n_steps = n_steps
        self.n_levels = n_levels
        self.hidden = hidden
        self.coupling = coupling
        self.linear = linear
        self.scale_bound = scale_bound
        self.whiten = whiten
        self.whiten_eps = whiten_eps
        self.noise_std = noise_std
        self.lr = lr
        self.weight_decay = weight_decay
        self.clip_grad_norm = clip_grad_norm
        self.epochs = epochs
        self.batch_size = batch_size
        self.seed = seed
        self.divergence_bits = divergence_bits

    def _check_params(self) -> None:
        """Every hyperparameter of the right type and within ``FLOW_BOUNDS`` (checked before a network is built,
        so a hand-edited ``calibrator.json`` cannot make loading allocate without bound)."""
        if self.coupling not in FLOW_COUPLINGS:
            raise InputError(f"unknown coupling '{self.coupling}'; valid choices: {', '.join(FLOW_COUPLINGS)}")
        if self.linear not in FLOW_LINEARS:
            raise InputError(f"unknown linear '{self.linear}'; valid choices: {', '.join(FLOW_LINEARS)}")
        if not isinstance(self.whiten, bool):
            raise InputError(f"Flow whiten must be true or false; got {self.whiten!r:.40}")
        for name, (lo, hi) in FLOW_BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputError(f"Flow {name} must be a whole number; got {value!r:.40}")
            if not lo <= value <= hi:
                raise InputError(f"Flow {name} must be between {lo:,} and {hi:,}; got {value:,}")
        for name in (*FLOW_NONNEGATIVE, *FLOW_POSITIVE):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise InputError(f"Flow {name} must be a finite number; got {value!r:.40}")
            if value < 0 or (value == 0 and name in FLOW_POSITIVE):
                raise InputError(f"Flow {name} must be {'> 0' if name in FLOW_POSITIVE else '>= 0'}; got {value}")

    @classmethod
    def _from_params(cls, params: dict[str, Any], tensors: dict[str, np.ndarray], prefix: str, where: str):
        if set(params) == {"config"} and isinstance(params["config"], dict):  # saved before issue 36
            params = params["config"]
        unknown = set(params) - set(cls._get_param_names())
        if unknown:
            raise InputError(f"{where}: unknown Flow parameters {sorted(unknown)}")
        flow = cls(**params)
        flow._check_params()
        return flow

    def whitened_dims(self, d: int) -> int:
        return d if self.whiten else 0

    # -- numpy <-> torch

    def _pre(self, X: np.ndarray) -> tuple[np.ndarray, float]:
        """Fixed pre-transform (whitening or identity) and its log|det|."""
        if self.whitening_ is None:
            return X.astype(np.float32), 0.0
        return self.whitening_.transform(X), self.whitening_.log_abs_det()

    def _latent(self, Xw: np.ndarray, batch: int = 8192) -> tuple[np.ndarray, np.ndarray]:
        out, lds = [], []
        with torch.no_grad():
            for start in range(0, len(Xw), batch):
                z, ld = self.net_(torch.from_numpy(np.ascontiguousarray(Xw[start : start + batch])))
                out.append(z.numpy())
                lds.append(ld.numpy())
        if not out:
            return np.zeros((0, self.n_features_in_), np.float32), np.zeros(0, np.float32)
        return np.concatenate(out), np.concatenate(lds)

    def _bits_per_dim(self, Xw: np.ndarray, pre_log_det: float) -> float:
        z, ld = self._latent(Xw)
        nll = _nll(torch.from_numpy(z).double(), torch.from_numpy(ld).double() + pre_log_det)
        return float(nll.mean()) / (z.shape[1] * math.log(2))

    # -- fit

    def fit(self, X: np.ndarray, y: None = None, progress: EpochProgressFn | None = None) -> Flow:
        """Whiten, initialise, then train by maximum likelihood; ``progress(epoch, n_epochs, bits_per_dim)``.

        Every random draw comes from generators seeded with ``seed``; the process-wide torch RNG and thread
        settings are left alone (in the dashboard every session shares one process).
        """
        self._check_params()
        X = check_array(X, min_rows=2)
        d = X.shape[1]
        self.whitening_ = Whitening(eps=self.whiten_eps).fit(X) if self.whiten else None
        Xw, pre_ld = self._pre(X)
        self.n_features_in_ = d
        self.history_: list[dict[str, float]] = []
        self.diverged_ = False
        self.net_ = _FlowNet(d, self)
        gen = torch.Generator().manual_seed(self.seed)
        xt = torch.from_numpy(Xw)  # (n, d) float32
        # actnorm init and the bits/dim summaries use a fixed sample of at most EVAL_ROWS rows
        sample = torch.randperm(len(xt), generator=gen)[:EVAL_ROWS].sort().values
        clean = Xw[sample.numpy()]  # (m, d)
        noisy = xt[sample] + self.noise_std * torch.randn(len(sample), d, generator=gen)  # (m, d)
        self.net_.data_init(noisy)
        self.gaussian_bits_per_dim_ = self._bits_per_dim(clean, pre_ld)
        start_bits = self._bits_per_dim(noisy.numpy(), pre_ld)
        self._train(xt, pre_ld, gen, start_bits + self.divergence_bits, progress)
        self.net_.eval()
        for p in self.net_.parameters():
            p.requires_grad_(False)
        self.bits_per_dim_ = self._bits_per_dim(clean, pre_ld)
        return self

    def _train(
        self,
        xt: torch.Tensor,
        pre_ld: float,
        gen: torch.Generator,
        limit: float,
        progress: EpochProgressFn | None,
    ) -> None:
        """Adam on the mean NLL of noised mini-batches; stop at the first diverging epoch."""
        n, d = xt.shape
        params = list(self.net_.parameters())
        opt = torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)
        good = copy.deepcopy(self.net_.state_dict())
        to_bits = 1.0 / (d * math.log(2))
        for epoch in range(1, self.epochs + 1):
            start = time.perf_counter()
            total, bad = 0.0, False
            for idx in torch.randperm(n, generator=gen).split(self.batch_size):
                xb = xt[idx] + self.noise_std * torch.randn(len(idx), d, generator=gen)  # (b, d)
                z, ld = self.net_(xb)
                loss = _nll(z, ld + pre_ld).mean()
                if not torch.isfinite(loss):
                    bad = True
                    break
                loss.backward()
                nn.utils.clip_grad_norm_(params, self.clip_grad_norm)
                opt.step()
                opt.zero_grad(set_to_none=True)
                total += float(loss.detach()) * len(idx)
            bits = total / n * to_bits
            if bad or not math.isfinite(bits) or bits > limit or not self._params_finite():
                log.warning(
                    "flow training diverged at epoch %d/%d (loss %s); keeping the parameters of epoch %d. "
                    "Lower the learning rate (now %g).",
                    epoch,
                    self.epochs,
                    "NaN/inf" if bad or not math.isfinite(bits) else f"{bits:.3g} bits/dim",
                    epoch - 1,
                    self.lr,
                )
                self.net_.load_state_dict(good)
                self.diverged_ = True
                break
            good = copy.deepcopy(self.net_.state_dict())
            self.history_.append({"epoch": epoch, "bits_per_dim": bits, "seconds": time.perf_counter() - start})
            log.info("flow epoch %d/%d: %.4f bits/dim", epoch, self.epochs, bits)
            if progress is not None:
                progress(epoch, self.epochs, bits)

    def _params_finite(self) -> bool:
        return all(bool(torch.isfinite(p).all()) for p in self.net_.parameters())

    # -- transform

    def transform(self, X: np.ndarray) -> np.ndarray:
        X = self._check_input(X)
        z, _ = self._latent(self._pre(X)[0])
        if not np.isfinite(z).all():  # only reachable for inputs far outside the fitted data
            raise InputError(
                "the flow produced NaN/inf for some inputs; they are far outside the vectors it was fitted on"
            )
        return z.astype(np.float32)

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        Z = self._check_input(Z, "Z")
        with torch.no_grad():
            xw = self.net_.inverse(torch.from_numpy(Z.astype(np.float32))).numpy()
        if self.whitening_ is None:
            return xw.astype(np.float32)
        return self.whitening_.inverse_transform(xw)

    def score_samples(self, X: np.ndarray) -> np.ndarray:
        """Log-likelihood (nats) of each row under the fitted flow. (n,)"""
        X = self._check_input(X)
        Xw, pre_ld = self._pre(X)
        z, ld = self._latent(Xw)
        return -_nll(torch.from_numpy(z).double(), torch.from_numpy(ld).double() + pre_ld).numpy()

    # -- serialisation

    def _state(self) -> dict[str, Any]:
        return {
            **super()._state(),
            "history_": self.history_,
            "diverged_": bool(self.diverged_),
            "bits_per_dim_": self.bits_per_dim_,
            "gaussian_bits_per_dim_": self.gaussian_bits_per_dim_,
        }

    def _tensors(self) -> dict[str, np.ndarray]:
        out = {f"net.{k}": v.numpy() for k, v in self.net_.state_dict().items()}
        if self.whitening_ is not None:
            out.update({f"whiten.{k}": v for k, v in self.whitening_._tensors().items()})
        return out

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        d = int(state["n_features_in_"])
        if not 1 <= d <= 1_000_000:
            raise ValueError(f"implausible dimension {d}")
        shapes = {f"net.{k}": v for k, v in _FlowNet.shapes(d, self).items()}  # from the parameters: nothing built
        if self.whiten:
            w = Whitening(eps=self.whiten_eps)
            shapes.update({f"whiten.{k}": s for k, s in w._expected_shapes({"n_features_in_": d}).items()})
        return shapes

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        d = self.n_features_in_
        self.net_ = _FlowNet(d, self)
        sd = self.net_.state_dict()
        for k, v in sd.items():
            arr = tensors[f"net.{k}"]
            if np.dtype(arr.dtype) != np.dtype(str(v.dtype).replace("torch.", "")):
                raise ValueError(f"array net.{k} has dtype {arr.dtype}, expected {v.dtype}")
        self.net_.load_state_dict({k: torch.from_numpy(np.array(tensors[f"net.{k}"])) for k in sd})
        self.net_.eval()
        for p in self.net_.parameters():
            p.requires_grad_(False)
        self.whitening_ = None
        if self.whiten:
            w = Whitening(eps=self.whiten_eps)
            w._restore({"n_features_in_": d}, {k[7:]: v for k, v in tensors.items() if k.startswith("whiten.")})
            self.whitening_ = w
        self.history_ = [dict(h) for h in state["history_"]]
        self.diverged_ = bool(state["diverged_"])
        self.bits_per_dim_ = float(state["bits_per_dim_"])
        self.gaussian_bits_per_dim_ = float(state["gaussian_bits_per_dim_"])
