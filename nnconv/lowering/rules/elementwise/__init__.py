"""Elementwise arithmetic: ADD, SUB, MUL, DIV (`fused_binary`); ADD_N, SQUARE, SQUARED_DIFFERENCE, MAXIMUM,
MINIMUM, POW (`binary`); the float unary functions ABS, EXP, LOG, RSQRT, SQRT, SIN, COS, NEG, FLOOR, CEIL
(`unary`); FLOOR_DIV, FLOOR_MOD, SIGN, ROUND (`integer`); ATAN2 (`atan2`, a polynomial). CAST and ZEROS_LIKE
live in `rules/cast.py`.
(TFLite has no ONES_LIKE builtin: models express it as FILL, another family's rule.)

Broadcasting: TFLite and NNAPI broadcast alike (dimensions aligned from the right, 1 stretches), so
operands pass through unchanged; rank-0 tensors become [1] tensors through the operand policy, which
broadcast the same way. NNAPI limits the binary arithmetic ops to rank 4.

Compositions used below API levels that lack an operation are exact in float32 (each is justified next to
its rule): -x = x * -1 only flips the sign bit; relu(x) + relu(-x) has one zero term; x + (-0.0) == x.
Importing this package registers the rules of its modules.
"""

from __future__ import annotations

from nnconv.lowering.rules.elementwise import atan2, binary, fused_binary, integer, unary

__all__ = ["atan2", "binary", "fused_binary", "integer", "unary"]
