"""``isoscope.Space``: one embedding space (n vectors, their texts and metadata) and everything Isoscope measures
on it, as methods that call the library's own functions.

space = isoscope.embed(texts, pooling="mean")          # or isoscope.Space(vectors, texts, metadata)
space = isoscope.Space.from_file("openai.parquet:emb")  # vectors computed elsewhere (isoscope.data.vectors)
space.geometry()                                        # the Anisotropy page's metrics (a DataFrame)
white = space.calibrate("whitening")                    # a new Space; white.calibrator is the fitted one
white.neighbours("a query", k=5); space.sts("pairs.csv"); space.project("umap"); space.map(color="topic")
space.retrieval(DEMO_RETRIEVAL, ["centre", "whitening:64"]); space.clustering("topic")
isoscope.compare(space, white).overlap_at_k; space.report("report.html")

A space remembers how it was made (``provenance``): the model, its fingerprint and pooling, or the digest of
the vectors it was given, and the calibrations applied since. A space from a model can embed new texts the
same way (a query for ``neighbours``, the sentences of ``sts`` pairs), through its calibrations too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from isoscope.errors import InputError
from isoscope.space import sources

if TYPE_CHECKING:
    import pandas as pd

    from isoscope.cache import ArrayCache
    from isoscope.calibrate import Calibrator
    from isoscope.data import Pairs
    from isoscope.space.comparison import Comparison
    from isoscope.space.results import ClusteringReport, GeometryFrame, Projection, RetrievalReport, STSResult

log = logging.getLogger(__name__)

CARD_SAMPLE = 5000  # rows the card's quick numbers are computed on


class Space:
    """An embedding space: ``vectors`` (n, d) float32, optional ``texts`` (n,) and ``metadata`` (n rows).

    ``vectors`` may be any array-like: NumPy, torch (any dtype or device), a pandas column of lists, a pyarrow
    ``list<float>`` array, nested lists. The space keeps a read-only float32 view; change no array in place.
    """

    def __init__(
        self,
        vectors: Any,
        texts: Sequence[str] | None = None,
        metadata: Any = None,
        *,
        name: str | None = None,
        cache: bool | str | ArrayCache = True,
    ) -> None:
        array = sources.as_matrix(vectors)
        view = array.view()
        view.flags.writeable = False
        self.vectors: np.ndarray = view  # (n, d)
        self.warnings: list[str] = []  # about the input (lone surrogates replaced, a file's decoding)
        self.texts: list[str] | None = sources.as_texts(texts, len(view), warnings=self.warnings)
        self.metadata: pd.DataFrame = sources.as_metadata(metadata, len(view), self.warnings)
        self.name: str = sources.as_name(name, self.warnings)
        self.embedding: sources.Embedding | None = None  # how texts became the raw vectors, when a model did it
        self.transforms: tuple[Calibrator, ...] = ()  # calibrations applied after the embedding, in order
        self.parent: Space | None = None  # the space this one was calibrated from
        self.origin: dict[str, Any] = {"source": "array"}  # provenance of the raw vectors (model or file)
        self._cache = sources.as_cache(cache)
        self._memo: dict[Any, Any] = {}

    # ------------------------------------------------------------ construction

    @classmethod
    def _derived(cls, vectors: np.ndarray, like: Space, name: str, **attrs: Any) -> Space:
        """A space of checked float32 ``vectors`` sharing ``like``'s texts, metadata, embedding and cache."""
        space = cls.__new__(cls)
        view = np.ascontiguousarray(vectors, np.float32).view()
        view.flags.writeable = False
        space.vectors, space.texts, space.metadata, space.name = view, like.texts, like.metadata, name
        space.embedding, space.transforms, space.parent = like.embedding, like.transforms, None
        space.warnings, space.origin, space._cache, space._memo = [], dict(like.origin), like._cache, {}
        for key, value in attrs.items():
            setattr(space, key, value)
        return space

    @classmethod
    def from_file(
        cls,
        source: str | Path,
        column: str | None = None,
        *,
        text_column: str | None = None,
        texts: str | Path | None = None,
        name: str | None = None,
        cache: bool | str | ArrayCache = True,
    ) -> Space:
        """Vectors computed elsewhere, read by the bounded loader ``isoscope.data.load_vector_file``: ``.npy``,
        Parquet, Arrow/Feather, ``.safetensors`` or a Hugging Face datasets folder (``FILE:COLUMN`` names the
        vector column). The file's text column (``text_column``, default text/sentence/...) or a ``texts`` file
        (one text per vector, for .npy and .safetensors) gives the texts; the file's other columns the metadata.
        The space's provenance is the file, its column, stored dtype and the digest of the decoded vectors."""
        from isoscope.data import load_vector_file

        table = load_vector_file(source, column=column, text_column=text_column, texts=texts)
        space = cls(table.vectors, table.texts, table.meta, name=name or table.name, cache=cache)
        space.origin = {"source": "file", "path": table.name, **table.origin.to_dict()}
        space.origin["fingerprint"] = table.origin.fingerprint
        space.warnings = list(table.warnings)
        for warning in space.warnings:
            log.warning("%s", warning)
        return space

    # ------------------------------------------------------------ what it is

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.vectors.shape[0]), int(self.vectors.shape[1])

    @property
    def calibrator(self) -> Calibrator | None:
        """The fitted calibrator that made this space from its parent (None for a raw space)."""
        return self.transforms[-1] if self.transforms else None

    @property
    def label(self) -> str:
        """``raw``, or the calibrations applied, in order (``whitening``, ``sn → abtt:3``)."""
        return " → ".join(c.method for c in self.transforms) if self.transforms else "raw"

    @property
    def encoder(self) -> Any:
        return self.embedding.encoder if self.embedding is not None else None

    @property
    def digest(self) -> str:
        """SHA-256 of the vectors (shape and float32 bytes)."""
        if "digest" not in self._memo:
            from isoscope.data.vectors import vectors_digest

            self._memo["digest"] = vectors_digest(self.vectors)
        return self._memo["digest"]

    @property
    def provenance(self) -> dict[str, Any]:
        """How the space was made: the model (name, fingerprint, pooling, ...) or the vectors' source and digest,
        the number of texts and their digest, and the calibrations applied."""
        from isoscope.cache import text_digest

        out: dict[str, Any] = dict(self.origin)
        if self.embedding is not None:
            out.update(self.embedding.provenance())
        elif out.get("source") == "array":
            out["digest"] = self.digest
        out["rows"], out["dims"] = self.shape
        if self.texts is not None:
            out["texts_digest"] = text_digest(self.texts)
        out["calibration"] = [c.method for c in self.transforms]
        return out

    def lineage(self) -> list[Space]:
        """The spaces this one was calibrated from, the raw one first, then this one."""
        chain, space = [], self
        while space is not None:
            chain.append(space)
            space = space.parent
        return chain[::-1]

    def __repr__(self) -> str:
        n, d = self.shape
        return f"Space({self.name!r}, {n:,} x {d}, {self.label})"

    def __getitem__(self, rows: Any) -> Space:
        """The rows ``rows`` (ids, a slice or a boolean mask) as a new space that embeds new texts the same way."""
        ids = np.arange(len(self))[rows] if not isinstance(rows, np.ndarray) or rows.dtype != bool else None
        if ids is None:
            ids = np.flatnonzero(np.asarray(rows))
        ids = np.atleast_1d(np.asarray(ids, np.int64))
        sub = Space._derived(self.vectors[ids], self, f"{self.name} [{len(ids):,} rows]")
        sub.texts = None if self.texts is None else [self.texts[i] for i in ids]
        sub.metadata = self.metadata.iloc[ids].reset_index(drop=True)
        sub.origin = {**self.origin, "rows_of": self.name, "row_count": len(ids)}
        return sub

    # ------------------------------------------------------------ new texts in this space

    def embed_texts(self, texts: Sequence[str], progress: bool = True) -> np.ndarray:
        """New texts as vectors of this space (n, d): the space's model and pooling, then its calibrations.

        InputError for a space made from vectors (no model to embed with)."""
        if self.embedding is None:
            raise InputError(
                f"space '{self.name}' was made from vectors, not by a model, so it cannot embed new texts; "
                "give row ids or vectors instead"
            )
        X = sources.embed_with(self.embedding, list(texts), cache=self._cache, progress=progress)
        Z = next(iter(X.values()))  # (m, d)
        for cal in self.transforms:
            Z = np.asarray(cal.transform(Z), np.float32)
        return Z

    def _rows_or_texts(self, sentences: Sequence[str], progress: bool) -> np.ndarray:
        """Vectors of ``sentences``: embedded when the space has a model, else looked up among its texts."""
        if self.embedding is not None:
            return self.embed_texts(sentences, progress)
        if self.texts is None:
            raise InputError(f"space '{self.name}' has neither a model nor texts: give it texts to look sentences up")
        where = {t: i for i, t in enumerate(self.texts)}
        missing = [s for s in sentences if s not in where]
        if missing:
            raise InputError(
                f"space '{self.name}' was made from vectors and {len(missing)} sentence(s) are not among its texts "
                f"(first: {missing[0][:60]!r}); embed them into the vectors too"
            )
        return self.vectors[[where[s] for s in sentences]]

    # ------------------------------------------------------------ measures

    def _metrics(self, seed: int = 0) -> dict[str, float]:
        from isoscope.geometry.metrics import all_metrics

        key = ("metrics", seed)
        if key not in self._memo:
            self._memo[key] = all_metrics(self.vectors, seed=seed)
        return self._memo[key]

    def singular_values(self) -> np.ndarray:
        """Singular values of the centred vectors, descending (``isoscope.geometry.metrics.singular_values``)."""
        from isoscope.geometry.metrics import singular_values

        if "sv" not in self._memo:
            self._memo["sv"] = singular_values(self.vectors)
        return self._memo["sv"]

    def layer_vectors(self, progress: bool = True) -> list[np.ndarray]:
        """Mean pooling of every layer of the space's model (``layer:0`` = embeddings), raw: (n, d) each."""
        if self.embedding is None or self.texts is None:
            raise InputError(f"space '{self.name}' has no model (or no texts): layers need the model itself")
        if "layers" not in self._memo:
            from isoscope.encode.pooling import layer_pooling

            layers = [layer_pooling(k) for k in range(self.embedding.encoder.num_layers + 1)]
            out = sources.embed_with(self.embedding, self.texts, layers, cache=self._cache, progress=progress)
            self._memo["layers"] = [out[layer.name] for layer in layers]
        return self._memo["layers"]

    def geometry(self, layers: bool = False, seed: int = 0) -> GeometryFrame:
        """``all_metrics`` of this space and of the spaces it was calibrated from (raw first), one row each;
        ``layers=True`` adds the raw metrics of mean-pooled ``layer:0..L`` (needs the model)."""
        import pandas as pd

        from isoscope.geometry.metrics import per_layer_metrics
        from isoscope.space.results import GeometryFrame

        chain = self.lineage()
        rows = {sp.label: sp._metrics(seed) for sp in chain}
        if layers:
            stack = self.lineage()[0].layer_vectors()
            from isoscope.encode.pooling import layer_names

            rows.update(zip(layer_names(len(stack) - 1), per_layer_metrics(stack, seed=seed), strict=True))
        frame = GeometryFrame(pd.DataFrame.from_dict(rows, orient="index"))
        frame.index.name = "space"
        frame.spectra = {sp.label: sp.singular_values() / max(sp.singular_values().sum(), 1e-30) for sp in chain}
        frame.title = chain[0].name
        return frame

    def calibrate(self, method: str | Calibrator = "whitening", progress: bool = True) -> Space:
        """A new space: ``method`` (``whitening``, ``whitening:K``, ``sn``, ``abtt:D``, ``sn+abtt:D``, ``flow``, or a
        calibrator object) fitted on this space's vectors, without labels, and applied to them. A calibrator
        that is already fitted is applied as it is. The fitted calibrator is the new space's ``calibrator``."""
        from sklearn.utils.validation import check_is_fitted

        from isoscope.calibrate import Calibrator, NotFittedError, make_calibrator
        from isoscope.calibrate.fitting import fit_size_warning, fit_timed
        from isoscope.space.progress import progress_callback

        key = ("calibrate", method) if isinstance(method, str) else None
        if key in self._memo:
            return self._memo[key]
        cal = method if isinstance(method, Calibrator) else make_calibrator(method)
        try:
            check_is_fitted(cal)
            fitted = True
        except NotFittedError:
            fitted = False
        warnings = []
        if not fitted:
            bar = progress_callback(
                f"fitting {cal.method}", "epoch", "bits_per_dim", enabled=progress and "flow" in cal.method
            )
            fit_timed(cal, self.vectors, bar)
            if warning := fit_size_warning(cal, *self.shape):
                log.warning("%s", warning)
                warnings.append(warning)
        Z = np.asarray(cal.transform(self.vectors), np.float32)  # (n, d')
        child = Space._derived(Z, self, f"{self.name} + {cal.method}", parent=self, warnings=warnings)
        child.transforms = (*self.transforms, cal)
        if key is not None:
            self._memo[key] = child
        return child

    def export(self, out: str | Path, *, format: str = "sentence-transformers", quantize: bool = False) -> Any:
        """Take the fix home: this space's model, pooling and calibrator written to ``out`` as a
        sentence-transformers folder (``format="onnx"``: one ONNX graph, the flow too; ``quantize``: int8), with a
        README of what was fitted on what and a checksum manifest (``isoscope.export.run.export_space``).
        Returns the ``ExportReport``."""
        from isoscope.export.run import export_space

        return export_space(self, out, format=format, quantize=quantize)

    def neighbours(self, query: int | str | Any, k: int = 10) -> pd.DataFrame:
        """The ``k`` nearest rows by cosine (``isoscope.neighbours.exact.exact_topk``) of a row id (itself left
        out), a text (embedded into this space) or a vector: columns rank, id, cosine, text and metadata."""
        import pandas as pd

        from isoscope.neighbours.exact import exact_topk
        from isoscope.neighbours.index import as_unit_float32

        if "unit" not in self._memo:
            self._memo["unit"] = as_unit_float32(self.vectors)
        X = self._memo["unit"]  # (n, d)
        exclude = None
        if isinstance(query, int | np.integer) and not isinstance(query, bool):
            if not 0 <= int(query) < len(self):
                raise InputError(f"row {query} is outside the space's {len(self):,} rows")
            Q, exclude, asked = X[[int(query)]], np.array([int(query)]), f"row {int(query)}"  # (1, d) unit
        elif isinstance(query, str):
            Q, asked = as_unit_float32(self.embed_texts([query], progress=False), "query"), query
        else:
            q, asked = np.asarray(query, np.float32), "a vector"
            if q.ndim != 1 or q.shape[0] != X.shape[1]:
                raise InputError(f"a query vector must have {X.shape[1]} values, got shape {q.shape}")
            Q = as_unit_float32(q, "query")
        scores, ids = exact_topk(X, Q, k, exclude=exclude)
        frame = pd.DataFrame({"rank": np.arange(1, ids.shape[1] + 1), "id": ids[0], "cosine": scores[0]})
        if self.texts is not None:
            frame["text"] = [self.texts[i] for i in ids[0]]
        meta = self.metadata.iloc[ids[0]].reset_index(drop=True)
        frame = pd.concat([frame, meta.drop(columns=[c for c in meta.columns if c in frame], errors="ignore")], axis=1)
        frame.attrs["query"] = asked
        return frame

    def sts(
        self, pairs: str | Path | Pairs | pd.DataFrame | Sequence[tuple[str, str, float]], progress: bool = True
    ) -> STSResult:
        """Spearman/Pearson x100 of cosine against gold scores (``isoscope.evaluate.similarity.sts_scores``) on
        ``pairs``: a pairs file, ``isoscope.data.Pairs``, a frame (sentence1, sentence2, score) or (s1, s2, score)
        tuples. The sentences are embedded into this space (or, for a space of vectors, found among its texts)."""
        from isoscope.evaluate.similarity import sts_evaluate
        from isoscope.space.pairs import as_pairs
        from isoscope.space.results import STSResult

        p = as_pairs(pairs)
        if p.scores is None:
            raise InputError(f"{p.name or 'pairs'}: no gold scores; STS needs a score per pair")
        V = self._rows_or_texts(p.texts, progress)  # (2m, d)
        m = len(p)
        got = sts_evaluate(V[:m], V[m:], p.scores)  # the cosines and their sts_scores
        return STSResult(self.label, got["spearman"], got["pearson"], got["cosine"], np.asarray(p.scores), p.name)

    def sweep(
        self, pairs: Any = None, *, dims: Sequence[int] | None = None, k: int = 10, int8_model: bool | None = None
    ):
        """Geometry, overlap@k with this space and STS as the vectors shrink (``isoscope.evaluate.sweep.run_sweep``):
        fp32, int8 and binary codes, the first K dimensions, PCA to K. ``int8_model`` adds the int8 model's
        vectors (default: when the space comes straight from a model, like ``isoscope sweep``)."""
        from isoscope.evaluate.sweep import SweepConfig, SweepPairs, run_sweep
        from isoscope.space.pairs import as_pairs
        from isoscope.space.progress import progress_callback
        from isoscope.space.results import SweepReport

        with_int8 = (self.embedding is not None and not self.transforms) if int8_model is None else int8_model
        if with_int8 and (self.embedding is None or self.transforms or self.texts is None):
            raise InputError("int8_model=True needs a raw space made by a model from texts")
        p = None if pairs is None else as_pairs(pairs)
        if p is not None and p.scores is None:
            raise InputError(f"{p.name or 'pairs'}: no gold scores; the Spearman column needs them")
        X8, swept = None, None
        if with_int8:
            from isoscope.evaluate.sweep import encode_for_sweep

            enc = self.embedding
            got = encode_for_sweep(
                enc.encoder,
                self.texts,
                p,
                pooling=enc.pooling,
                config=enc.config,
                cache=self._cache,
                progress=progress_callback("embedding (fp32 and int8)"),
            )
            X8, swept = got.corpus_int8, got.pairs
        elif p is not None:
            V = self._rows_or_texts(p.texts, progress=True)
            swept = SweepPairs(V[: len(p)], V[len(p) :], np.asarray(p.scores, np.float64))
        config = SweepConfig(dims=tuple(dims or ()), k=k)
        result = run_sweep(self.vectors, X8, swept, config=config, progress=progress_callback("sweep", "variant"))
        return SweepReport(result, self.label)

    def project(
        self, method: str = "umap", *, n_components: int = 2, seed: int = 0, max_points: int | None = None
    ) -> Projection:
        """A 2-D/3-D map (``isoscope.neighbours.projection.project``: pca, umap, tsne) of every row, or of a seeded
        sample of ``max_points`` rows; UMAP and t-SNE maps are cached on disk with the embeddings."""
        from isoscope.neighbours.projection import project
        from isoscope.sampling import sample_indices
        from isoscope.space.results import Projection

        rows = sample_indices(len(self), max_points, seed)
        key = ("project", method, n_components, seed, max_points)
        if key not in self._memo:
            cache = self._projection_cache() if method != "pca" else None
            ckey = None
            if cache is not None:
                from isoscope.cache import make_key

                ckey = make_key("proj", method, n_components, seed, max_points, self.digest)
            coords = cache.get(ckey, expected_rows=len(rows), expected_cols=n_components) if cache else None
            if coords is None:
                coords = project(self.vectors[rows], method, n_components, seed=seed)
                if cache is not None:
                    cache.put(ckey, coords)
            self._memo[key] = np.asarray(coords, np.float32)
        return Projection(self._memo[key], rows, method, seed, self.label, self._groups(rows))

    def _projection_cache(self) -> ArrayCache | None:
        from isoscope.cache import ArrayCache

        return None if self._cache is None else ArrayCache(self._cache.root.parent / "projections")

    def _groups(self, rows: np.ndarray) -> np.ndarray | None:
        """Small integer codes of the first categorical metadata column (2 to 12 values), for card colours."""
        for col in self.metadata.columns:
            values = self.metadata[col].iloc[rows]
            if values.dtype == object or str(values.dtype) in ("category", "string", "str"):
                names, codes = np.unique(values.astype(str).to_numpy(), return_inverse=True)
                if 2 <= len(names) <= 12:
                    return codes
        return None

    def retrieval(self, task: Any, fixes: Sequence[str] | None = None, **kwargs: Any) -> RetrievalReport:
        """Every fix on a retrieval task (a BEIR folder or zip, a table, a ``RetrievalTask``), each fitted on its
        documents, tested against raw over the queries (``isoscope.space.tasks.retrieval``: prompts, split, depth)."""
        from isoscope.space.tasks import retrieval

        return retrieval(self, task, fixes, **kwargs)

    def clustering(self, labels: Any = "topic", fixes: Sequence[str] | None = None, **kwargs: Any) -> ClusteringReport:
        """V-measure of k-means on these vectors against a metadata column (or labels), raw and per fix, over
        seeds (``isoscope.space.tasks.clustering``)."""
        from isoscope.space.tasks import clustering

        return clustering(self, labels, fixes, **kwargs)

    def compare(self, other: Space, **kwargs: Any) -> Comparison:
        """``isoscope.compare(self, other, ...)``: CKA, overlap@k, hubness and aligned maps of two spaces of the
        same texts (``isoscope.space.comparison.measure``)."""
        return compare(self, other, **kwargs)

    # ------------------------------------------------------------ views

    def map(self, color: str | None = None, **kwargs: Any) -> Any:
        """An interactive map widget of every point (``isoscope.space.widget.space_map``; needs
        ``pip install "isoscope[notebook]"``): hover shows the text, ``.selection`` the selected row ids."""
        from isoscope.space.widget import space_map

        return space_map(self, color=color, **kwargs)

    def report(self, path: str | Path | None = None, **kwargs: Any) -> Any:
        """A one-file HTML report of the space (``isoscope.space.report.space_report``); written to ``path``
        when given (returns the path), else returned as a string."""
        from isoscope.space.report import space_report

        return space_report(self, path, **kwargs)

    def _repr_html_(self) -> str:
        from isoscope.space.cards import Card, CardStat
        from isoscope.space.html import fmt, line_svg

        quick = self._memo.get("card")
        if quick is None:
            from isoscope.geometry.metrics import avg_cosine, isoscore, singular_values
            from isoscope.sampling import sample_indices

            sample = self.vectors[sample_indices(len(self), CARD_SAMPLE, 0)]
            quick = self._memo["card"] = (avg_cosine(sample), isoscore(sample), singular_values(sample))
        n, d = self.shape
        prov = self.provenance
        source = (
            f"{prov.get('model')} · {prov.get('pooling')} pooling"
            if self.embedding is not None
            else f"vectors from {prov.get('path') or prov.get('source')}"
        )
        sv = quick[2]
        notes = list(self.warnings)
        if self.texts is None:
            notes.append("no texts: hover and neighbour lists show row ids")
        return Card(
            title=self.name,
            subtitle=f"{source} · {self.label}",
            stats=[
                CardStat("texts", f"{n:,}"),
                CardStat("dimensions", f"{d:,}"),
                CardStat("average cosine", fmt(quick[0]), "mean cosine of random pairs (0 = isotropic)"),
                CardStat("IsoScore", fmt(quick[1]), "1 = every direction used equally"),
            ],
            figure=line_svg({self.label: sv / max(sv.sum(), 1e-30)}, log=True, label="singular-value spectrum"),
            caption="singular values (log)" + (f", {CARD_SAMPLE:,}-row sample" if n > CARD_SAMPLE else ""),
            notes=notes,
            kind="space",
        ).html()


def embed(
    texts: Any,
    model: Any = None,
    pooling: str | None = None,
    *,
    precision: str = "fp32",
    device: str | None = None,
    dtype: str | None = None,
    metadata: Any = None,
    name: str | None = None,
    max_length: int = 256,
    batch_size: int = 64,
    cache: bool | str | ArrayCache = True,
    progress: bool = True,
) -> Space:
    """Embed ``texts`` with ``model`` (a folder, a hub id, an ``Encoder``; default the embedded all-MiniLM-L6-v2,
    offline) and ``pooling`` (default: the model's, ``isoscope.encode.pooling.default_pooling``) at ``precision`` (``fp32`` or ``int8``): a ``Space`` that can embed new texts the
    same way. Length-sorted batches, a progress bar, and the on-disk cache of the command line. ``device``
    (``auto``, the default: CUDA, then MPS, then the CPU; ``cpu``, ``cuda``, ``cuda:N``, ``mps``) and ``dtype``
    (``float32``, the default, ``float16``, ``bfloat16``): where the model runs (``isoscope.encode.device``); the
    vectors are float32 whatever the dtype, and ``space.embedding.provenance()`` says which ran.

    ``texts``: a list of strings (or a pandas column), a ``pathlib.Path`` to a corpus or pairs file
    (``isoscope.data.load_input``), or an ``isoscope.data.Corpus`` (its ``meta`` becomes the metadata).
    """
    from isoscope.data import load_input

    if isinstance(texts, Path):
        texts = load_input(texts)
        for warning in texts.warnings:  # about the file: said each time it is read, cached vectors or not
            log.warning("%s", warning)
    items = texts.texts if hasattr(texts, "texts") else texts
    if metadata is None and getattr(texts, "meta", None) is not None:
        metadata = texts.meta
    decoding: list[str] = []
    items = sources.as_texts(items, None, warnings=decoding)
    if len(items) < sources.MIN_ROWS:
        raise InputError(f"need at least {sources.MIN_ROWS} texts to make a space, got {len(items)}")
    encoder = sources.load_model(model, precision, device=device, dtype=dtype)
    embedding = sources.make_embedding(encoder, pooling, max_length=max_length, batch_size=batch_size)
    store = sources.as_cache(cache)
    X = sources.embed_with(embedding, items, cache=store, progress=progress)[embedding.pooling.name]  # (n, d)
    space = Space(X, items, metadata, name=name or f"{encoder.name} · {embedding.pooling}", cache=False)
    space.embedding, space.origin, space._cache = embedding, {"source": "model"}, store
    space.warnings = [*(getattr(texts, "warnings", []) or []), *decoding, *space.warnings]
    return space


def compare(a: Space, b: Space, **kwargs: Any) -> Comparison:
    """How ``b`` differs from ``a``, two ``Space``s of the same texts: CKA, overlap@k, hubness and aligned maps
    (keywords: ``isoscope.space.comparison.measure``). For two arrays use
    ``isoscope.comparison.compare_spaces(a, b)``."""
    from isoscope.space.comparison import measure

    if not isinstance(a, Space) or not isinstance(b, Space):
        raise InputError(
            "isoscope.compare(a, b) takes two isoscope.Space objects (isoscope.Space(vectors) wraps an array); "
            f"got {type(a if not isinstance(a, Space) else b).__name__}. For two arrays use "
            "isoscope.comparison.compare_spaces(a, b)"
        )
    return measure(a, b, **kwargs)
