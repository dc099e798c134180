"""Take the fix home: a fitted calibrator carried out of Isoscope, exactly, into what serving code already runs.

One concept per module:

- ``affine``: every linear calibrator (and chain) as one affine map ``y = x @ W + b`` (``affine_map``); the flow
  refused, with the ONNX export offered;
"""
