"""Operations a caller computes its own way instead of with the executor's NNAPI kernels.

The executor runs NNAPI and nothing else; its `ExecutionOptions` are an NNAPI execution's settings. `verify`
also reruns a model with TFLite's arithmetic where NNAPI's differs (nnconv/parity/tflite_arithmetic.py), to
tell a rounding difference from a conversion error: it hands the executor a `Replacements`, which the runner
asks once per subgraph, when it plans it:

- `kernel(sg, op)`: the kernel of `op`, or None for the executor's. An operation it replaces runs as its
  own step, out of the executor's fusions (which compute with the executor's kernels); an operation whose
  type a kernel override replaces (`kernel_overrides`: a test's faulty kernel) keeps that override: the
  fault stays in every run, the rerun included.
- `fusions(sg)`: groups of operations each computed as one step (an operation lowered as several NNAPI
  operations, computed as TFLite computes the one it stands for), in place of the executor's own fusions
  of those operations; planned only where the executor fuses at all (no trace, no relaxed float16, no
  kernel override of a fused type).
"""

from __future__ import annotations

from typing import Protocol

from nnconv.nnapi.model import Operation, Subgraph
from nnconv.runtime.fusion import Fusion
from nnconv.runtime.kernels.registry import KernelFn


class Replacements(Protocol):
    def kernel(self, sg: Subgraph, op: Operation) -> KernelFn | None:
        """The kernel computing `op` of `sg` when it runs as its own step; None: the executor's."""

    def fusions(self, sg: Subgraph) -> list[Fusion]:
        """Steps of `sg` that each compute a group of its operations, no operation in two of them."""
