"""isotrieve's maps on the migration bench's vectors: run in .venv-migrate-peers (isotrieve 0.4), never imported by
Isoscope. Reads ``old.npy`` (k, d_a) and ``new.npy`` (k, d_b) (the fit pairs: the same texts in the old and the new
space), ``queries_new.npy`` (q, d_b) and ``documents_old.npy`` (n, d_a) from FOLDER; for each map and direction writes
the mapped vectors as ``{map}_{direction}.npy`` (new-legacy: the new queries mapped into the old space; old-new: the
old documents mapped into the new space) and ``peer.json`` (fit seconds, the time to map one vector, the alpha chosen,
and any map isotrieve refuses, with its message).

    .venv-migrate-peers/bin/python bench/migrate_peers/isotrieve_maps.py FOLDER
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
from isotrieve.mapping.linear import OrthogonalProcrustesMapping, RidgeMapping

MAPS = {"procrustes": OrthogonalProcrustesMapping, "ridge": RidgeMapping}
REPEATS = 21  # one vector mapped this many times; the median is its time


def main(folder: Path) -> None:
    old, new = np.load(folder / "old.npy"), np.load(folder / "new.npy")
    inputs = {
        "new-legacy": (new, old, np.load(folder / "queries_new.npy")),
        "old-new": (old, new, np.load(folder / "documents_old.npy")),
    }
    out: dict = {"isotrieve": version("isotrieve"), "pairs": len(old), "maps": {}}
    for name, cls in MAPS.items():
        for direction, (source, target, to_map) in inputs.items():
            key = f"{name}_{direction}"
            mapping = cls(seed=0)
            start = time.perf_counter()
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    mapping.fit(source, target)
            except ValueError as e:  # isotrieve's refusal (Procrustes needs d_src == d_tgt)
                out["maps"][key] = {"refused": str(e)}
                continue
            fit_s = time.perf_counter() - start
            mapped = mapping.transform(to_map).astype(np.float32)
            one = []
            for _ in range(REPEATS):
                t = time.perf_counter()
                mapping.transform(to_map[:1])
                one.append(time.perf_counter() - t)
            np.save(folder / f"{key}.npy", mapped)
            out["maps"][key] = {
                "fit_seconds": fit_s,
                "us_one_vector": 1e6 * float(np.median(one)),
                "alpha": getattr(mapping, "_chosen_alpha", None),
                "warnings": sorted({str(w.message).split(".")[0] for w in caught}),
            }
    (folder / "peer.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
