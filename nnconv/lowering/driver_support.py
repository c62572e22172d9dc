"""Cases the NNAPI spec accepts but vendor drivers commonly refuse: a small table, each row with its source.

A model that passes every check still runs only where a driver takes each operation; an operation a driver
refuses runs on NNAPI's CPU implementation or, under TFLite's delegate (`disallow_nnapi_cpu`, the default
with a named accelerator), back on TFLite's CPU kernels, splitting the partition. These rows are applied in
the op's own check context (`CheckContext.warn_driver`, code NNW100), right after the rule's check accepted the
op, so the report's "driver_warning" verdict comes from the same pass that gates lowering; they never refuse.

Sources (read, not copied):
- ARMNN: ARM-software/android-nn-driver, `NnapiSupport.txt`, the operation/operand-type list of the Arm NN
  NNAPI driver (HAL 1.0-1.3) shipped on many Mali-GPU devices. An operation missing from it, or listed
  without the operand type, is refused by that driver.
- DELEGATE: TFLite's NNAPI delegate (`/work/shared/reference/nnapi_delegate_ops.csv`, 94 builtins): it never
  lowers IF/WHILE, so drivers are rarely exercised with NNAPI control flow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from nnconv.lowering.context import CheckContext
from nnconv.tflite.schema_enums import TensorType

ARMNN = "Arm NN NNAPI driver, android-nn-driver/NnapiSupport.txt"
DELEGATE = "TFLite NNAPI delegate op list (nnapi_delegate_ops.csv)"


def _activations(c: CheckContext) -> list:
    return [t for t in c.inputs if t is not None and not c.is_const(t)]


def _float16(c: CheckContext) -> bool:
    return any(t.type == TensorType.FLOAT16 for t in _activations(c))


def _signed_int8(c: CheckContext) -> bool:
    """int8 activations as TENSOR_QUANT8_ASYMM_SIGNED (API 30+; below they are carried as uint8)."""
    return c.api_level >= 30 and any(t.type == TensorType.INT8 and not t.quantization.is_per_channel
                                     for t in _activations(c))


def _int32(c: CheckContext) -> bool:
    return any(t.type == TensorType.INT32 for t in _activations(c))


def _always(c: CheckContext) -> bool:
    return True


@dataclass(frozen=True)
class DriverIssue:
    """TFLite ops whose NNAPI lowering drivers commonly refuse when `applies`."""

    ops: frozenset[str]
    applies: Callable[[CheckContext], bool]
    message: str
    source: str


DRIVER_ISSUES: tuple[DriverIssue, ...] = (
    DriverIssue(frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "SOFTMAX", "STRIDED_SLICE",
                           "TRANSPOSE", "TRANSPOSE_CONV", "L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION"}),
                _float16, "float16 activations: the Arm NN driver lists this NNAPI operation without "
                          "TENSOR_FLOAT16", ARMNN),
    DriverIssue(frozenset({"CAST", "ELU", "RESIZE_NEAREST_NEIGHBOR"}), _signed_int8,
                "int8 activations (TENSOR_QUANT8_ASYMM_SIGNED): the Arm NN driver lists this NNAPI operation "
                "without the signed type", ARMNN),
    DriverIssue(frozenset({"MUL"}), _int32, "int32 MUL: the Arm NN driver lists MUL without TENSOR_INT32", ARMNN),
    DriverIssue(frozenset({"GATHER", "SELECT", "SELECT_V2", "SLICE", "SPLIT", "SPLIT_V", "UNPACK", "TILE",
                           "TOPK_V2", "POW", "EMBEDDING_LOOKUP", "HASHTABLE_LOOKUP", "LSH_PROJECTION", "RNN",
                           "SVDF", "UNIDIRECTIONAL_SEQUENCE_RNN", "BIDIRECTIONAL_SEQUENCE_RNN",
                           "BIDIRECTIONAL_SEQUENCE_LSTM", "REDUCE_ANY", "CUSTOM(TFLite_Detection_PostProcess)"}),
                _always, "its NNAPI operation is missing from the Arm NN driver's supported list", ARMNN),
    DriverIssue(frozenset({"BATCH_MATMUL", "MIRROR_PAD", "REVERSE_V2"}), _always,
                "an NNAPI feature level 6+ operation: HAL 1.0-1.3 drivers (such as Arm NN's) cannot take it",
                ARMNN),
    DriverIssue(frozenset({"PACK"}), lambda c: c.api_level >= 33,
                "native PACK (feature level 6): HAL 1.0-1.3 drivers (such as Arm NN's) cannot take it; "
                "below API 33 it lowers to CONCATENATION + RESHAPE", ARMNN),
    DriverIssue(frozenset({"WHILE", "IF"}), _always,
                "NNAPI control flow: TFLite's own NNAPI delegate never lowers it and the Arm NN driver does not "
                "list IF/WHILE", f"{DELEGATE}; {ARMNN}"),
)

_BY_OP: dict[str, list[DriverIssue]] = {}
for _issue in DRIVER_ISSUES:
    for _op in _issue.ops:
        _BY_OP.setdefault(_op, []).append(_issue)


def warn_driver_issues(c: CheckContext) -> None:
    """Records an NNW100 warning on `c` for every row of the table that applies to its op."""
    for issue in _BY_OP.get(c.op.name, ()):
        if issue.applies(c):
            c.warn_driver(f"commonly refused by drivers: {issue.message} [source: {issue.source}]")
