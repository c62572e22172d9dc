"""What the NNAPI runtime accepts and what nnconv knows, operation by operation: one `OperationSpec` per NNAPI
operation (`spec.py`: named operand slots, the feature level, the validator, the flags the executor and
batched execution read), declared in the family module of the operation. Importing this package declares
every spec; the list below is explicit (no discovery by name), and `tests/test_registry.py` fails when a
module of this folder that declares one is missing from it, or when an operation type has no spec.

The model validator (`nnapi/validate.py`) runs the validators on every operation (`validation.py`); the kernels
(`runtime/kernels`, a later stage) import their slot names and the multipliers of `nnapi/quant_limits.py` from
here, and register against each spec's operation type.
"""

from __future__ import annotations

from nnconv.nnapi.operations import (activations, arithmetic, control_flow, conv, detection, elementwise, lookup,
                                     pooling, recurrent, reduce, spatial, tensors)
from nnconv.nnapi.operations.spec import (SPECS, AxisParam, OperationSpec, SampleAxis, operation_level,
                                          operations_where, spec_of)
from nnconv.nnapi.operations.validation import default_feature_level, validate_operation
from nnconv.nnapi.operations.view import OperationRefused, OperationView

__all__ = ["SPECS", "AxisParam", "OperationRefused", "OperationSpec", "OperationView", "SampleAxis",
           "default_feature_level", "operation_level", "operations_where", "spec_of", "validate_operation",
           "activations", "arithmetic", "control_flow", "conv", "detection", "elementwise", "lookup", "pooling",
           "recurrent", "reduce", "spatial", "tensors"]
