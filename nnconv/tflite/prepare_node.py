"""What one kernel's `Prepare` sees and may change, for the simulation in `prepare.py`.

`Node` is the TfLiteContext/TfLiteNode pair of one operator, reduced to what TFLite's builtin kernels use at
Prepare: input and output tensor indices (with TFLite's optional-input rules), each tensor's current dims,
type, allocation type and (for constants and kernel-computed tensors) value, and the three things a kernel
does to an output: `ResizeTensor`, `SetTensorToDynamic`, `SetTensorToPersistentRo` (plus writing its type).
A failed `TF_LITE_ENSURE` raises `PrepareFailure`; a case this simulation does not follow raises `Unmodelled`
(the driver then leaves that node's outputs as they are).

Kernels register with `@kernel(BuiltinOperator.X, ...)` (custom ops with `@custom_kernel(name)`), from
`prepare_kernels.py`, `prepare_nn.py`, `prepare_values.py`, `prepare_dynamic.py`, `prepare_misc.py` and
(control flow) `prepare.py`.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Sequence

import numpy as np

from nnconv.tflite.ir import NUMPY_DTYPE, Operator, Tensor, TfliteModel
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

Shape = tuple[int, ...]
INT32_MAX = (1 << 31) - 1


class Allocation(enum.Enum):
    """The TfLiteAllocationType values that matter to a delegate's decisions."""

    MMAP_RO = "kTfLiteMmapRo"  # a buffer with data in the flatbuffer: the only kind IsConstantTensor() accepts
    ARENA_RW = "kTfLiteArenaRw"  # an ordinary activation
    ARENA_RW_PERSISTENT = "kTfLiteArenaRwPersistent"  # variables; DEQUANTIZE of a constant; DENSIFY
    PERSISTENT_RO = "kTfLitePersistentRo"  # a kernel computed its value at Prepare (SHAPE's output, ...)
    DYNAMIC = "kTfLiteDynamic"  # sized only at Eval (SetTensorToDynamic; strings and resources from the start)


class PrepareFailure(Exception):
    """A `Prepare` TFLite itself fails; the message follows TFLite's wording roughly."""


class Unmodelled(Exception):
    """A case this simulation does not follow (e.g. a value it cannot compute): outputs keep their state."""


# Status a kernel returns when it cannot size its output yet does not mark it dynamic: RESHAPE's
# kTfLiteOutputShapeNotKnown, which stops TFLite's preparation like a dynamic output does.
OUTPUT_SHAPE_NOT_KNOWN = "kTfLiteOutputShapeNotKnown"

Kernel = Callable[["Node"], Any]
KERNELS: dict[int, Kernel] = {}
CUSTOM_KERNELS: dict[str, Kernel] = {}


def kernel(*ops: BuiltinOperator) -> Callable[[Kernel], Kernel]:
    """Registers the decorated function as the Prepare of each of `ops`."""
    def register(fn: Kernel) -> Kernel:
        for op in ops:
            if int(op) in KERNELS:
                raise RuntimeError(f"two Prepare functions registered for {op.name}")
            KERNELS[int(op)] = fn
        return fn
    return register


def custom_kernel(name: str) -> Callable[[Kernel], Kernel]:
    """Registers the decorated function as the Prepare of the custom op `name`."""
    def register(fn: Kernel) -> Kernel:
        CUSTOM_KERNELS[name] = fn
        return fn
    return register


class State:
    """Per-tensor state of one subgraph while its nodes are prepared (mutable; owned by the driver)."""

    def __init__(self, tensors: Sequence[Tensor], model: TfliteModel | None = None, subgraph: int = 0,
                 depth: int = 0):
        self.tensors = tensors
        # the model, this subgraph's index and the control-flow nesting depth, for WHILE / IF / CALL_ONCE
        self.model, self.subgraph, self.depth = model, subgraph, depth
        self.shapes: list[Shape] = [t.shape for t in tensors]
        self.types: list[TensorType] = [t.type for t in tensors]
        self.alloc: list[Allocation] = []
        self.values: dict[int, np.ndarray] = {}
        for t in tensors:
            if t.data is not None and t.buffer != 0:
                # TFLite maps a buffer whose `data` vector is present, even empty (TensorFlow writes `tf.shape`
                # of a scalar so), read-only; buffer 0 is the schema's empty sentinel and never data
                self.alloc.append(Allocation.MMAP_RO)
                if t.sparsity is None and t.dtype is not None and t.data.shape == t.shape:
                    self.values[t.index] = t.data
            elif t.type in (TensorType.STRING, TensorType.RESOURCE, TensorType.VARIANT):
                self.alloc.append(Allocation.DYNAMIC)  # their bytes are known only once written
            elif t.is_variable:
                self.alloc.append(Allocation.ARENA_RW_PERSISTENT)
            else:
                self.alloc.append(Allocation.ARENA_RW)


def legacy_quant(t: Tensor) -> tuple[float, int]:
    """TfLiteTensor::params: (scale, zero point) of per-tensor affine quantization, else (0, 0)."""
    q = t.quantization
    if len(q.scale) == 1 and q.zero_point and not q.details:
        return float(np.float32(q.scale[0])), int(q.zero_point[0])
    return 0.0, 0


class Node:
    """One operator as its kernel's Prepare sees it."""

    def __init__(self, state: State, op: Operator, index: int):
        self.state, self.op, self.index = state, op, index
        self.options = op.options
        self.n_in, self.n_out = len(op.inputs), len(op.outputs)
        # outputs the kernel removed from the node (WHILE's unread pass-through outputs): TFLite neither
        # resizes them nor checks them for dynamism
        self.dropped: set[int] = set()

    def param(self, field: str) -> Any:
        """A builtin option as TFLite's params struct holds it: zero when the file has no options table
        (TFLite value-initializes the struct; the schema's own defaults apply only to a present table)."""
        return getattr(self.options, field, 0) if self.options is not None else 0

    # -- checks -------------------------------------------------------------------------------
    @staticmethod
    def ensure(cond: bool, what: str) -> None:
        if not cond:
            raise PrepareFailure(f"{what} was not true.")

    @staticmethod
    def ensure_eq(a: Any, b: Any, what_a: str, what_b: str) -> None:
        if a != b:
            raise PrepareFailure(f"{what_a} != {what_b} ({a} != {b})")

    def arity(self, n_in: int | None, n_out: int | None) -> None:
        if n_in is not None:
            self.ensure_eq(self.n_in, n_in, "NumInputs(node)", str(n_in))
        if n_out is not None:
            self.ensure_eq(self.n_out, n_out, "NumOutputs(node)", str(n_out))

    def same_type(self, a: int, b: int) -> None:
        ta, tb = self.type(a), self.type(b)
        if ta != tb:
            raise PrepareFailure(f"{ta.name} != {tb.name}")

    def same_quant(self, a: int, b: int) -> None:
        """TF_LITE_ENSURE_EQ on params.scale and params.zero_point (the legacy per-tensor parameters)."""
        (sa, za), (sb, zb) = legacy_quant(self.state.tensors[a]), legacy_quant(self.state.tensors[b])
        self.ensure_eq(sa, sb, "input->params.scale", "output->params.scale")
        self.ensure_eq(za, zb, "input->params.zero_point", "output->params.zero_point")

    # -- tensors of the node --------------------------------------------------------------------
    @staticmethod
    def _required(slots: Sequence[int], k: int) -> int:
        """The tensor at slot `k` of `slots` (the node's inputs or outputs); TFLite fails a slot past the
        end and an omitted (-1) one alike, for inputs and outputs."""
        if not 0 <= k < len(slots):
            raise PrepareFailure(f"Invalid tensor index {k} (not in [0, {len(slots)}))")
        t = slots[k]
        if t < 0:
            raise PrepareFailure(f"Tensor at index {k} was optional but was expected")
        return t

    def input(self, k: int) -> int:
        """GetInputSafe: the tensor at input slot `k`; an omitted or missing input fails."""
        return self._required(self.op.inputs, k)

    def opt_input(self, k: int) -> int | None:
        """GetInput / GetOptionalInputTensor: None for an omitted input (or a slot past the end)."""
        if not 0 <= k < self.n_in or self.op.inputs[k] < 0:
            return None
        return self.op.inputs[k]

    def output(self, k: int) -> int:
        """GetOutputSafe: the tensor at output slot `k`."""
        return self._required(self.op.outputs, k)

    def outputs(self) -> list[int]:
        return [self.output(k) for k in range(self.n_out)]

    # -- what a kernel reads --------------------------------------------------------------------
    def shape(self, t: int) -> Shape:
        return self.state.shapes[t]

    def rank(self, t: int) -> int:
        return len(self.state.shapes[t])

    def dim(self, t: int, i: int) -> int:
        """SizeOfDimension; an axis the tensor lacks is a failure here (garbage memory in TFLite)."""
        s = self.state.shapes[t]
        if not 0 <= i < len(s):
            raise PrepareFailure(f"dimension {i} of a rank-{len(s)} tensor")
        return s[i]

    def numel(self, t: int) -> int:
        n = 1
        for d in self.state.shapes[t]:
            n *= d
        return n

    def type(self, t: int) -> TensorType:
        return self.state.types[t]

    def tensor(self, t: int) -> Tensor:
        return self.state.tensors[t]

    def const(self, t: int | None) -> bool:
        """IsConstantOrPersistentTensor."""
        return t is not None and self.state.alloc[t] in (Allocation.MMAP_RO, Allocation.PERSISTENT_RO)

    def mmap(self, t: int | None) -> bool:
        """IsConstantTensor: only a buffer of the file counts, not a value a kernel computed at Prepare."""
        return t is not None and self.state.alloc[t] == Allocation.MMAP_RO

    def dynamic(self, t: int) -> bool:
        return self.state.alloc[t] == Allocation.DYNAMIC

    def value(self, t: int) -> np.ndarray:
        """The value of a constant or persistent tensor; Unmodelled when this simulation does not know it."""
        v = self.state.values.get(t)
        if v is None:
            raise Unmodelled(f"the value of tensor {t}")
        return v

    def ints(self, t: int) -> list[int]:
        return [int(x) for x in self.value(t).reshape(-1)]

    def shape_value(self, t: int, out: int, negative: str) -> list[int] | None:
        """The dimensions a shape input `t` holds, for the kernels that size `out` from it: None after
        marking `out` dynamic when `t` is not constant or persistent (its values wait for Eval), and
        PrepareFailure(`negative`) when one is below zero."""
        if not self.const(t):
            self.set_dynamic(out)
            return None
        dims = self.ints(t)
        if any(d < 0 for d in dims):
            raise PrepareFailure(negative)
        return dims

    def unspecified(self, t: int) -> bool:
        """HasUnspecifiedDimension: a -1 in dims_signature, which only read-write tensors carry."""
        sig = self.state.tensors[t].shape_signature
        return self.state.alloc[t] != Allocation.MMAP_RO and sig is not None and -1 in sig

    # -- what a kernel does to its outputs ------------------------------------------------------
    def resize(self, t: int, shape: Sequence[int]) -> None:
        """context->ResizeTensor."""
        shape = tuple(int(d) for d in shape)
        if self.state.alloc[t] == Allocation.MMAP_RO:
            raise PrepareFailure("Attempting to resize a fixed-size tensor.")
        n = 1
        for d in shape:
            if d < 0:
                raise PrepareFailure(f"negative dimension in {list(shape)} (BytesRequired)")
            n *= d
        if n > (1 << 62):
            raise PrepareFailure("BytesRequired number of elements overflowed.")
        self.state.shapes[t] = shape

    def set_dynamic(self, t: int) -> None:
        self.state.alloc[t] = Allocation.DYNAMIC
        self.state.values.pop(t, None)

    def set_persistent(self, t: int) -> None:
        self.state.alloc[t] = Allocation.PERSISTENT_RO

    def set_value(self, t: int, value: np.ndarray | None) -> None:
        """The value a kernel computed at Prepare (None: one this simulation does not compute)."""
        if value is None:
            self.state.values.pop(t, None)
            return
        dtype = NUMPY_DTYPE.get(self.state.types[t])
        arr = np.asarray(value if dtype is None else np.asarray(value).astype(dtype, copy=False))
        shape = self.state.shapes[t]
        if arr.shape != shape:
            if arr.size != int(np.prod(shape, dtype=np.int64)):
                self.state.values.pop(t, None)  # not what the kernel would have written: unknown
                return
            arr = arr.reshape(shape)
        arr.setflags(write=False)
        self.state.values[t] = arr

    def set_type(self, t: int, ttype: TensorType) -> None:
        self.state.types[t] = ttype

    # -- shared shape rules -----------------------------------------------------------------------
    def broadcast(self, *ts: int) -> Shape:
        """CalculateShapeForBroadcast of two or three tensors (a 0 extent wins over 1)."""
        shapes = [self.shape(t) for t in ts]
        rank = max(len(s) for s in shapes)
        out = []
        for i in range(rank):
            ds = [s[len(s) - rank + i] if i >= rank - len(s) else 1 for s in shapes]
            top = 0 if min(ds) == 0 else max(ds)
            if any(d != 1 and d != top for d in ds):
                raise PrepareFailure("Given shapes, " + " and ".join(str(list(s)) for s in shapes)
                                     + ", are not broadcastable.")
            out.append(top)
        return tuple(out)
