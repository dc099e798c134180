"""Take the fix home: a fitted calibrator carried out of Isoscope, exactly, into what serving code already runs.

One concept per module (``isoscope.encode.manifest`` holds the checksums Isoscope checks when it loads an
exported folder again):

- ``affine``: every linear calibrator (and chain) as one affine map ``y = x @ W + b`` (``affine_map``); the flow
  refused, with the ONNX export offered;
- ``provenance``: what an export says about itself (``ExportReport``: corpus digest, model fingerprint, method,
  date, version, the numbers before/after), the README, and the honesty checks (``check_exportable``: the
  too-small rule, the head's input dimension);
- ``st_folder``: a sentence-transformers folder: the model's recipe, a ``Dense`` holding the map, ``Normalize``
  when the recipe had it (``export_sentence_transformers``);
- ``onnx_graph``: one ONNX graph from token ids to calibrated vectors (the flow too), the tokenizer beside it,
  checked against Isoscope's vectors at export; int8 on request with its Spearman loss (``export_onnx``);
- ``vectors``: calibrated rows written in the input file's own format (Parquet/Arrow keep every other column);
- ``faiss_index``: a FAISS ``IndexPreTransform`` (the map, L2 normalisation, ``IndexFlatIP``) of raw vectors;
- ``run``: each export as one call (``fit_and_export``, ``export_model``, ``export_vectors``, ``export_space``:
  what ``Space.export`` delegates to), for the command line, the notebook API and the pages.
"""
