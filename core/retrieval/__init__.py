"""Would a fix help my search? Retrieval and clustering scored before and after calibration, with significance.

One concept per module:

- ``task``: ``RetrievalTask`` (queries, documents, graded qrels) and ``build_task``, where every reader ends: ids
  unique, qrels naming known ids, queries without a relevant document left out (one warning each);
- ``load``: the readers, bounded like every file (``isoscope.data``): a BEIR folder or zip, a table of (query,
  document[, grade]) rows, two vectors files and qrels (``load_task`` picks one);
- ``embedding``: ``embed_side``, the one function that embeds a side (queries or documents) with its prompt, and
  ``side_prompt`` (the user's text, a prompt the model names, or the model's ``query``/``document`` prompt);
- ``options``: the metrics' names and the search's sizes (light: the command line's help reads them);
- ``variants``: the fixes' grammar (``raw``, a calibration method fitted on the documents, ``METHOD@queries``,
  ``csls[:K]``), light to import; ``fixes``: ``fit_variant``, which sees vectors only, never the qrels;
- ``search``: exact search to depth 100 (``isoscope.neighbours.exact``), CSLS, the documents' hubness;
- ``metrics``: nDCG@10, Recall@10/100, MRR@10, MAP@100 per query, by pytrec_eval;
- ``stats``: the paired randomisation test and the bootstrap interval (scipy; ``bootstrap_interval`` for any
  statistic of paired per-query scores), and the verdict;
- ``run``: a run end to end (``retrieval_report``, ``evaluate_retrieval`` -> ``RetrievalResult``);
- ``clustering``: mini-batch k-means and V-measure over seeds, raw vs each fix (``cluster_scores``).

Imports isoscope.data, encode, calibrate, neighbours, geometry, comparison and evaluate; only the commands, the
Space API and the dashboard import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isoscope._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("RetrievalTask", "build_task"), "task"),
    **dict.fromkeys(("load_beir", "load_beir_zip", "load_task", "load_task_table", "load_vector_task"), "load"),
    **dict.fromkeys(("embed_side", "side_prompt"), "embedding"),
    **dict.fromkeys(("RetrievalConfig", "RetrievalResult", "evaluate_retrieval", "retrieval_report"), "run"),
    **dict.fromkeys(("ClusteringResult", "cluster_scores"), "clustering"),
    **dict.fromkeys(("METRICS",), "options"),
    **dict.fromkeys(("PairedTest", "bootstrap_interval", "paired_test"), "stats"),
    **dict.fromkeys(("parse_variant",), "variants"),
}
__all__ = [
    "METRICS",
    "ClusteringResult",
    "PairedTest",
    "RetrievalConfig",
    "RetrievalResult",
    "RetrievalTask",
    "bootstrap_interval",
    "build_task",
    "cluster_scores",
    "embed_side",
    "evaluate_retrieval",
    "load_beir",
    "load_beir_zip",
    "load_task",
    "load_task_table",
    "load_vector_task",
    "paired_test",
    "parse_variant",
    "retrieval_report",
    "side_prompt",
]  # the names of _EXPORTS

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from isoscope.retrieval.clustering import ClusteringResult, cluster_scores
    from isoscope.retrieval.embedding import embed_side, side_prompt
    from isoscope.retrieval.load import load_beir, load_beir_zip, load_task, load_task_table, load_vector_task
    from isoscope.retrieval.options import METRICS
    from isoscope.retrieval.run import RetrievalConfig, RetrievalResult, evaluate_retrieval, retrieval_report
    from isoscope.retrieval.stats import PairedTest, bootstrap_interval, paired_test
    from isoscope.retrieval.task import RetrievalTask, build_task
    from isoscope.retrieval.variants import parse_variant
