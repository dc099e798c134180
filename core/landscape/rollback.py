"""Layer rollback: put one group of layers of theta1 back to theta0 and see what the model loses.

Groups: ``embeddings``, and the transformer layers cut into thirds: ``lower``, ``middle``, ``upper``
(6 layers -> 0-1, 2-3, 4-5; a group can be empty for very shallow models and is then skipped).
``encoder`` rolls back the whole encoder (only the trained head is kept). Next to each group's metrics
the table reports how far fine-tuning moved it: |delta_g| and |delta_g| / |theta0_g|.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from isoscope.landscape.flat import FlatLayout, layer_index, norm
from isoscope.landscape.records import Metrics, RollbackRow

log = logging.getLogger(__name__)

ROLLBACK_GROUPS: tuple[str, ...] = ("embeddings", "lower", "middle", "upper", "encoder")
ENCODER_PREFIX = "encoder."
EvalFn = Callable[[torch.Tensor], dict[str, float]]
ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class Group:
    name: str
    layers: tuple[int, ...]
    slices: tuple[tuple[int, int], ...]  # (start, stop) in the flat vector

    @property
    def n_params(self) -> int:
        return sum(b - a for a, b in self.slices)


def layer_groups(layout: FlatLayout, num_layers: int) -> dict[str, Group]:
    """Parameter slices of each rollback group, from parameter names."""
    thirds = np.array_split(np.arange(num_layers), 3)
    third_of = {int(k): name for name, part in zip(("lower", "middle", "upper"), thirds, strict=True) for k in part}
    slices: dict[str, list[tuple[int, int]]] = {g: [] for g in ROLLBACK_GROUPS}
    for name, span in layout.offsets().items():
        if not name.startswith(ENCODER_PREFIX):
            continue
        slices["encoder"].append(span)
        k = layer_index(name)
        if k is not None and k in third_of:
            slices[third_of[k]].append(span)
        elif k is None and "embeddings" in name:
            slices["embeddings"].append(span)
    layers = {"lower": thirds[0], "middle": thirds[1], "upper": thirds[2]}
    return {
        g: Group(g, tuple(int(k) for k in layers.get(g, ())), tuple(slices[g])) for g in ROLLBACK_GROUPS if slices[g]
    }


def rollback_table(
    evaluate: EvalFn,
    layout: FlatLayout,
    *,
    theta0: torch.Tensor,
    theta1: torch.Tensor,
    num_layers: int,
    progress: ProgressFn | None = None,
    at_theta1: dict[str, float] | None = None,
) -> list[dict[str, object]]:
    """One row for theta1 as is (``none``) and one per group rolled back to theta0.

    ``at_theta1``: ``evaluate(theta1)`` when the caller already has it (it is not computed again).
    """
    groups = layer_groups(layout, num_layers)
    metrics = Metrics.of(evaluate(theta1) if at_theta1 is None else at_theta1)
    rows = [RollbackRow(RollbackRow.NONE, (), 0, metrics)]
    with torch.inference_mode():
        work = theta1.clone()  # (p,)
        for k, group in enumerate(groups.values()):
            moved_sq = base_sq = 0.0
            for a, b in group.slices:
                moved_sq += norm(theta1[a:b] - theta0[a:b]) ** 2
                base_sq += norm(theta0[a:b]) ** 2
                work[a:b] = theta0[a:b]
            rows.append(
                RollbackRow(
                    group.name,
                    group.layers,
                    group.n_params,
                    Metrics.of(evaluate(work)),
                    change_norm=moved_sq**0.5,
                    relative_change=(moved_sq / base_sq) ** 0.5 if base_sq > 0 else float("nan"),
                )
            )
            for a, b in group.slices:
                work[a:b] = theta1[a:b]
            if progress is not None:
                progress(k + 1, len(groups))
    return [r.to_json() for r in rows]
