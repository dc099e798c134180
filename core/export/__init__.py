"""Take the fix home: a fitted calibrator carried out of Isoscope, exactly, into what serving code already runs.

One concept per module (``isoscope.encode.manifest`` holds the checksums Isoscope checks when it loads an
exported folder again):

- ``affine``: every linear calibrator (and chain) as one affine map ``y = x @ W + b`` (``affine_map``); the flow
  refused, with the ONNX export offered;
- ``provenance``: what an export says about itself (``ExportReport``: corpus digest, model fingerprint, method,
  date, version, the numbers before/after), the README, and the honesty checks (``check_exportable``: the
  too-small rule, the head's input dimension);
- ``st_folder``: a sentence-transformers folder: the model's recipe, a ``Dense`` holding the map, ``Normalize``
  when the recipe had it (``export_sentence_transformers``).
"""
