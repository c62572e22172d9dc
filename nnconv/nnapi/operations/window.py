"""The operand signatures of NNAPI's windowed operations: CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D,
TRANSPOSE_CONV_2D and the 2-D poolings, each in its implicit-padding (a SAME / VALID scheme) and explicit-padding (four pads) form.

Android parses these operand lists once per operation into a named structure (Conv2dParam in Conv2D.cpp);
here a `WindowSignature` per family does it, and every reader of the slots asks it: the validators, the
kernels (`runtime/kernels/conv_2d.py`, `depthwise_conv_2d.py`, `grouped_conv_2d.py`, `pooling.py`), the
executor's fusion and the lowering rules that order the operands (`slots.slot_operands`).

All the forms share one shape: the tensors (input, and a convolution's filter and bias), the padding (one
scheme, or left/right/top/bottom), stride_w, stride_h, the family's own scalars (a depth multiplier, a group
count, a pooling filter's width and height), the fused activation, then the optional NCHW flag (feature
level 3) and, for CONV_2D and DEPTHWISE_CONV_2D, the optional dilation factors. Which form an operation uses
is decided in `WindowSignature.is_explicit` alone: by the input count where it tells, else by the type of
the slot that holds the implicit form's NCHW flag (a BOOL) and the explicit form's stride (an INT32).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Callable

from nnconv.nnapi.enums import OperandType
from nnconv.nnapi.operations.view import OperationView


# The parts every form is made of, in slot order: the tensors, the padding (a scheme, or four pads), the
# strides, the family's own scalars, the fused activation, then the optional layout flag and dilation.
_CONV_TENSORS = ("INPUT", "FILTER", "BIAS")
_SCHEME = ("PADDING_SCHEME",)
_PADS = ("PADDING_LEFT", "PADDING_RIGHT", "PADDING_TOP", "PADDING_BOTTOM")
_STRIDES = ("STRIDE_WIDTH", "STRIDE_HEIGHT")
_ACTIVATION = ("ACTIVATION", "NCHW")
_DILATION = ("DILATION_WIDTH", "DILATION_HEIGHT")


def _form(name: str, doc: str, *parts: tuple[str, ...]) -> type[IntEnum]:
    """The slot enum of one operand form: its parts' names numbered from 0 in order."""
    slots = IntEnum(name, [member for part in parts for member in part], start=0, module=__name__)
    slots.__doc__ = doc
    return slots


ConvImplicitSlot = _form("ConvImplicitSlot", "CONV_2D, implicit padding: 7 inputs, 8 with the layout flag (7), 10 "
                         "with dilation.", _CONV_TENSORS, _SCHEME, _STRIDES, _ACTIVATION, _DILATION)
ConvExplicitSlot = _form("ConvExplicitSlot", "CONV_2D, explicit padding: 10 inputs, 11 with the layout flag (10), 13 "
                         "with dilation.", _CONV_TENSORS, _PADS, _STRIDES, _ACTIVATION, _DILATION)
DepthwiseImplicitSlot = _form("DepthwiseImplicitSlot", "DEPTHWISE_CONV_2D, implicit padding: filter [1, KH, KW, "
                              "C * M].", _CONV_TENSORS, _SCHEME, _STRIDES, ("DEPTH_MULTIPLIER",), _ACTIVATION,
                              _DILATION)
DepthwiseExplicitSlot = _form("DepthwiseExplicitSlot", "DEPTHWISE_CONV_2D, explicit padding.",
                              _CONV_TENSORS, _PADS, _STRIDES, ("DEPTH_MULTIPLIER",), _ACTIVATION, _DILATION)
GroupedImplicitSlot = _form("GroupedImplicitSlot", "GROUPED_CONV_2D (feature level 3), implicit padding: the layout "
                            "flag is required, no dilation.", _CONV_TENSORS, _SCHEME, _STRIDES, ("NUM_GROUPS",),
                            _ACTIVATION)
GroupedExplicitSlot = _form("GroupedExplicitSlot", "GROUPED_CONV_2D, explicit padding.",
                            _CONV_TENSORS, _PADS, _STRIDES, ("NUM_GROUPS",), _ACTIVATION)
TransposeImplicitSlot = _form("TransposeImplicitSlot", "TRANSPOSE_CONV_2D (feature level 3), implicit padding: 9 "
                              "inputs, the requested output shape a TENSOR_INT32 [4] before the scheme.",
                              _CONV_TENSORS, ("OUTPUT_SHAPE",), _SCHEME, _STRIDES, _ACTIVATION)
TransposeExplicitSlot = _form("TransposeExplicitSlot", "TRANSPOSE_CONV_2D, explicit padding: 11 inputs.",
                              _CONV_TENSORS, _PADS, _STRIDES, _ACTIVATION)
_POOL_FILTER = ("FILTER_WIDTH", "FILTER_HEIGHT")
PoolImplicitSlot = _form("PoolImplicitSlot", "AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D, implicit padding: 7 inputs, 8 "
                         "with the layout flag.", ("INPUT",), _SCHEME, _STRIDES, _POOL_FILTER, _ACTIVATION)
PoolExplicitSlot = _form("PoolExplicitSlot", "The poolings, explicit padding: 10 inputs, 11 with the layout flag.",
                         ("INPUT",), _PADS, _STRIDES, _POOL_FILTER, _ACTIVATION)


# The scalars a family adds between the strides and the activation, and the `WindowParams` field of each.
_EXTRAS = {"DEPTH_MULTIPLIER": "depth_multiplier", "NUM_GROUPS": "num_groups", "FILTER_WIDTH": "filter_w",
           "FILTER_HEIGHT": "filter_h"}


@dataclass(frozen=True, kw_only=True)
class WindowParams:
    """One windowed operation's scalars, read once by its signature (Android's Conv2dParam). Padding is
    either `padding_scheme` (implicit form: resolved against the input size by the kernel) or the four pads."""

    explicit: bool
    padding_scheme: int | None = None
    pad_left: int = 0
    pad_right: int = 0
    pad_top: int = 0
    pad_bottom: int = 0
    stride_w: int
    stride_h: int
    activation: int
    nchw: bool = False
    dilation_w: int = 1
    dilation_h: int = 1
    depth_multiplier: int | None = None  # DEPTHWISE_CONV_2D
    num_groups: int | None = None  # GROUPED_CONV_2D
    filter_w: int | None = None  # the poolings
    filter_h: int | None = None


@dataclass(frozen=True, kw_only=True)
class WindowSignature:
    """The two operand forms of one windowed family and the input counts each takes."""

    implicit: type[IntEnum]
    explicit: type[IntEnum]

    @property
    def implicit_max_inputs(self) -> int:
        return len(self.implicit)

    @property
    def first_scalar(self) -> int:
        """The first scalar slot of either form (the parameters a kernel may memoize start there)."""
        return min(int(self.implicit.PADDING_SCHEME), int(self.explicit.PADDING_LEFT))

    @property
    def explicit_min_inputs(self) -> int:
        """The explicit form up to its activation (its optional slots follow it)."""
        return int(self.explicit.ACTIVATION) + 1

    def is_explicit(self, num_inputs: int, type_at: Callable[[int], OperandType | None]) -> bool:
        """The one place the form is decided. Fewer inputs than the explicit form's required ones: implicit;
        more than the implicit form has: explicit; in between (CONV_2D's 10, a dilated implicit or a plain
        explicit operation), the slot holding the implicit form's NCHW BOOL holds an INT32 stride in the
        explicit form. `type_at(slot)`: the declared type of input `slot`."""
        if num_inputs < self.explicit_min_inputs:
            return False
        if num_inputs > self.implicit_max_inputs:
            return True
        return type_at(int(self.implicit.NCHW)) is OperandType.INT32

    def slots(self, explicit: bool) -> type[IntEnum]:
        return self.explicit if explicit else self.implicit

    def form(self, num_inputs: int, type_at: Callable[[int], OperandType | None]) -> type[IntEnum]:
        """The slot enum of the form an operation with these inputs uses."""
        return self.slots(self.is_explicit(num_inputs, type_at))

    def has_options(self, num_inputs: int, type_at: Callable[[int], OperandType | None]) -> bool:
        """The operation gives the layout flag (and maybe dilation): feature level 3 in every family."""
        return num_inputs > self.form(num_inputs, type_at).NCHW

    def parse(self, num_inputs: int, type_at: Callable[[int], OperandType | None], read: Callable[[int], Any],
              read_optional: Callable[[int, Any], Any]) -> WindowParams:
        """The named parameters of an operation: `read(slot)` gives a required scalar's value (raising where it
        cannot), `read_optional(slot, default)` an optional one's. Values are as read (the validator checks
        the slots' types)."""
        explicit = self.is_explicit(num_inputs, type_at)
        s = self.slots(explicit)
        members = s.__members__
        fields: dict[str, Any] = {"explicit": explicit}
        if explicit:
            fields.update(pad_left=read(s.PADDING_LEFT), pad_right=read(s.PADDING_RIGHT),
                          pad_top=read(s.PADDING_TOP), pad_bottom=read(s.PADDING_BOTTOM))
        else:
            fields["padding_scheme"] = read(s.PADDING_SCHEME)
        fields.update(stride_w=read(s.STRIDE_WIDTH), stride_h=read(s.STRIDE_HEIGHT))
        for member, field in _EXTRAS.items():
            if member in members:
                fields[field] = read(members[member])
        fields["activation"] = read(s.ACTIVATION)
        fields["nchw"] = bool(read_optional(s.NCHW, False))
        if "DILATION_WIDTH" in members:
            fields.update(dilation_w=int(read_optional(members["DILATION_WIDTH"], 1)),
                          dilation_h=int(read_optional(members["DILATION_HEIGHT"], 1)))
        return WindowParams(**fields)

    def scalar_types(self, explicit: bool) -> dict[IntEnum, OperandType]:
        """The type each scalar slot of a form must have: BOOL for the layout flag, INT32 for the others."""
        s = self.slots(explicit)
        first = s.PADDING_LEFT if explicit else s.PADDING_SCHEME
        return {slot: OperandType.BOOL if slot.name == "NCHW" else OperandType.INT32
                for slot in s if slot >= first}



CONV_2D = WindowSignature(implicit=ConvImplicitSlot, explicit=ConvExplicitSlot)
DEPTHWISE_CONV_2D = WindowSignature(implicit=DepthwiseImplicitSlot, explicit=DepthwiseExplicitSlot)
GROUPED_CONV_2D = WindowSignature(implicit=GroupedImplicitSlot, explicit=GroupedExplicitSlot)
TRANSPOSE_CONV_2D = WindowSignature(implicit=TransposeImplicitSlot, explicit=TransposeExplicitSlot)
POOL_2D = WindowSignature(implicit=PoolImplicitSlot, explicit=PoolExplicitSlot)


def window_level(view: OperationView, signature: WindowSignature) -> int:
    """The validators' part: the scalars of the operation's form have their types (INT32, the layout flag
    BOOL), and the layout flag or dilation needs feature level 3."""
    n = len(view.in_operands)
    explicit = signature.is_explicit(n, view.type_at)
    for slot, wanted in signature.scalar_types(explicit).items():
        got = view.type_at(slot)
        if got is not None and got is not wanted:
            form = "explicit" if explicit else "implicit"
            raise view.refuse(f"{view.describe(slot)} is {got.name}, the {form}-padding form takes {wanted.name}")
    return 3 if signature.has_options(n, view.type_at) else 1
