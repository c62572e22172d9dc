"""Operation validation: would the NNAPI runtime accept this operation, with these operands, at a feature level?

Android validates every operation of a model before it compiles it (each operation file's `validate`,
returning the feature level the operation needs with its operands), and the reference CPU's `prepare`
refuses some more from the constant parameters alone (a quantized multiplier out of range, an output
scale the kernel prescribes). `validate_operation` runs, for one operation, what its `OperationSpec`
declares: the output type rule, the feature level of the operation and of its operand types, the level
each input type needs, then the spec's validator. The model validator (`nnconv/nnapi/validate.py`) calls it
for every operation; the lowering calls it on what the rules emit (so `check` refuses what the runtime
would), and the executor calls it before it runs a model.
"""

from __future__ import annotations

from nnconv.nnapi.levels import api_level_of_feature_level
from nnconv.nnapi.operations.spec import OperationSpec, spec_of
from nnconv.nnapi.operations.view import OperationView


def default_feature_level(view: OperationView) -> int:
    """The feature level the operation itself and its operand types were introduced at."""
    types = [od.type for od in (*view.in_operands, *view.out_operands) if od is not None]
    return max([spec_of(view.operation.type).level, *(t.min_feature_level for t in types)])


def _input_type_level(view: OperationView, spec: OperationSpec) -> int:
    """The feature level input 0's type needs (`OperationSpec.input_levels`), refusing a type the operation
    does not take; 1 when the spec lists none or input 0 is omitted."""
    x = view.input(0)
    if spec.input_levels is None or x is None:
        return 1
    needed = spec.input_levels.get(x.type)
    if needed is None:
        slot = spec.inputs(0) if spec.inputs is not None else 0
        accepted = ", ".join(t.name for t in spec.input_levels)
        raise view.refuse(f"{view.describe(slot)} is {x.type.name}; {view.name} takes {accepted}")
    return needed


def validate_operation(view: OperationView, feature_level: int) -> int:
    """The feature level the operation needs with its operands; raises OperationRefused when the runtime
    refuses it at every level or needs a level above `feature_level`."""
    spec = spec_of(view.operation.type)
    if spec.same_type_output and view.in_operands and view.out_operands:
        x, out = view.in_operands[0], view.out_operands[0]
        if x is not None and out.type is not x.type:
            raise view.refuse(f"output 0 is {out.type.name}, {view.describe(0)} is {x.type.name}: the output must "
                              "have the input's type")
    needed = max(default_feature_level(view), _input_type_level(view, spec))
    if spec.validator is not None:
        needed = max(needed, spec.validator(view, feature_level))
    if needed > feature_level:
        raise view.refuse(f"needs NNAPI feature level {needed} (API {api_level_of_feature_level(needed)}) "
                          f"with these operands, the model targets feature level {feature_level}")
    return needed
