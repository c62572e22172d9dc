"""WHILE (NNAPI OperationType 97, feature level 4): a loop over referenced subgraphs.

Slots: 0 condition subgraph, 1 body subgraph (SUBGRAPH operands, passed as indexes into
`model.subgraphs()`), 2.. the loop variables: m input-output operands, then k state-only operands, then
n input-only operands (m = the number of outputs). The condition takes all m + k + n values and returns a
TENSOR_BOOL8 [1]; the body takes them too and returns m + k new values for the first m + k variables.
Outputs: the final values of the m input-output operands.

Bounded execution: like the NNAPI runtime, which aborts a loop after its loop timeout
(`ANeuralNetworks_getDefaultLoopTimeout`: 2 seconds), the loop fails with an ExecutionError once it has run
for the execution's `loop_timeout_seconds` (read on `ExecutionOptions.clock`, the monotonic wall clock
unless a test injects another; once per iteration) or `max_loop_iterations` iterations, whichever comes first, so a model that never terminates (CTS `while_infinite_loop`)
fails cleanly instead of hanging.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.WHILE)
def while_(call: KernelCall) -> list[np.ndarray]:
    runner = call.runner
    if runner is None:
        raise call.fail("needs a subgraph runner to execute its condition and body")
    cond_sg, body_sg = int(call.scalar(0)), int(call.scalar(1))
    values = [call.tensor(i) for i in range(2, call.num_inputs)]
    m = len(call.out_operands)
    options = runner.options
    deadline = options.clock() + options.loop_timeout_seconds
    for _ in range(options.max_loop_iterations):
        (flag,) = _run(call, cond_sg, values, 1, "condition")
        if flag.size != 1:
            raise call.fail(f"the condition returned shape {list(flag.shape)}, expected one boolean")
        if not bool(flag.reshape(-1)[0]):
            return values[:m]
        new = runner.run_subgraph(body_sg, values)
        if len(new) < m or len(new) > len(values):
            raise call.fail(f"the body returns {len(new)} values for {len(values)} loop variables and "
                            f"{m} outputs")
        values = list(new) + values[len(new):]
        if options.clock() > deadline:
            break
    raise call.fail(f"the loop did not terminate within {options.loop_timeout_seconds:g} s "
                    "(the execution's loop timeout; NNAPI's default is 2 s)")


def _run(call: KernelCall, sg: int, values: list[np.ndarray], expected: int, what: str) -> list[np.ndarray]:
    outs = call.runner.run_subgraph(sg, values)  # type: ignore[union-attr]
    if len(outs) != expected:
        raise call.fail(f"the {what} subgraph returns {len(outs)} values, expected {expected}")
    return outs
