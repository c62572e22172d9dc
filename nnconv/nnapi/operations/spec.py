"""One NNAPI operation's facts, declared once: an `OperationSpec` per operation, in the spirit of AOSP's
`NN_REGISTER_OPERATION(CONV_2D, "CONV_2D", validate, prepare, execute, .allowZeroSizedInput = true)`.

A family module of this package declares each of its operations with `declare(...)`, or with `@operation(...)`
on the operation's validator:

    class SoftmaxSlot(IntEnum):
        INPUT = 0
        BETA = 1
        AXIS = 2

    @operation(OperationType.SOFTMAX, level=1, inputs=SoftmaxSlot, same_type_output=True,
               sample_axis=AxisParam(SoftmaxSlot.AXIS, -1))
    def validate_softmax(view: OperationView, feature_level: int) -> int:
        ...

Every table that used to name operations apart from their other facts is a view of `SPECS` now: the
operations whose output keeps the input's type (`validation.py`), the code ranges of the feature levels
(`OperationSpec.level`), the byte-table operations and standalone clamps of the executor's fusion, the
nondeterministic operations the executor never folds nor batches, the sample-axis rules and float-batched
operations of batched execution, the control-flow operations the memory bound descends into, and the NNAPI
half of docs/ops.md.

The kernel is not here: kernels live in `nnconv/runtime/kernels/`, a later stage, and register against the
operation's type with `@kernel(OperationType.X)`; `tests/test_registry.py` checks that every spec has one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from enum import IntEnum
from typing import Callable, Mapping

from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.nnapi.operations.view import OperationView
from nnconv.nnapi.operations.window import WindowSignature

ValidateFn = Callable[[OperationView, int], int]


class SampleAxis(enum.Enum):
    """How batched execution (`nnconv/runtime/sample_axis.py`, one rule per member) carries the sample axis,
    axis 0, through an operation that keeps samples apart. An operation without one never runs batched. The
    values say it in a few words (docs/ops.md)."""

    # elementwise or per sample by construction: only input 0 may carry samples
    FIRST_ONLY = "samples in input 0 only"
    BROADCAST = "broadcast"  # broadcasting binary operations (NNAPI aligns trailing dimensions)
    REDUCE = "reduced axes other than 0"  # the axes of input 1
    PAD = "no padding on axis 0"
    RESHAPE = "leading 1 kept"  # a target shape keeping a leading 1 (adapted to N) or inferring it
    SQUEEZE = "squeezed axes other than 0"  # explicit axes
    EXPAND_DIMS = "new axis after axis 0"
    TRANSPOSE = "axis 0 stays first"
    TILE = "axis 0 not tiled"
    SLICE = "axis 0 whole"  # a size of 1 adapted to N
    STRIDED_SLICE = "axis 0 whole, unit stride"  # not shrunk; an end of 1 adapted to N
    CONCATENATION = "joined on another axis"  # constants joined with samples are repeated N times
    PACK = "stacked after axis 0"  # every input carries the samples
    GATHER = "gathered on another axis, or by sampled indices"  # or a lookup by sampled indices along 0
    EMBEDDING_LOOKUP = "sampled lookups"  # into a shared table
    ALL_SAMPLED = "every input sampled"  # no broadcasting (SELECT)
    BATCHES = "every input sampled, rank >= 3"  # leading axes are independent batches (BATCH_MATMUL)
    TRANSPOSE_CONV = "samples in input 0 only, output shape adapted"  # the implicit form's output shape
    TOPK = "ranked on another axis"  # the last axis, which must not be axis 0
    REVERSE = "reversed axis other than 0"


@dataclass(frozen=True)
class AxisParam:
    """The sample-axis rule of an operation with one axis parameter (at `slot`, `default` when omitted; None:
    required) that must not be axis 0, the sample axis; only input 0 may carry samples. `slot` may be given
    by its name among the spec's inputs ("AXIS"), which `declare` resolves."""

    slot: int | str
    default: int | None


@dataclass(frozen=True, kw_only=True)
class OperationSpec:
    """Everything nnconv knows about one NNAPI operation apart from how its kernel computes."""

    op: OperationType
    # The feature level that introduced the operation (NeuralNetworksTypes.h's "Available since").
    level: int
    # Named input slots (an IntEnum, which kernels and rules index operands with, and which refusals name:
    # "input 1 (beta)"); for a variadic operation the slots before and at its first repeated input. None
    # for the windowed operations, whose two forms `window` holds. `declare` also takes the names alone
    # ("INPUT MULTIPLES"), making the enum (TileSlot; a kernel reads it as `spec_of(op).inputs`).
    inputs: type[IntEnum] | None = None
    window: WindowSignature | None = None
    outputs: type[IntEnum] | None = None  # named output slots, where there are several (TopkV2Output)
    # The feature level each type of input 0 needs (Android's validate per signature); any other type is
    # refused at every level. None: the operand types' own levels apply (and the validator's rules).
    input_levels: Mapping[OperandType, int] | None = None
    # The reference's `validate` and the constant checks of its `prepare`: the feature level the operation
    # needs with its operands, or OperationRefused. None: `input_levels` and the types' levels only.
    validator: ValidateFn | None = None
    # Output 0 has input 0's type in every signature (the reference's validateOutputTypes(context,
    # {inputType})): another type is refused before any validator or kernel takes the types for granted.
    same_type_output: bool = False
    # Elementwise with the input's shape, each output element a function of the same input elements and
    # one-value constants: a chain of such operations on one quant8 tensor runs as one 256-entry table
    # (`runtime/fusion.py`) that the kernel fills by being called on a 1-D array of the 256 byte values
    # whatever the operands' declared dimensions, so its kernel must not check its input against them.
    byte_op: bool = False
    # A standalone clamp: the fused activation code that computes the same (RELU: FuseCode.RELU), which
    # the executor's fusion applies in place on the producer's output.
    fused_as: FuseCode | None = None
    # False for an operation whose outputs are not a function of its inputs (RANDOM_MULTINOMIAL): the
    # executor never computes it once at planning, and batched execution never runs it on N samples at once.
    deterministic: bool = True
    calls_subgraphs: bool = False  # control flow (IF, WHILE): it runs referenced subgraphs
    # How batched execution carries the sample axis through the operation; None: it never runs batched.
    sample_axis: SampleAxis | AxisParam | None = None
    # Each float output element is the same IEEE operation on the same operands whatever the tensor's size
    # (data movement, correctly rounded arithmetic, comparisons, max / min): batched float steps may run on
    # all samples at once (otherwise one sample at a time, for bit-identical results).
    float_batched: bool = False


SPECS: dict[OperationType, OperationSpec] = {}


def declare(op: OperationType, **facts: object) -> OperationSpec:
    """Registers the spec of `op` (`facts`: its fields but `op`; slots may be given by their names, a
    string); one spec per operation type."""
    if op in SPECS:
        raise RuntimeError(f"two specs declared for {op.name}")
    for field, kind in (("inputs", "Slot"), ("outputs", "Output")):
        names = facts.get(field)
        if isinstance(names, str):
            facts[field] = _named_slots(op, kind, names)
    axis = facts.get("sample_axis")
    if isinstance(axis, AxisParam) and isinstance(axis.slot, str):
        facts["sample_axis"] = AxisParam(facts["inputs"][axis.slot], axis.default)  # type: ignore[index]
    spec = SPECS[op] = OperationSpec(op=op, **facts)  # type: ignore[arg-type]
    return spec


def _named_slots(op: OperationType, kind: str, names: str) -> type[IntEnum]:
    """The slot enum of `names` ("INPUT MULTIPLES"), numbered from 0 in order, named after the operation and
    `kind` (TileSlot)."""
    camel = "".join(part.capitalize() for part in op.name.split("_"))
    return IntEnum(f"{camel}{kind}", names.split(), start=0, module=__name__)  # type: ignore[misc]


def operation(op: OperationType, **facts: object) -> Callable[[ValidateFn], ValidateFn]:
    """Decorator: registers the spec of `op` with the decorated function as its validator (stack one per
    operation type the function validates)."""
    def register(fn: ValidateFn) -> ValidateFn:
        declare(op, validator=fn, **facts)
        return fn
    return register


def spec_of(op: OperationType) -> OperationSpec:
    """The spec of `op` (every operation type has one: `tests/test_registry.py`)."""
    return SPECS[op]


def operation_level(op: OperationType) -> int:
    """The feature level (1..8) at which the NNAPI spec introduced `op`."""
    return SPECS[op].level


def operations_where(flag: Callable[[OperationSpec], object]) -> frozenset[OperationType]:
    """The operation types whose spec has `flag` (a derived view, e.g. `lambda s: s.byte_op`)."""
    return frozenset(op for op, spec in SPECS.items() if flag(spec))
