"""What the NNAPI runtime accepts, operation by operation: each operation family's validate/prepare-time
rules (the feature level an operation needs with its operands, or why it is refused), with named operand
slots. Importing this package registers every validator; the list below is explicit (no discovery by name),
and `tests/test_registry.py` fails when a module of this folder that registers one is missing from it.

The model validator (`nnapi/validate.py`) runs them on every operation; the kernels (`runtime/kernels`,
a later stage) import their slot names and the multipliers of `nnapi/quant_limits.py` from here.
"""

from __future__ import annotations

from nnconv.nnapi.operations import (activations, arithmetic, control_flow, conv, elementwise, pooling, recurrent,
                                     tensors)
from nnconv.nnapi.operations.validation import (VALIDATORS, OperationRefused, OperationView, default_feature_level,
                                                validate_operation, validator)

__all__ = ["VALIDATORS", "OperationRefused", "OperationView", "default_feature_level", "validate_operation",
           "validator", "activations", "arithmetic", "control_flow", "conv", "elementwise", "pooling", "recurrent",
           "tensors"]
