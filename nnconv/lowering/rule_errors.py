"""Telling a malformed operator from a bug of our own when a rule's check raises.

A rule's check reads the op's options and tensors the way its kind defines them. A hand-edited or corrupt
model can break that: an op without the options its kind carries, options of another op, or fewer
tensors than the kind has. Such an op is refused (NNC028, "re-export the model"), the user's problem.
Anything else a check raises (an AttributeError on a tensor, a TypeError, a KeyError, ...) is a bug of the
rule, never the user's model: it becomes an `InternalError` (exit 4, "please report"). A rule's lowering is
judged the same way when the check lowers the op alone (`convert.runtime_refusals`): the options or tensor
slots only the lowering reads give a refusal, any other exception is an `InternalError`.
"""

from __future__ import annotations

import dataclasses
import types

from nnconv.errors import InternalError
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.tflite import options as tflite_options
from nnconv.tflite.ir import Operator

# Every field name any builtin-options table has: reading one of them on absent options (None) is the
# model's fault, reading anything else on None is the rule's.
_OPTION_FIELDS = frozenset(f.name for cls in tflite_options.OPTIONS_BY_UNION.values()
                           for f in dataclasses.fields(cls))
# The context accessors that index the op's own tensor lists (IndexError there: too few tensors).
_TENSOR_ACCESSORS = frozenset({CheckContext.output.__code__, CheckContext.tensor.__code__,
                               LowerContext.input_operand.__code__, LowerContext.output_operand.__code__})


def _raised_in(e: BaseException, codes: frozenset[types.CodeType]) -> bool:
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code in codes


def malformed_reason(c: CheckContext, e: Exception) -> str | None:
    """What is wrong with the op when `e` (raised by its rule's check) comes from the model; None when `e`
    is a bug of the rule."""
    options = c.op.options
    if isinstance(e, AttributeError) and getattr(e, "obj", e) is options:
        if options is None and e.name in _OPTION_FIELDS:
            return f"the op has no options (its rule reads '{e.name}')"
        if options is not None:
            return f"its options are {type(options).__name__}, which has no '{e.name}'"
    if isinstance(e, IndexError) and _raised_in(e, _TENSOR_ACCESSORS):
        return f"it has fewer tensors than its kind ({len(c.op.inputs)} inputs, {len(c.op.outputs)} outputs)"
    return None


def rule_bug(op: Operator, rule_name: str, e: Exception, stage: str = "check") -> InternalError:
    """The internal error for an exception a rule's check (or, `stage` "lowering", its lowering) raised on a
    well-formed op."""
    return InternalError(f"the {rule_name} {stage} failed on op #{op.index} {op.name} ({type(e).__name__}: "
                         f"{e}); this is a bug in nnconv, please report it with the model")
