"""The residual MLP adapter: the ridge map plus a small MLP on top, ``y = x W + b + gelu(x W1 + b1) W2 + b2``.

The linear part is the ridge map of the train part (``isoscope.migrate.adapters.RidgeAdapter``, its penalty chosen on
held-out pairs); the MLP starts at zero (W2 = 0: the untrained adapter is the ridge map) and is trained with Adam on
the cosine loss, stopped early on the held-out part (the epoch with the best held-out mean cosine is kept). Every
random draw comes from a ``torch.Generator`` seeded with ``seed``; torch's global RNG and thread count are left
alone (the dashboard serves every session from one process).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from isoscope.calibrate.base import Param
from isoscope.errors import InputError
from isoscope.migrate.adapters import HOLDOUT, Adapter, RidgeAdapter, check_pairs, mean_cosine, split

MIN_MLP_PAIRS = 20  # a held-out part to stop on, and a train part to learn from


class MLPAdapter(Adapter):
    """The ridge map plus an MLP of ``hidden`` units trained on the residual, stopped early on held-out pairs."""

    name = "mlp"
    arguments = (Param("hidden", int, "H", "hidden units", low=1, high=8192, suggest=256),)
    summary = "residual MLP: the ridge map plus a small MLP on top, stopped early on held-out pairs"
    order = 40
    affine = False

    def __init__(
        self,
        hidden: int = 256,
        *,
        epochs: int = 200,
        patience: int = 10,
        lr: float = 1e-3,
        weight_decay: float = 1e-4,
        batch_size: int = 128,
        holdout: float = HOLDOUT,
        seed: int = 0,
    ) -> None:
        self.hidden = hidden
        self.epochs = epochs
        self.patience = patience
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.holdout = holdout
        self.seed = seed

    def _check_params(self, n: int) -> None:
        for name, low, high in (
            ("hidden", 1, 8192),
            ("epochs", 1, 100_000),
            ("patience", 1, 100_000),
            ("batch_size", 1, 1_000_000),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InputError(f"mlp {name} must be a whole number between {low:,} and {high:,}; got {value!r:.40}")
        for name in ("lr", "weight_decay"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise InputError(f"mlp {name} must be a finite number >= 0; got {value!r:.40}")
        if n < MIN_MLP_PAIRS:
            raise InputError(
                f"mlp needs at least {MIN_MLP_PAIRS} pairs (a part to train on, a part to stop on); got {n}"
            )

    def fit(self, X: np.ndarray, y: np.ndarray, progress: Any = None) -> MLPAdapter:
        import torch

        Xu, Yu = check_pairs(X, y)
        self._check_params(len(Xu))
        train, held = split(len(Xu), self.holdout, self.seed)
        linear = RidgeAdapter(holdout=self.holdout, seed=self.seed).fit(Xu[train], Yu[train])
        self.weight_, self.bias_ = linear.weight_, linear.bias_
        gen = torch.Generator().manual_seed(self.seed)
        d_in, d_out = Xu.shape[1], Yu.shape[1]
        params = {
            "w1": torch.randn(d_in, self.hidden, generator=gen) * math.sqrt(2.0 / d_in),
            "b1": torch.zeros(self.hidden),
            "w2": torch.zeros(self.hidden, d_out),  # the untrained adapter is the ridge map
            "b2": torch.zeros(d_out),
        }
        for p in params.values():
            p.requires_grad_(True)
        base = torch.from_numpy((Xu @ self.weight_ + self.bias_).astype(np.float32))  # (n, d_out)
        xt, yt = torch.from_numpy(Xu.astype(np.float32)), torch.from_numpy(Yu.astype(np.float32))
        best = self._train(params, (xt, base, yt), train, held, gen, progress)
        self.net_ = {k: v.detach().numpy().astype(np.float32) for k, v in best.items()}
        self._fitted(Xu, Yu)
        return self

    def _train(self, params: dict, data: tuple, train: np.ndarray, held: np.ndarray, gen, progress: Any) -> dict:
        """Adam on 1 - cos over the train rows; the parameters of the epoch with the best held-out mean cosine."""
        import torch

        xt, base, yt = data
        opt = torch.optim.AdamW(list(params.values()), lr=self.lr, weight_decay=self.weight_decay)
        train_t, held_t = torch.from_numpy(train), torch.from_numpy(held)
        best_score, best, waited = -math.inf, {k: v.detach().clone() for k, v in params.items()}, 0
        self.epochs_ = 0
        for epoch in range(self.epochs):
            for idx in train_t[torch.randperm(len(train_t), generator=gen)].split(self.batch_size):
                pred = base[idx] + _mlp(params, xt[idx])
                loss = 1.0 - torch.nn.functional.cosine_similarity(pred, yt[idx], dim=1).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            with torch.no_grad():
                score = mean_cosine((base[held_t] + _mlp(params, xt[held_t])).numpy(), yt[held_t].numpy())
            self.epochs_ = epoch + 1
            if progress is not None:
                progress(epoch + 1, self.epochs, score)
            if score > best_score + 1e-6:
                best_score, best, waited = score, {k: v.detach().clone() for k, v in params.items()}, 0
            else:
                waited += 1
                if waited >= self.patience:
                    break
        self.holdout_cosine_ = float(best_score)
        return best

    def transform(self, X: np.ndarray) -> np.ndarray:
        from scipy.special import erf

        Xu = self._check_x(X)
        hidden = Xu @ self.net_["w1"] + self.net_["b1"]  # (n, h)
        gelu = 0.5 * hidden * (1.0 + erf(hidden / math.sqrt(2.0)))  # torch's exact gelu
        return (Xu @ self.weight_ + self.bias_ + gelu @ self.net_["w2"] + self.net_["b2"]).astype(np.float32)

    def _state(self) -> dict[str, Any]:
        return {**super()._state(), "epochs_": self.epochs_, "holdout_cosine_": self.holdout_cosine_}

    def _tensors(self) -> dict[str, np.ndarray]:
        return {**super()._tensors(), **{f"net.{k}": v for k, v in self.net_.items()}}

    def _expected_shapes(self, state: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        d_in, d_out, h = int(state["n_features_in_"]), int(state["d_out_"]), int(self.hidden)
        net = {"net.w1": (d_in, h), "net.b1": (h,), "net.w2": (h, d_out), "net.b2": (d_out,)}
        return {**super()._expected_shapes(state), **net}

    def _restore(self, state: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        super()._restore(state, tensors)
        self.net_ = {k: np.asarray(tensors[f"net.{k}"], np.float32) for k in ("w1", "b1", "w2", "b2")}
        self.epochs_, self.holdout_cosine_ = int(state["epochs_"]), float(state["holdout_cosine_"])

    def affine_map(self):
        raise NotImplementedError("an MLP adapter is not an affine map: export it as a sentence-transformers module")


def _mlp(params: dict, x):
    import torch

    return torch.nn.functional.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
