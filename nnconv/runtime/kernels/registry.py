"""The kernel registry: one execute function per NNAPI OperationType, filled by `@kernel`.

A kernel receives a `KernelCall` (input arrays in the operands' storage dtypes, the operand descriptions
for quantization parameters, and the declared output operands) and returns one array per output. It raises
`ExecutionError` naming the slot when an input breaks the operation's rules (the runtime's OP_FAILED).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Hashable, NamedTuple, Sequence

import numpy as np

from nnconv.errors import ExecutionError
from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.nnapi.quantization import conv_multipliers

if TYPE_CHECKING:
    from nnconv.runtime.executor import SubgraphRunner

KernelFn = Callable[["KernelCall"], Sequence[np.ndarray]]
KERNELS: dict[OperationType, KernelFn] = {}
_CONSTANT_LIFETIMES = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)
_MISSING = object()


@dataclass(frozen=True)
class ExecutionOptions:
    """Settings of one execution, as an NNAPI execution has them (`ANeuralNetworksExecution_setLoopTimeout`):
    kernels read them from `KernelCall.runner.options`, never from module globals."""

    loop_timeout_seconds: float = 2.0  # ANeuralNetworks_getDefaultLoopTimeout
    max_loop_iterations: int = 10_000_000
    # What the loop timeout is measured with (seconds, monotonic). Tests inject a clock that advances per
    # reading so that a loop's fate does not depend on how loaded the machine is.
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)


class ConvRequantization(NamedTuple):
    """How a convolution or matmul requantizes its int32 accumulators (`KernelCall.conv_requantization`)."""

    multipliers: np.ndarray  # per output channel (one value per tensor: one entry)
    shifts: np.ndarray
    # x * M rounded once, (x * M + 2^(s-1)) >> s, where NNAPI's reference rounds twice (SRDHM, then RDBPOT):
    # TFLite's FULLY_CONNECTED kernels' rounding, which only the kernels of the operations nnconv lowers it to
    # (FULLY_CONNECTED, CONV_2D) take; the other convolutions and BATCH_MATMUL use the multipliers alone
    single_rounding: bool


def kernel(op_type: OperationType) -> Callable[[KernelFn], KernelFn]:
    """Registers the decorated function as the kernel of `op_type`."""
    def register(fn: KernelFn) -> KernelFn:
        if op_type in KERNELS:
            raise RuntimeError(f"two kernels registered for {op_type.name}")
        KERNELS[op_type] = fn
        return fn
    return register


@dataclass
class KernelCall:
    operation: Operation
    inputs: list[np.ndarray | None]  # None: omitted optional operand (NO_VALUE)
    in_operands: list[Operand]
    out_operands: list[Operand]
    runner: "SubgraphRunner | None" = None  # lets IF / WHILE run referenced subgraphs
    cache: dict | None = None  # the runner's per-operation memo, kept across runs (see `memo`)

    @property
    def num_inputs(self) -> int:
        return len(self.inputs)

    def fail(self, message: str) -> ExecutionError:
        return ExecutionError(f"{self.operation.type.name}: {message}")

    def tensor(self, i: int) -> np.ndarray:
        if i >= len(self.inputs) or self.inputs[i] is None:
            raise self.fail(f"input {i} is required but missing")
        return self.inputs[i]  # type: ignore[return-value]

    def has(self, i: int) -> bool:
        """True when optional input `i` is present and not omitted."""
        return i < len(self.inputs) and self.inputs[i] is not None

    def scalar(self, i: int) -> Any:
        """Input `i` as a Python scalar (bool, int or float)."""
        v = self.tensor(i)
        if v.size != 1:
            raise self.fail(f"input {i} must be a scalar, got shape {list(v.shape)}")
        return v.reshape(()).item()

    def opt_scalar(self, i: int, default: Any) -> Any:
        return self.scalar(i) if self.has(i) else default

    def memo(self, key: Hashable, slots: Sequence[int], make: Callable[[], Any]) -> Any:
        """`make()`, computed once per operation and reused by later runs when every input in `slots` is a
        constant operand: constants never change between runs, so values derived from them (a converted
        filter, per-channel multipliers) need not be rebuilt. `key` must also name every non-constant
        value `make` reads (e.g. the activation code). Without a runner cache, or with a non-constant
        input among `slots`, `make()` runs on every call."""
        if self.cache is None:
            return make()
        hit = self.cache.get(key, _MISSING)
        if hit is not _MISSING:  # stored only when the slots were constant, which they stay (static lifetimes)
            return hit
        if not all(s >= len(self.inputs) or self.inputs[s] is None or self.is_constant(s) for s in slots):
            return make()
        value = self.cache[key] = make()
        return value

    def conv_requantization(self, in_scale: float, filter_scales: np.ndarray,
                            out_scale: float) -> ConvRequantization:
        """NNAPI's requantization of a convolution's or matmul's accumulators: the multipliers of
        `GetQuantizedConvolutionMultipler` (input x filter scale rounded to float32: `conv_multipliers`),
        applied with two roundings. The kernels ask their call for it so that a caller computing another
        arithmetic can hand them a call answering otherwise (verify's TFLite arithmetic,
        nnconv/parity/tflite_kernels.py); the executor's own calls always answer NNAPI's."""
        multipliers, shifts = conv_multipliers(in_scale, filter_scales, out_scale)
        return ConvRequantization(multipliers, shifts, single_rounding=False)

    def run_prepared(self, key: str) -> np.ndarray | None:
        """The output of the operation prepared under `key` in its cache (a small-map convolution), when it
        was prepared and accepts this run's input 0; None sends the call to the general path."""
        prepared = self.cache.get(key) if self.cache is not None else None
        if prepared is None:
            return None
        x = self.tensor(0)
        return prepared.run(self, x) if prepared.accepts(x) else None

    def is_constant(self, i: int) -> bool:
        """Input `i` is a constant operand (its value is the same on every run)."""
        return i < len(self.in_operands) and self.in_operands[i] is not None and \
            self.in_operands[i].lifetime in _CONSTANT_LIFETIMES

    def empty(self, shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
        """An uninitialized array for this operation's output (or scratch it gives back with `give_back`),
        from the runner's buffer pool when it has one, so the same memory serves every run."""
        pool = self.runner.pool if self.runner is not None else None
        return np.empty(shape, dtype=dtype) if pool is None else pool.empty(shape, dtype)

    def kept(self, shape: tuple[int, ...], dtype: np.dtype | type, fill: float | int | None,
             tag: Hashable) -> np.ndarray:
        """A buffer the runner keeps for the operations it prepared for small maps (`_conv_small`,
        `_depthwise_small`), shared by every operation asking for the same `tag`, shape, dtype and `fill`
        (the initial value, None: uninitialized). Operations run one at a time, so sharing is safe for
        scratch each run rewrites before reading; a buffer with parts that must keep their initial value
        (a padded input's border, a column of ones) needs a `tag` naming the region its users write (the
        padding amounts, the column count), so that every user writes the same interior. Without a runner:
        a fresh array."""
        store = self.runner.kept_buffers if self.runner is not None else None
        key = (tag, tuple(shape), np.dtype(dtype).str, fill)
        buf = None if store is None else store.get(key)
        if buf is None:
            buf = np.empty(shape, dtype) if fill is None else np.full(shape, fill, dtype)
            if store is not None:
                store[key] = buf
        return buf

    def give_back(self, scratch: np.ndarray) -> None:
        """Returns scratch taken with `empty` that nothing refers to any more."""
        pool = self.runner.pool if self.runner is not None else None
        if pool is not None:
            pool.give(scratch)

    def type(self, i: int) -> OperandType:
        if i >= len(self.in_operands) or self.in_operands[i] is None:  # as `tensor`: a malformed operation
            raise self.fail(f"input {i} is required but missing")
        return self.in_operands[i].type

    def out_type(self, i: int = 0) -> OperandType:
        if i >= len(self.out_operands):
            raise self.fail(f"output {i} is required but missing")
        return self.out_operands[i].type
