"""Cases the NNAPI spec accepts but vendor drivers commonly refuse: the notes a rule lists in its
`driver_notes` (beside its check and lowering), each with its source.

A model that passes every check still runs only where a driver takes each operation; an operation a driver
refuses runs on NNAPI's CPU implementation or, under TFLite's delegate (`disallow_nnapi_cpu`, the default
with a named accelerator), back on TFLite's CPU kernels, splitting the partition. These notes are applied in
the op's own check context (`CheckContext.warn_driver`, code NNW100), right after the rule's check accepted the
op, so the report's "driver_warning" verdict comes from the same pass that gates lowering; they never refuse.

Sources (read, not copied):
- ARMNN: ARM-software/android-nn-driver, `NnapiSupport.txt`, the operation/operand-type list of the Arm NN
  NNAPI driver (HAL 1.0-1.3) shipped on many Mali-GPU devices. An operation missing from it, or listed
  without the operand type, is refused by that driver.
- DELEGATE: TFLite's NNAPI delegate (`tensorflow/lite/delegates/nnapi/nnapi_delegate.cc`, 94 builtins): it never
  lowers IF/WHILE, so drivers are rarely exercised with NNAPI control flow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

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
class DriverNote:
    """A case drivers commonly refuse when `applies`; a rule lists the notes of its op in `driver_notes`."""

    applies: Callable[[CheckContext], bool]
    message: str
    source: str


NO_FLOAT16_ARMNN = DriverNote(_float16, "float16 activations: the Arm NN driver lists this NNAPI operation "
                                        "without TENSOR_FLOAT16", ARMNN)
NO_SIGNED_INT8_ARMNN = DriverNote(_signed_int8, "int8 activations (TENSOR_QUANT8_ASYMM_SIGNED): the Arm NN driver "
                                                "lists this NNAPI operation without the signed type", ARMNN)
NO_INT32_MUL_ARMNN = DriverNote(_int32, "int32 MUL: the Arm NN driver lists MUL without TENSOR_INT32", ARMNN)
MISSING_FROM_ARMNN = DriverNote(_always, "its NNAPI operation is missing from the Arm NN driver's supported list",
                                ARMNN)
FEATURE_LEVEL_6_ARMNN = DriverNote(_always, "an NNAPI feature level 6+ operation: HAL 1.0-1.3 drivers (such as Arm "
                                            "NN's) cannot take it", ARMNN)
NATIVE_PACK_ARMNN = DriverNote(lambda c: c.api_level >= 33,
                               "native PACK (feature level 6): HAL 1.0-1.3 drivers (such as Arm NN's) cannot take "
                               "it; below API 33 it lowers to CONCATENATION + RESHAPE", ARMNN)
CONTROL_FLOW_UNTESTED = DriverNote(_always, "NNAPI control flow: TFLite's own NNAPI delegate never lowers it and the "
                                            "Arm NN driver does not list IF/WHILE", f"{DELEGATE}; {ARMNN}")


def warn_driver_issues(c: CheckContext, notes: Iterable[DriverNote]) -> None:
    """Records an NNW100 warning on `c` for every note of its rule that applies."""
    for note in notes:
        if note.applies(c):
            c.warn_driver(f"commonly refused by drivers: {note.message} [source: {note.source}]")
