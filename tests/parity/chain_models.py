"""Small float models for the parity tests: a chain of elementwise ops whose every tensor is compared, and
the test-only kernel fault the per-op tests inject."""

from __future__ import annotations

import numpy as np

from harness import TfliteBuilder
from nnconv.tflite.options import AddOptions, MulOptions, SubOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

SHAPE = (1, 5, 4, 3)


def add_mul_sub_chain(mul_by: float = 1.5) -> bytes:
    """x -> ADD c1 -> a -> MUL c2 -> m -> SUB c3 -> y: op 0 ADD, op 1 MUL, op 2 SUB."""
    rng = np.random.default_rng(7)
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    c1 = b.const("c1", rng.standard_normal(SHAPE).astype(np.float32))
    c2 = b.const("c2", np.full(SHAPE, mul_by, np.float32))
    c3 = b.const("c3", rng.standard_normal(SHAPE).astype(np.float32))
    a, m, y = (b.tensor(n, SHAPE, np.float32) for n in ("a", "m", "y"))
    b.op(B.ADD, [x, c1], [a], AddOptions())
    b.op(B.MUL, [a, c2], [m], MulOptions())
    b.op(B.SUB, [m, c3], [y], SubOptions())
    b.output(y)
    return b.finish()


def shifted(op_type, by: float):
    """A test-only fault: the executor's kernel of `op_type` with every result off by `by` (install it with
    monkeypatch.setitem(KERNELS, ...) or an executor's `kernel_overrides`)."""
    from nnconv.runtime.kernels import KERNELS
    real = KERNELS[op_type]

    def faulty(call):
        return [np.asarray(out) + np.asarray(by, dtype=np.asarray(out).dtype) for out in real(call)]
    return faulty
