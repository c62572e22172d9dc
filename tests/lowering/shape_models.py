"""Model builders shared by the shape / slicing / reduce / gather / lookup lowering tests."""

from __future__ import annotations

import numpy as np

from harness import QuantParams, single_op_model

# dtype name -> (numpy dtype, quantization of activations)
TYPES = {
    "float32": (np.float32, None),
    "uint8": (np.uint8, QuantParams(0.05, 120)),
    "int8": (np.int8, QuantParams(0.04, -7)),
    "int32": (np.int32, None),
    "bool": (np.bool_, None),
}


def typed(dtype: str) -> tuple[type, QuantParams | None]:
    return TYPES[dtype]


def io(name: str, shape, dtype: str) -> tuple:
    """A model input/output spec of the given dtype name (quantized ones get the TYPES parameters)."""
    np_dtype, q = typed(dtype)
    return (name, tuple(shape), np_dtype, q) if q is not None else (name, tuple(shape), np_dtype)


def op_model(opcode, x_shape, out_shape, dtype: str = "float32", consts=(), options=None, out_dtype=None,
             version: int = 1) -> bytes:
    """One op on input `x` followed by constant inputs (`consts`: arrays, or None for an omitted input)."""
    inputs = [io("x", x_shape, dtype)]
    for k, v in enumerate(consts):
        inputs.append(None if v is None else (f"c{k}", np.asarray(v)))
    outs = out_shape if isinstance(out_shape, list) else [out_shape]
    return single_op_model(opcode, inputs, [io(f"y{k}", s, out_dtype or dtype) for k, s in enumerate(outs)],
                           options, version=version)
