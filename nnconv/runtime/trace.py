"""`Trace`: the per-operation record of an execution, `Executor(model, trace=Trace(...))`: each operation's
outputs printed as the run goes (`nnconv run --trace`) and/or kept by operand (`keep`: per-op parity,
nnconv/parity/per_op.py). With a trace the runner fuses nothing and `run_batch` loops (each operation's own
result is what the trace sees), and a trace that keeps values turns the buffer pool off (no kept value is
reused as another's buffer); see nnconv/runtime/executor.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence, TextIO

import numpy as np


@dataclass
class Trace:
    """Per-operation record of an execution (verbose mode and per-op parity)."""

    stream: TextIO | None = None
    keep: bool = False
    values: dict[int, np.ndarray] = field(default_factory=dict)  # operand -> value (main subgraph)

    def record(self, op_index: int, op_name: str, outputs: Sequence[int], arrays: Sequence[np.ndarray],
               names: Sequence[str] = (), source_op: int | None = None) -> None:
        """One operation's outputs. With a stream, one line per output in the words of the TFLite model:
        `#3 CONV_2D (TFLite op #2) -> conv1/Relu6 [17]: float32 1x112x112x32 [0, 6]`, the tensor's
        TFLite name with its NNAPI operand number in brackets (`<temporary>` for operands a lowering
        added), then `dtype shape [min, max]` at 4 significant digits."""
        if self.keep:
            for o, a in zip(outputs, arrays):
                self.values[o] = a
        if self.stream is not None:
            from nnconv.fmt import describe_array
            source = "" if source_op is None else f" (TFLite op #{source_op})"
            for k, (o, a) in enumerate(zip(outputs, arrays)):
                name = names[k] if k < len(names) and names[k] else "<temporary>"
                print(f"#{op_index} {op_name}{source} -> {name} [{o}]: {describe_array(a)}", file=self.stream)
