"""NNAPI kernels: one module per OperationType, vectorized numpy. Importing this package registers them all.

Modules are discovered from this package's own directory, so adding `kernels/<op>.py` with an
`@kernel(OperationType.X)` function is all a new kernel needs.
"""

from __future__ import annotations

import importlib
import pkgutil

from nnconv.runtime.kernels.registry import KERNELS, KernelCall, kernel

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _mod not in ("registry", "common") and not _mod.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod}")

__all__ = ["KERNELS", "KernelCall", "kernel"]
