"""IF (NNAPI OperationType 96, feature level 4): runs one of two referenced subgraphs.

Slots: 0 condition (TENSOR_BOOL8 [1]), 1 then-branch and 2 else-branch subgraph references (SUBGRAPH
operands; the executor passes each as the index into `model.subgraphs()`), 3.. the inputs given to the
chosen branch. Outputs: the branch's outputs, in order. Any operand type; the branches' operands may have
unknown dimensions or rank, so results take the shapes the branch computes.
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.IF)
def if_(call: KernelCall) -> list[np.ndarray]:
    if call.runner is None:
        raise call.fail("needs a subgraph runner to execute its branches")
    cond = call.tensor(0)
    if cond.size != 1:
        raise call.fail(f"the condition must hold one value, got shape {list(cond.shape)}")
    branch = int(call.scalar(1 if bool(cond.reshape(-1)[0]) else 2))
    args = [call.tensor(i) for i in range(3, call.num_inputs)]
    outs = call.runner.run_subgraph(branch, args)
    if len(outs) != len(call.out_operands):
        raise call.fail(f"the branch returns {len(outs)} values, the operation declares "
                        f"{len(call.out_operands)} outputs")
    return outs
