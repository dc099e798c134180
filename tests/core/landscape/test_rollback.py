"""isoscope.landscape.rollback: one group restored exactly, and known metrics at theta1 reused (tiny BERT)."""

from __future__ import annotations

import pytest
import torch

from isoscope.landscape.flat import norm
from isoscope.landscape.rollback import layer_groups, rollback_table


def test_rollback_restores_exactly_one_group(tiny, tiny_eval):
    model, layout, evaluate = tiny_eval
    theta0 = layout.flatten(model)
    groups = layer_groups(layout, tiny.num_layers)
    assert [g for g in groups] == ["embeddings", "lower", "middle", "upper", "encoder"]
    assert groups["upper"].layers == (2,)
    parts = sum(groups[g].n_params for g in ("embeddings", "lower", "middle", "upper"))
    assert parts == groups["encoder"].n_params == layout.prefix_size("encoder.")
    theta1 = theta0.clone()
    for a, b in groups["upper"].slices:
        theta1[a:b] += 0.5 * torch.randn(b - a, generator=torch.Generator().manual_seed(a))
    rows = {
        r["group"]: r
        for r in rollback_table(evaluate, layout, theta0=theta0, theta1=theta1, num_layers=tiny.num_layers)
    }
    at0, at1 = evaluate(theta0), evaluate(theta1)
    assert at1["train_loss"] != at0["train_loss"]
    assert rows["none"]["train_loss"] == at1["train_loss"]
    assert rows["upper"]["train_loss"] == at0["train_loss"] and rows["encoder"]["train_loss"] == at0["train_loss"]
    for g in ("embeddings", "lower", "middle"):
        assert rows[g]["train_loss"] == at1["train_loss"] and rows[g]["change_norm"] == 0.0
    assert rows["upper"]["change_norm"] == pytest.approx(norm(theta1 - theta0), rel=1e-6)


def test_rollback_takes_known_metrics_at_theta1(tiny, tiny_eval) -> None:
    """Passing evaluate(theta1) gives the same table and skips that evaluation."""
    model, layout, evaluate = tiny_eval
    theta0 = layout.flatten(model)
    theta1 = theta0 + 0.05 * torch.randn(theta0.shape, generator=torch.Generator().manual_seed(1))
    calls: list[torch.Tensor] = []

    def counted(theta: torch.Tensor) -> dict[str, float]:
        calls.append(theta)
        return evaluate(theta)

    full = rollback_table(counted, layout, theta0=theta0, theta1=theta1, num_layers=tiny.num_layers)
    n_full = len(calls)
    known = rollback_table(
        counted, layout, theta0=theta0, theta1=theta1, num_layers=tiny.num_layers, at_theta1=evaluate(theta1)
    )
    assert known == full
    assert len(calls) - n_full == n_full - 1
