"""The float twin of a dynamic-range (hybrid) model, for `verify`.

TFLite runs a hybrid op (float activations, constant int8 weights) by quantizing the activations to int8 on
the fly; NNAPI (TFLite's delegate, and nnconv) dequantizes the weights and computes in float. The two differ
by the activation rounding, which grows with depth (a few percent of the output range on deep random-weight
nets), so it cannot prove the conversion right or wrong. The twin is the same model with each hybrid op's
weights replaced by their float32 dequantization (q - zero_point) * scale: what NNAPI computes, run by
TFLite's float kernels, so the conversion is checked with the plain float tolerance.

The twin is re-serialized from the IR with our own writer (`nnconv.tflite.builder`), keeping every tensor
index, name, shape and subgraph, so the interpreter's tensors line up with the original's.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from nnconv.lowering.rules._blockwise import dequantize_blocks
from nnconv.tflite.builder import QuantParams, SubgraphBuilder, TfliteBuilder
from nnconv.tflite.int4 import unpack_int4
from nnconv.tflite.ir import Operator, Subgraph, Tensor, TfliteModel
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

_QUANT = (TensorType.INT8, TensorType.UINT8, TensorType.INT4)


def hybrid_weights(sg: Subgraph) -> set[int]:
    """Constant int8/uint8/int4 tensors read by an op that also reads a computed float32 tensor (the rule of
    `verify.has_hybrid_ops`); DEQUANTIZE reads its input exactly and is left alone."""
    found: set[int] = set()
    for op in sg.operators:
        if op.builtin_code == BuiltinOperator.DEQUANTIZE:
            continue
        ins = [sg.tensors[i] for i in op.inputs if i >= 0]
        if any(t.type == TensorType.FLOAT32 and t.data is None for t in ins):
            found.update(t.index for t in ins if t.type in _QUANT and t.data is not None)
    return found


def _dequantized(t: Tensor, sg: Subgraph) -> np.ndarray:
    q = t.quantization
    raw = unpack_int4(t.data, t.shape) if t.type == TensorType.INT4 else t.data
    if q.blockwise is not None:  # as the lowering reads it (rules/_blockwise.py), which checked the scales
        return dequantize_blocks(raw, sg.tensors[q.blockwise[0]].data, q.blockwise[2])
    return q.dequantize(np.asarray(raw).reshape(t.shape))


def quant_params(t: Tensor) -> QuantParams | None:
    q = t.quantization
    if not q.scale:
        return None
    return QuantParams(list(q.scale), list(q.zero_point) or [0], q.quantized_dimension)


# A substitute writes one operator of the copy in its own way (returns True) or leaves it to the plain copy
# (False); it may append tensors, which then follow every original one, so original indexes stay.
OpSubstitute = Callable[[SubgraphBuilder, Subgraph, Operator], bool]


def _copy_subgraph(sb: SubgraphBuilder, sg: Subgraph, replace: set[int], substitute: OpSubstitute | None) -> None:
    for t in sg.tensors:
        if t.sparsity is not None:
            raise ValueError(f"sparse tensor '{t.name}'")
        sig = t.shape_signature
        if t.index in replace:
            data, ttype, quant = _dequantized(t, sg).tobytes(), TensorType.FLOAT32, None
        else:
            data = None if t.data is None else np.ascontiguousarray(t.data).tobytes()
            ttype, quant = t.type, quant_params(t)
        sb.copied_tensor(t.name, t.shape, ttype, data, quant, sig, t.is_variable)
    for op in sg.operators:
        if substitute is not None and substitute(sb, sg, op):
            continue
        sb.op(op.builtin_code, op.inputs, op.outputs, op.options, version=op.version, custom_code=op.custom_code,
              intermediates=op.intermediates, custom_options=op.custom_options)
    sb.inputs.extend(sg.inputs)
    sb.outputs.extend(sg.outputs)


def copy_model(model: TfliteModel, replace: Callable[[Subgraph], set[int]] = lambda sg: set(),
               substitute: OpSubstitute | None = None) -> bytes:
    """The model re-serialized, with the tensors `replace(subgraph)` names dequantized to float32 and the
    operators `substitute` takes written its way. Raises (ValueError, ...) on what the writer does not
    reproduce (sparse tensors)."""
    b = TfliteBuilder(model.description)
    for k, sg in enumerate(model.subgraphs):
        sb = b if k == 0 else b.subgraph(sg.name)
        sb.name = sg.name
        _copy_subgraph(sb, sg, replace(sg), substitute)
    for sig in model.signature_defs:
        b.add_signature(sig.signature_key, sig.subgraph_index)
    return b.finish()


# What the writer may raise on a model it cannot reproduce.
COPY_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, NotImplementedError)


def float_twin(model: TfliteModel) -> bytes | None:
    """The model with its hybrid weights dequantized (module docstring), or None when it has none or holds
    something the writer does not reproduce (sparse tensors)."""
    if not any(hybrid_weights(sg) for sg in model.subgraphs):
        return None
    try:
        return copy_model(model, hybrid_weights)
    except COPY_ERRORS:
        return None  # something the writer cannot reproduce: verify falls back to the hybrid tolerance
