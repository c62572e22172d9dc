"""The constant input columns that carry an int8 LSTM's gate biases without layer normalization."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nnconv.lowering.rules.recurrent.int8_lstm_bias import MAX_WIDE_COLUMNS, bias_columns, wide_columns_needed

INT32 = st.integers(-2 ** 31, 2 ** 31 - 1)


@settings(max_examples=300, deadline=None)
@given(zero_point=st.integers(-128, 127),
       biases=st.lists(st.one_of(st.none(), st.lists(st.integers(-40_000_000, 40_000_000), min_size=1, max_size=6)),
                       min_size=1, max_size=4))
def test_columns_reproduce_every_bias_exactly(zero_point, biases):
    n = max((len(b) for b in biases if b is not None), default=1)
    arrays = [None if b is None else np.resize(np.asarray(b, np.int64), n) for b in biases]
    values, columns = bias_columns(arrays, zero_point)
    assert values.dtype == np.int8
    for b, col in zip(arrays, columns):
        if b is None:
            assert col is None
            continue
        assert col.dtype == np.int8 and col.shape == (n, len(values))
        assert col.min(initial=0) >= -127 and col.max(initial=0) <= 127  # symmetric int8 weights
        accumulated = ((values.astype(np.int64) - zero_point)[None, :] * col.astype(np.int64)).sum(axis=1)
        assert np.array_equal(accumulated, b)


def test_no_columns_when_every_bias_is_zero():
    values, columns = bias_columns([np.zeros(4, np.int32), None], 5)
    assert values.size == 0 and columns[0].shape == (4, 0) and columns[1] is None


@given(zero_point=st.integers(-128, 127), bias=INT32)
def test_wide_columns_needed_is_what_bias_columns_uses(zero_point, bias):
    b = np.array([bias], np.int64)
    wide = wide_columns_needed([b], zero_point)
    if wide <= MAX_WIDE_COLUMNS:
        values, _ = bias_columns([b], zero_point)
        assert len(values) == (1 + wide if bias else 0)
