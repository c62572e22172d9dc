"""The operator versions TensorFlow's converter writes for the data-movement operators whose version follows
their input's rank and type (`tflite/tools/versioning/op_version.cc`), for operators a rewrite creates or
changes: a rank-5 TRANSPOSE merged to rank 4 is no longer the version-4 variant, and TFLite's NNAPI delegate
decides by the version it reads (it refuses versions above those it knows)."""

from __future__ import annotations

from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T


def data_movement_version(code: int, input_type: T, rank: int) -> int | None:
    """The version TFLite gives `code` on an input of `input_type` and `rank`; None for another operator."""
    if code == B.TRANSPOSE:
        return (6 if rank > 5 else 5 if input_type == T.INT16 else 4 if rank > 4 else 3 if input_type == T.BOOL
                else 2 if input_type == T.INT8 else 1)
    if code == B.SLICE:
        return (6 if input_type == T.UINT32 else 5 if rank > 4 else 4 if input_type == T.INT16
                else 3 if input_type == T.STRING else 2 if input_type == T.INT8 else 1)
    if code in (B.SPACE_TO_BATCH_ND, B.BATCH_TO_SPACE_ND):
        return 4 if input_type == T.INT16 else 3 if rank != 4 else 2 if input_type == T.INT8 else 1
    if code == B.GATHER:  # batch_dims 0, int32 indices
        return 4 if input_type == T.INT16 else 3 if input_type == T.BOOL else 2 if input_type == T.INT8 else 1
    return None
