"""Lowering rules, one module (or package of modules) per family of TFLite ops. Importing this package
registers them all.

The list below is explicit: a new `rules/<family>.py` (or a module in a family package) is added here (or to
its package's `__init__`); `tests/test_registry.py` fails when a module of this folder is not
imported, so a forgotten line cannot silently drop a rule. Modules starting with `_` hold shared helpers.
"""

from __future__ import annotations

from nnconv.lowering.rules import (activations, cast, compare, control_flow, conv, cumsum, densify, detection,
                                   elementwise, fully_connected, gather, lookup, matmul, normalization, pooling,
                                   quantize, recurrent, reduce, resize, shape, slicing, softmax)

__all__ = ["activations", "cast", "compare", "control_flow", "conv", "cumsum", "densify", "detection",
           "elementwise", "fully_connected", "gather", "lookup", "matmul", "normalization", "pooling", "quantize",
           "recurrent", "reduce", "resize", "shape", "slicing", "softmax"]
