"""The executor's replacements (nnconv/runtime/replacements.py): operations a caller computes its own way,
as verify's rerun computes TFLite's arithmetic, while the executor itself runs NNAPI only. A replaced
operation runs as its own step (out of the executor's fusions, which compute with its kernels); a kernel
override of the operation's type wins; the caller's own multi-operation steps take precedence over the executor's fusions."""

from __future__ import annotations

import dataclasses

import numpy as np

import nnconv
from harness import step_names
from nnconv.nnapi.enums import OperationType
from nnconv.runtime.executor import Executor
from nnconv.runtime.fusion import Fusion
from nnconv.runtime.kernels.registry import ExecutionOptions
from nnconv.runtime.trace import Trace
from test_fusion import feed_for, swish_model


def _constant(value: float):
    return lambda call: [np.full(call.out_operands[0].dimensions, value, np.float32)]


class _Replacing:
    """Replaces every MUL by a kernel writing 7, and, with `pair`, fuses LOGISTIC and MUL into one step writing 9."""

    def __init__(self, pair: bool = False) -> None:
        self.pair = pair

    def kernel(self, sg, op):
        return _constant(7.0) if op.type is OperationType.MUL else None

    def fusions(self, sg):
        return [Fusion(absorbed=(0,), at=1, inputs=(sg.operations[0].inputs[0],), fn=_constant(9.0),
                       name="MINE")] if self.pair else []


def test_execution_options_are_nnapi_settings_only():
    """Issue 36: seven `ExecutionOptions` flags ("not an NNAPI setting") made kernels compute TFLite's way for
    verify; what an NNAPI execution sets is all they hold now."""
    assert {f.name for f in dataclasses.fields(ExecutionOptions)} == {"loop_timeout_seconds", "max_loop_iterations",
                                                                       "clock"}


def test_a_replaced_operation_runs_as_its_own_step():
    """The executor fuses the swish (LOGISTIC+MUL) and a fused step computes with the executor's kernels, so
    the replaced MUL leaves the fusion and runs alone, with the replacement, traced or not."""
    converted = nnconv.convert(swish_model((2, 5, 3)), api_level=30).converted
    feed = feed_for(converted)
    assert step_names(Executor(converted), feed) == ["LOGISTIC+MUL"]
    replaced = Executor(converted, replacements=_Replacing())
    assert step_names(replaced, feed) == ["LOGISTIC", "MUL"]
    assert (replaced.run(feed)["z"] == 7).all()
    traced = Executor(converted, trace=Trace(keep=True), replacements=_Replacing())
    assert (traced.run(feed)["z"] == 7).all()


def test_a_kernel_override_of_the_type_wins():
    converted = nnconv.convert(swish_model((2, 5, 3)), api_level=30).converted
    ex = Executor(converted, kernel_overrides={OperationType.MUL: _constant(5.0)}, replacements=_Replacing())
    assert (ex.run(feed_for(converted))["z"] == 5).all()


def test_the_callers_steps_take_precedence_over_the_executors_fusions():
    converted = nnconv.convert(swish_model((2, 5, 3)), api_level=30).converted
    ex = Executor(converted, replacements=_Replacing(pair=True))
    feed = feed_for(converted)
    assert step_names(ex, feed) == ["MINE"]
    assert (ex.run(feed)["z"] == 9).all()
