"""Operator-level rewrites into operators TFLite's NNAPI delegate takes at a lower level than the original,
each an exact identity (`nnconv rewrite`'s "delegate-ops" step; nnconv's own converter lowers the originals
itself, so its pipeline does not run these).

- REVERSE_V2 -> GATHER. The delegate maps REVERSE_V2 only from API 34 (NNAPI's REVERSE, feature level 7);
  TensorFlow writes one per direction of a Keras Bidirectional RNN. GATHER is taken from API 29. Identity,
  for an axis a of static extent n: reverse(x, a)[..., i, ...] = x[..., n-1-i, ...] = gather(x, [n-1, ..., 0],
  axis=a)[..., i, ...]. Both only move values, so the result is the same tensor for every type and
  quantization (input and output keep their parameters).
- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND of rank 3 (a dilated Conv1D: TFLite writes them version 3, which
  the delegate refuses; NNAPI's take rank 4). Identity: with x viewed as [N, 1, W, C] (a RESHAPE, which moves
  no value), the rank-3 op with block [b] and paddings (crops) [[p0, p1]] is the rank-4 op with block [1, b]
  and paddings [[0, 0], [p0, p1]], its [N', 1, W', C] result viewed back as [N', W', C]: the added axis of
  extent 1 is never split (block 1, no padding). The delegate takes BATCH_TO_SPACE_ND only without crops:
  batch_to_space(x, b, crops) == slice(batch_to_space(x, b, 0), crops), so non-zero crops become a SLICE.
- BATCH_MATMUL (float32) -> RESHAPE, RESHAPE, MUL, SUM, RESHAPE. The delegate maps BATCH_MATMUL only from
  API 33 (feature level 6); attention layers write two per head. Identity, with the batch dimensions
  flattened to h: C[h, m, n] = sum_k A[h, m, k] B[h, k, n] = SUM over axis 2 of A[h, m, k, 1] * B[h, 1, k, n]
  (a broadcast MUL, rank 4). Exact in real arithmetic; in float32 the SUM adds the k products in its own
  order, as TFLite's matrix kernel does in another, so the proof's float tolerance applies (on the models
  measured the difference is a few units in the last place). Quantized BATCH_MATMUL is left alone (its
  products would be requantized).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from nnconv.rewrite.graph_edit import SubgraphEdit
from nnconv.rewrite.standalone import Change
from nnconv.tflite.ir import Operator, TfliteModel
from nnconv.tflite.op_versions import data_movement_version
from nnconv.tflite.options import GatherOptions, MulOptions, ReducerOptions, ReshapeOptions, SliceOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType

_GATHER_TYPES = (TensorType.FLOAT32, TensorType.INT32, TensorType.UINT8, TensorType.INT8)  # the delegate's GATHER
_SPACE_BATCH_TYPES = (TensorType.FLOAT32, TensorType.UINT8, TensorType.INT8)  # its SPACE_TO_BATCH_ND


def reverse_as_gather(model: TfliteModel) -> tuple[TfliteModel, list[Change]]:
    """Every REVERSE_V2 of the primary subgraph along one constant axis of a static shape, as a GATHER."""
    edit = SubgraphEdit(model.subgraphs[0])
    changes = []
    for op in edit.sg.operators:
        if op.builtin_code != B.REVERSE_V2 or len(op.inputs) != 2 or len(op.outputs) != 1 or min(op.inputs) < 0:
            continue
        x, axis_t = edit.tensors[op.inputs[0]], edit.tensors[op.inputs[1]]
        if x.type not in _GATHER_TYPES or axis_t.data is None or axis_t.data.size != 1 or x.has_dynamic_shape \
                or x.has_dynamic_signature:
            continue
        axis = int(axis_t.data.reshape(-1)[0])
        axis = axis + x.rank if axis < 0 else axis
        if not 0 <= axis < x.rank:
            continue
        n = x.shape[axis]
        indices = edit.add_constant(f"{edit.tensors[op.outputs[0]].name}/reversed_indices",
                                    np.arange(n - 1, -1, -1, dtype=np.int32))
        edit.replace_op(op.index, builtin_code=int(B.GATHER), inputs=(op.inputs[0], indices),
                        options=GatherOptions(axis=axis, batch_dims=0),
                        version=data_movement_version(B.GATHER, x.type, x.rank))
        changes.append(Change(op.index, "reverse-as-gather", f"GATHER of indices [{n - 1}..0] along axis {axis}: "
                                                             "the delegate takes GATHER from API 29"))
    if not changes:
        return model, []
    return dataclasses.replace(model, subgraphs=(edit.finish(), *model.subgraphs[1:])), changes


# An expansion of one operator: the operators replacing it, which of them is the operator itself (its report
# line and origin), and the note of the change; None leaves the operator as it is.
Expansion = tuple[list[Operator], int, str]


def expand_ops(model: TfliteModel, expand: Callable[[SubgraphEdit, Operator], Expansion | None], kind: str
               ) -> tuple[TfliteModel, dict[int, int], list[Change]]:
    """Every operator of the primary subgraph that `expand` replaces by several. Returns the model, the origin
    of each operator (new index -> old index; the operators added have none) and the changes."""
    sg = model.subgraphs[0]
    edit = SubgraphEdit(sg)
    ops: list[Operator] = []
    origin: dict[int, int] = {}
    changes = []
    for op in sg.operators:
        found = expand(edit, op)
        if found is None:
            origin[len(ops)] = op.index
            ops.append(dataclasses.replace(op, index=len(ops)))
            continue
        replacement, itself, note = found
        origin[len(ops) + itself] = op.index
        ops += [dataclasses.replace(o, index=len(ops) + k) for k, o in enumerate(replacement)]
        changes.append(Change(op.index, kind, note))
    if not changes:
        return model, {k: k for k in range(len(sg.operators))}, []
    main = dataclasses.replace(edit.finish(), operators=tuple(ops))
    return dataclasses.replace(model, subgraphs=(main, *model.subgraphs[1:])), origin, changes


def space_batch_as_rank4(model: TfliteModel) -> tuple[TfliteModel, dict[int, int], list[Change]]:
    """Every rank-3 SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND of the primary subgraph with constant block and
    paddings (crops) on rank 4, between two RESHAPEs (see the module docstring)."""
    def expand(edit: SubgraphEdit, op: Operator) -> Expansion | None:
        found = _space_batch_rank4(edit, op) if op.builtin_code in (B.SPACE_TO_BATCH_ND, B.BATCH_TO_SPACE_ND) else None
        return None if found is None else (found, 1, "on rank 4 ([N, 1, W, C], block [1, b]) between two RESHAPEs: "
                                                     "the delegate takes only its rank-4 form")
    return expand_ops(model, expand, "space-batch-rank4")


def _space_batch_rank4(edit: SubgraphEdit, op: Operator) -> list[Operator] | None:
    """[RESHAPE to rank 4, the op on rank 4 (and a SLICE for BATCH_TO_SPACE_ND's crops), RESHAPE back] for a
    rank-3 op with constant block and paddings (crops)."""
    if len(op.inputs) != 3 or len(op.outputs) != 1 or min(op.inputs) < 0 or op.outputs[0] < 0:
        return None
    x, out = edit.tensors[op.inputs[0]], edit.tensors[op.outputs[0]]
    block, pads = edit.tensors[op.inputs[1]].data, edit.tensors[op.inputs[2]].data
    if (x.type not in _SPACE_BATCH_TYPES or block is None or pads is None or x.rank != 3 or out.rank != 3 or block.size != 1
            or pads.size != 2 or x.has_dynamic_shape or out.has_dynamic_shape or x.has_dynamic_signature
            or out.has_dynamic_signature):
        return None
    name = out.name
    n, w, c = x.shape
    x4 = edit.add_tensor(f"{name}/rank4_input", (n, 1, w, c), x)
    y4 = edit.add_tensor(f"{name}/rank4_output", (out.shape[0], 1, out.shape[1], out.shape[2]), out)
    block4 = edit.add_constant(f"{name}/rank4_block", np.array([1, int(block.reshape(-1)[0])], np.int32))
    pads4 = edit.add_constant(f"{name}/rank4_paddings",
                              np.array([[0, 0], [int(v) for v in pads.reshape(-1)]], np.int32))
    to4 = edit.add_constant(f"{name}/rank4_shape", [n, 1, w, c])
    back = edit.add_constant(f"{name}/rank3_shape", list(out.shape))
    # the added operators borrow the op's fields, then become RESHAPEs (or a SLICE)
    before = dataclasses.replace(op, builtin_code=int(B.RESHAPE), inputs=(op.inputs[0], to4), outputs=(x4,),
                                 options=ReshapeOptions(new_shape=(n, 1, w, c)), version=1, custom_code=None,
                                 opcode_index=-1, intermediates=())
    middle = dataclasses.replace(op, inputs=(x4, block4, pads4), outputs=(y4,),
                                 version=data_movement_version(op.builtin_code, x.type, 4))
    after = dataclasses.replace(before, inputs=(y4, back), outputs=(op.outputs[0],),
                                options=ReshapeOptions(new_shape=tuple(out.shape)))
    crops = [int(v) for v in pads.reshape(-1)]
    if op.builtin_code != B.BATCH_TO_SPACE_ND or crops == [0, 0]:
        return [before, middle, after]
    # The delegate takes BATCH_TO_SPACE_ND without crops only: crop with a SLICE after it, which is what the
    # crops do (batch_to_space(x, b, crops) == slice(batch_to_space(x, b, 0), crops)).
    whole = out.shape[1] + crops[0] + crops[1]
    full = edit.add_tensor(f"{name}/rank4_uncropped", (out.shape[0], 1, whole, out.shape[2]), out)
    zero = edit.add_constant(f"{name}/rank4_no_crops", np.zeros((2, 2), np.int32))
    begin = edit.add_constant(f"{name}/crop_begin", [0, 0, crops[0], 0])
    size = edit.add_constant(f"{name}/crop_size", [out.shape[0], 1, out.shape[1], out.shape[2]])
    middle = dataclasses.replace(middle, inputs=(x4, block4, zero), outputs=(full,))
    crop = dataclasses.replace(before, builtin_code=int(B.SLICE), inputs=(full, begin, size), outputs=(y4,),
                               options=SliceOptions(), version=data_movement_version(B.SLICE, x.type, 4))
    return [before, middle, crop, after]


def batch_matmul_as_mul_sum(model: TfliteModel) -> tuple[TfliteModel, dict[int, int], list[Change]]:
    """Every float32 BATCH_MATMUL of the primary subgraph (no adjoint, the same batch dimensions on both sides,
    static shapes) as a broadcast MUL and a SUM over the shared axis (see the module docstring)."""
    return expand_ops(model, _batch_matmul, "batch-matmul-mul-sum")


def _batch_matmul(edit: SubgraphEdit, op: Operator) -> Expansion | None:
    if op.builtin_code != B.BATCH_MATMUL or len(op.inputs) != 2 or len(op.outputs) != 1 or min(op.inputs) < 0:
        return None
    a, b, out = (edit.tensors[t] for t in (*op.inputs, op.outputs[0]))
    o = op.options
    if (any(t.type != TensorType.FLOAT32 or t.rank < 2 or t.has_dynamic_shape or t.has_dynamic_signature
            or t.quantization.is_quantized for t in (a, b, out))
            or o is None or o.adj_x or o.adj_y or a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]):
        return None
    h, (m, k), n = math.prod(a.shape[:-2]), a.shape[-2:], b.shape[-1]
    if h * m * k * n > _MAX_PRODUCTS or out.shape != (*a.shape[:-2], m, n):
        return None
    name = out.name
    a4 = edit.add_tensor(f"{name}/lhs_hmk1", (h, m, k, 1), a)
    b4 = edit.add_tensor(f"{name}/rhs_h1kn", (h, 1, k, n), b)
    products = edit.add_tensor(f"{name}/products_hmkn", (h, m, k, n), out)
    sums = edit.add_tensor(f"{name}/sums_hmn", (h, m, n), out)
    base = dataclasses.replace(op, custom_code=None, opcode_index=-1, intermediates=(), version=1)
    ops = [dataclasses.replace(base, builtin_code=int(B.RESHAPE), inputs=(op.inputs[0], _shape(edit, a4)),
                               outputs=(a4,), options=ReshapeOptions(new_shape=(h, m, k, 1))),
           dataclasses.replace(base, builtin_code=int(B.RESHAPE), inputs=(op.inputs[1], _shape(edit, b4)),
                               outputs=(b4,), options=ReshapeOptions(new_shape=(h, 1, k, n))),
           dataclasses.replace(base, builtin_code=int(B.MUL), inputs=(a4, b4), outputs=(products,),
                               options=MulOptions()),
           dataclasses.replace(base, builtin_code=int(B.SUM), outputs=(sums,), options=ReducerOptions(keep_dims=False),
                               inputs=(products, edit.add_constant(f"{name}/shared_axis", [2]))),
           dataclasses.replace(base, builtin_code=int(B.RESHAPE), inputs=(sums, _shape(edit, op.outputs[0])),
                               outputs=(op.outputs[0],), options=ReshapeOptions(new_shape=tuple(out.shape)))]
    return ops, 2, (f"MUL of [{h}, {m}, {k}, 1] by [{h}, 1, {k}, {n}] and SUM over the {k} shared values: the "
                    "delegate maps BATCH_MATMUL only from API 33")


def _shape(edit: SubgraphEdit, tensor: int) -> int:
    """A constant holding `tensor`'s shape (a RESHAPE's target)."""
    return edit.add_constant(f"{edit.tensors[tensor].name}/shape", list(edit.tensors[tensor].shape))


_MAX_PRODUCTS = 1 << 22  # the MUL's products a BATCH_MATMUL may expand into (16 MiB of float32)
