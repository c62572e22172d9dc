"""The lowering registry: one `Rule` per TFLite BuiltinOperator, registered with `@lowering_rule`.

A rule has a `check` (records diagnostics on the context, never returns a bare False) and a `lower` (emits
NNAPI operands and operations). The converter runs every check before lowering anything, the report and
`nnconv ops` are derived from the same rules, and the lowest accepting API level of a refused op is found
by re-running the same check at higher levels, so no separate support table can drift.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, ClassVar

from nnconv.nnapi.enums import OperationType
from nnconv.rewrite.folds import Fold
from nnconv.tflite.schema_enums import BuiltinOperator

if TYPE_CHECKING:
    from nnconv.lowering.context import CheckContext, LowerContext
    from nnconv.lowering.driver_support import DriverNote

RULES: dict[int, "Rule"] = {}  # keyed by BuiltinOperator value
CUSTOM_RULES: dict[str, "Rule"] = {}  # keyed by custom_code


class Rule:
    """Base of every lowering rule.

    Class attributes describe the rule for `nnconv ops` and docs/ops.md:
    `nnapi_ops` every NNAPI operation the rule may emit (a registry test checks each has a kernel; a rule
    that emits one operation sets `nnapi_op` instead, and `nnapi_ops` is derived from it),
    `min_api_level` the lowest level at which some variant lowers, `dtypes` the TFLite input dtypes it
    takes, `constraints` a one-line summary of what the check refuses.
    """

    op: ClassVar[BuiltinOperator]
    custom_code: ClassVar[str | None] = None
    nnapi_ops: ClassVar[tuple[OperationType, ...]] = ()
    nnapi_op: ClassVar[OperationType | None] = None
    doc_more: ClassVar[str] = ""  # appended to a family's "<OP>" docstring (`__init_subclass__`)
    min_api_level: ClassVar[int] = 27
    dtypes: ClassVar[tuple[str, ...]] = ("float32",)
    constraints: ClassVar[str] = ""
    beyond_delegate: ClassVar[bool] = False  # True where TFLite's NNAPI delegate does not lower the op
    becomes_constant: ClassVar[bool] = False  # the op is evaluated at conversion time (emits no operation)
    # Spec-valid cases vendor drivers commonly refuse (driver_support.py): warnings, never refusals.
    driver_notes: ClassVar[tuple["DriverNote", ...]] = ()
    # How the rewrite stage evaluates the op when its inputs are constant (`rewrite/folds/`, registered there
    # by op, since the rewrite stage runs before and imports nothing of the lowering); None: never folded.
    fold: ClassVar[Fold | None] = None
    # The builtin options class the lowering reads unconditionally (activation, clips, time_major, ...): an
    # op whose options table is missing or of another kind (a corrupt model) is refused as malformed before
    # the check runs. None: the rule reads no options, or falls back to TFLite's defaults itself.
    options_type: ClassVar[type | None] = None
    # The input whose stored values the op copies, where TFLite's kernel ignores quantization: an int8 /
    # uint8 output quantized differently from that input gets the NNAPI op's result (written with the
    # input's parameters) through a same-type CAST, which copies stored values too (`LowerContext`; the
    # check must let the mismatch through: `check_data_movement(..., bitcast=True)`). None: not such an op.
    stored_values_from: ClassVar[int | None] = None
    # TFLite's NNAPI delegate carries the op's int8 tensors as uint8 (+128) below API 30 (its
    # `NeedInt8Conversion` list): `common.check_int8` lets int8 through there. Other ops with int8 activations
    # need TENSOR_QUANT8_ASYMM_SIGNED (API 30).
    int8_shiftable: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A family's members: `nnapi_ops` from a member's own `nnapi_op` (unless it lists more), and, for a
        member without a docstring of its own, the family's docstring with "<OP>" replaced by its NNAPI
        operation (`nnapi_op`, else the first of `nnapi_ops`), followed by the member's `doc_more`."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        op = own.get("nnapi_op")
        if op is not None and "nnapi_ops" not in own:
            cls.nnapi_ops = (op,)
        name_op = op if op is not None else (own["nnapi_ops"][0] if own.get("nnapi_ops") else None)
        inherited = cls.__mro__[1].__doc__
        if own.get("__doc__") is None and inherited and (("<OP>" in inherited and name_op is not None)
                                                         or "doc_more" in own):
            named = inherited if name_op is None else inherited.replace("<OP>", name_op.name)
            cls.__doc__ = named + own.get("doc_more", "")

    def check(self, c: "CheckContext") -> None:
        """Records every reason the op cannot be lowered at `c.api_level` (nothing when it can)."""

    def lower(self, c: "LowerContext") -> None:
        """Emits the NNAPI operations for the op. Only called when `check` recorded no error."""
        raise NotImplementedError(f"{type(self).__name__} has no lowering")

    def describe_lowering(self, api_level: int) -> tuple[OperationType, ...]:
        """The NNAPI ops this rule typically emits at `api_level` (for docs when the op is refused)."""
        return self.nnapi_ops


def family_rule(base: type[Rule], op: BuiltinOperator, **attrs: Any) -> type[Rule]:
    """Registers the rule of `op` as a member of `base`'s family that differs from it only by class attributes
    (its `nnapi_op`, `fold`, ...): the class `base`'s module would declare, named after `op` (RELU_N1_TO_1:
    ReluN1To1). Its docstring is the family's ("<OP>" replaced, `doc_more` appended; `Rule.__init_subclass__`)."""
    if base.__doc__ and "<OP>" not in base.__doc__ and "doc_more" not in attrs:
        attrs.setdefault("__doc__", base.__doc__)
    cls = type(op.name.title().replace("_", ""), (base,), {"__module__": base.__module__, **attrs})
    return lowering_rule(op)(cls)


def lowering_rule(op: BuiltinOperator) -> Callable[[type[Rule]], type[Rule]]:
    """Class decorator registering a rule for a TFLite builtin operator."""
    def register(cls: type[Rule]) -> type[Rule]:
        if int(op) in RULES:
            raise RuntimeError(f"two lowering rules for {op.name}: {type(RULES[int(op)]).__name__} and "
                               f"{cls.__name__}")
        cls.op = op
        RULES[int(op)] = cls()
        return cls
    return register


def custom_rule(custom_code: str) -> Callable[[type[Rule]], type[Rule]]:
    """Class decorator registering a rule for a custom op name (e.g. MediaPipe's)."""
    def register(cls: type[Rule]) -> type[Rule]:
        cls.op = BuiltinOperator.CUSTOM
        cls.custom_code = custom_code
        CUSTOM_RULES[custom_code] = cls()
        return cls
    return register
