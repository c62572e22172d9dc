"""The Prepare of TFLite's neural-network kernels (`tflite/kernels/*.cc` at LiteRT f67457790c9c): CONV_2D,
DEPTHWISE_CONV_2D, the 2-D pools, CONV_3D, SPACE_TO_DEPTH / DEPTH_TO_SPACE, FULLY_CONNECTED, BATCH_MATMUL,
the full LSTM kernels (LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM), RNN, UNIDIRECTIONAL_SEQUENCE_RNN, SVDF and the
AudioSpectrogram custom op: output shapes from input shapes and options, with the shape and type checks
whose failure stops AllocateTensors. Quantization-parameter arithmetic is not followed.
"""

from __future__ import annotations

from nnconv.tflite.prepare_node import INT32_MAX, Node, PrepareFailure, Shape, custom_kernel, kernel
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

# -- convolution and pooling -------------------------------------------------------------------------
def out_size(padding: int | None, size: int, k: int, stride: int, dilation: int) -> int:
    """ComputeOutSizeChecked (schema padding SAME=0 / VALID=1); PrepareFailure on what it refuses."""
    if padding not in (0, 1) or size < 0 or k <= 0 or stride <= 0 or dilation <= 0:
        raise PrepareFailure("ComputeOutSizeChecked: invalid padding arguments")
    effective = (k - 1) * dilation + 1
    num = size + stride - 1 if padding == 0 else size + stride - effective
    value = num // stride if num >= 0 else -((-num) // stride)  # C++ division truncates toward zero
    if value < 0 or value > INT32_MAX:
        raise PrepareFailure("ComputeOutSizeChecked: output size out of range")
    return value


def _padding(n: Node) -> int | None:
    return n.options.padding if n.options is not None else None  # an absent table is kTfLitePaddingUnknown


def _spatial(n: Node, h: int, w: int, kh: int, kw: int, dh: int = 1, dw: int = 1) -> tuple[int, int]:
    """ComputePaddingHeightWidthChecked: width first, then height."""
    ow = out_size(_padding(n), w, kw, n.param("stride_w"), dw)
    return out_size(_padding(n), h, kh, n.param("stride_h"), dh), ow


def _conv_tensors(n: Node, rank: int, inputs_check: str) -> tuple[int, int, int]:
    """(output, input, filter) after the first checks conv.cc and conv3d.cc share: two or three inputs
    (`inputs_check` is the kernel's own wording), one output, input and filter of `rank` dimensions."""
    n.ensure(n.n_in in (2, 3), inputs_check)
    n.arity(None, 1)
    out, x, f = n.output(0), n.input(0), n.input(1)
    n.ensure_eq(n.rank(x), rank, "input->dims->size", str(rank))
    n.ensure_eq(n.rank(f), rank, "filter->dims->size", str(rank))
    return out, x, f


@kernel(B.CONV_2D)
def _conv(n: Node) -> None:
    out, x, f = _conv_tensors(n, 4, "has_bias || node->inputs->size == 2")
    (b, h, w, c), (co, kh, kw, ci) = n.shape(x), n.shape(f)
    n.ensure(h > 0 and w > 0 and c > 0 and kh > 0 and kw > 0 and co > 0 and ci > 0, "dims > 0")
    n.ensure_eq(c % ci, 0, "input_channel % filter_input_channel", "0")
    n.ensure_eq(co % (c // ci), 0, "filter->dims->data[0] % data->groups", "0")
    n.ensure(n.type(x) in (T.FLOAT32, T.UINT8, T.INT8, T.INT16), "input_type is float32, uint8, int8 or int16")
    n.same_type(out, x)
    if n.type(x) in (T.INT8, T.INT16):
        q = n.tensor(f).quantization
        n.ensure(bool(q.scale), "filter->quantization.type == kTfLiteAffineQuantization")
        n.ensure(all(z == 0 for z in q.zero_point), "affine_quantization->zero_point->data[i] == 0")
    # the 2.3.0 runtime also bounds them by INT16_MAX (the mirror's conv.cc only by 0)
    for field in ("stride_h", "stride_w", "dilation_h_factor", "dilation_w_factor"):
        n.ensure(0 < n.param(field) <= 32767, f"params->{field} in [1, INT16_MAX]")
    # conv.cc requires the bias input, unlike the schema
    n.ensure(n.n_in == 3, "has_bias")
    bias = n.input(2)
    if n.type(x) in (T.UINT8, T.INT8):
        n.ensure(n.type(bias) == T.INT32, "bias->type == kTfLiteInt32")
    elif n.type(x) == T.INT16:
        n.ensure(n.type(bias) in (T.INT32, T.INT64), "bias->type is int32 or int64")
    else:
        n.same_type(bias, x)
    n.ensure_eq(n.numel(bias), co, "NumElements(bias)", "SizeOfDimension(filter, 0)")
    oh, ow = _spatial(n, h, w, kh, kw, n.param("dilation_h_factor"), n.param("dilation_w_factor"))
    n.resize(out, (b, oh, ow, co))


@kernel(B.DEPTHWISE_CONV_2D)
def _depthwise(n: Node) -> None:
    n.ensure(n.n_in in (2, 3), "has_bias || NumInputs(node) == 2")
    x, f = n.input(0), n.input(1)
    n.arity(None, 1)
    out = n.output(0)
    n.ensure_eq(n.rank(x), 4, "NumDimensions(input)", "4")
    n.ensure_eq(n.rank(f), 4, "NumDimensions(filter)", "4")
    for field in ("dilation_h_factor", "dilation_w_factor", "stride_w", "stride_h"):
        n.ensure(0 < n.param(field) <= 32767, f"params->{field} in [1, INT16_MAX]")
    (b, h, w, c), (k0, kh, kw, co) = n.shape(x), n.shape(f)
    n.ensure(h > 0 and w > 0 and c > 0 and kh > 0 and kw > 0 and co > 0, "dims > 0")
    dt, ft = n.type(x), n.type(f)
    n.ensure(dt in (T.FLOAT32, T.UINT8, T.INT8, T.INT16), "data_type is float32, uint8, int8 or int16")
    n.same_type(out, x)
    if not (dt == T.FLOAT32 and ft == T.INT8):
        n.ensure(ft == dt or dt == T.INT16 or ft == T.INT4, "filter->type == data_type")
    n.ensure_eq(k0, 1, "SizeOfDimension(filter, 0)", "1")
    n.ensure_eq(co % c, 0, "output_channels % input_channels", "0")
    if n.n_in == 3:
        bias = n.input(2)
        want = {T.UINT8: T.INT32, T.INT8: T.INT32, T.INT16: T.INT64}.get(dt, dt)
        n.ensure(n.type(bias) == want, f"bias->type == {want.name}")
        n.ensure_eq(n.rank(bias), 1, "NumDimensions(bias)", "1")
        n.ensure_eq(co, n.dim(bias, 0), "SizeOfDimension(filter, 3)", "SizeOfDimension(bias, 0)")
    oh, ow = _spatial(n, h, w, kh, kw, n.param("dilation_h_factor"), n.param("dilation_w_factor"))
    n.resize(out, (b, oh, ow, co))


@kernel(B.AVERAGE_POOL_2D, B.MAX_POOL_2D, B.L2_POOL_2D)
def _pool(n: Node) -> None:
    n.arity(1, 1)
    out, x = n.output(0), n.input(0)
    n.ensure_eq(n.rank(x), 4, "NumDimensions(input)", "4")
    n.same_type(x, out)
    b, h, w, c = n.shape(x)
    n.ensure(n.param("stride_h") > 0 and n.param("stride_w") > 0, "params->stride > 0")
    # ComputePaddingHeightWidth (unchecked): an impossible window gives 0, width computed before height
    try:
        ow = out_size(_padding(n), w, n.param("filter_width"), n.param("stride_w"), 1)
    except PrepareFailure:
        ow, oh = 0, 0
    else:
        try:
            oh = out_size(_padding(n), h, n.param("filter_height"), n.param("stride_h"), 1)
        except PrepareFailure:
            oh = 0
    n.resize(out, (b, oh, ow, c))


@kernel(B.CONV_3D)
def _conv3d(n: Node) -> None:
    out, x, f = _conv_tensors(n, 5, "node->inputs->size == 2 || 3")
    (b, d, h, w, c), (kd, kh, kw, ci, co) = n.shape(x), n.shape(f)
    n.ensure_eq(c, ci, "input->dims->data[4]", "filter->dims->data[3]")
    n.ensure(min(d, h, w, c, kd, kh, kw, ci, co) > 0, "dims > 0")
    n.ensure(n.type(x) == T.FLOAT32 and n.type(f) == T.FLOAT32, "input and filter are float32")
    n.same_type(out, x)
    bias = n.opt_input(2)
    if bias is not None:
        n.same_type(bias, x)
        n.ensure_eq(n.numel(bias), co, "NumElements(bias)", "SizeOfDimension(filter, 4)")
    for field in ("stride_d", "stride_h", "stride_w", "dilation_d_factor", "dilation_h_factor", "dilation_w_factor"):
        n.ensure(n.param(field) > 0, f"params->{field} > 0")

    def size(s: int, k: int, stride: str, dil: str) -> int:  # ComputeOutSize: 0 where the checked one fails
        try:
            return out_size(_padding(n), s, k, n.param(stride), n.param(dil))
        except PrepareFailure:
            return 0
    n.resize(out, (b, size(d, kd, "stride_d", "dilation_d_factor"), size(h, kh, "stride_h", "dilation_h_factor"),
                   size(w, kw, "stride_w", "dilation_w_factor"), co))


@kernel(B.SPACE_TO_DEPTH, B.DEPTH_TO_SPACE)
def _space_depth(n: Node) -> None:
    n.arity(1, 1)
    x, out = n.input(0), n.output(0)
    n.ensure_eq(n.rank(x), 4, "NumDimensions(input)", "4")
    n.ensure(n.type(out) in (T.FLOAT32, T.UINT8, T.INT8, T.INT32, T.INT64), "data_type is supported")
    n.same_type(x, out)
    bs = n.param("block_size")
    n.ensure(bs > 0, "block_size > 0")
    b, h, w, c = n.shape(x)
    if n.op.builtin_code == B.SPACE_TO_DEPTH:
        n.ensure_eq(h, h // bs * bs, "input_height", "output_height * block_size")
        n.ensure_eq(w, w // bs * bs, "input_width", "output_width * block_size")
        n.resize(out, (b, h // bs, w // bs, c * bs * bs))
    else:
        n.ensure_eq(c, c // bs // bs * bs * bs, "input_channels", "output_channels * block_size * block_size")
        n.resize(out, (b, h * bs, w * bs, c // bs // bs))


# -- matrix products ---------------------------------------------------------------------------------
@kernel(B.FULLY_CONNECTED)
def _fully_connected(n: Node) -> None:
    n.ensure(n.n_in in (2, 3), "node->inputs->size == 2 || 3")
    fmt = n.param("weights_format")
    n.ensure_eq(n.n_out, 1 if fmt == 0 else 2, "node->outputs->size", "expected_outputs_count")
    x, f, out = n.input(0), n.input(1), n.output(0)
    bias = n.opt_input(2) if n.n_in == 3 else None
    xt, ft, ot = n.type(x), n.type(f), n.type(out)
    hybrid = xt == T.FLOAT32 and ft in (T.UINT8, T.INT8, T.INT4)
    if not hybrid:
        n.ensure(n.param("fused_activation_function") in (0, 1, 2, 3),
                 "activation is none, relu, relu_n1_to_1 or relu6")
    float_bias = bias is None or n.type(bias) == T.FLOAT32
    int_bias = bias is None or n.type(bias) in (T.INT32, T.INT64)
    if ft in (T.UINT8, T.INT8, T.INT4, T.INT16):
        if fmt == 1:
            n.ensure(xt == ft == T.UINT8 and ot == T.INT16 and int_bias, "shuffled weights types")
        elif hybrid:
            n.ensure(ot == T.FLOAT32 and float_bias, "hybrid output and bias are float32")
        elif ft == T.INT16:
            n.ensure(xt == ot == T.INT16 and int_bias, "int16 weights take int16 input and output")
        else:
            n.ensure(xt in (T.UINT8, T.INT8, T.INT16) and ot in (T.UINT8, T.INT8, T.INT16) and int_bias,
                     "quantized input, output and int bias")
    else:
        n.ensure(xt == ot == ft == T.FLOAT32 and float_bias, "input, output and filter are float32")
    n.ensure_eq(n.rank(f), 2, "NumDimensions(filter)", "2")
    units, depth = n.shape(f)
    s = n.shape(x)
    if depth == 0:
        rows = 1
        for d in s[:-1]:
            rows *= d
        n.resize(out, s[:-1] + (units,) if n.param("keep_num_dims") else (rows, units))
        return
    if bias is not None:
        n.ensure_eq(n.numel(bias), units, "NumElements(bias)", "SizeOfDimension(filter, 0)")
    if n.param("keep_num_dims"):
        n.ensure(len(s) > 0 and s[-1] == depth, "input->dims->data[input->dims->size - 1] == cols")
        n.resize(out, s[:-1] + (units,))
    else:
        n.resize(out, (n.numel(x) // depth, units))  # no divisibility check: the remainder is dropped


@kernel(B.BATCH_MATMUL)
def _batch_matmul(n: Node) -> None:
    n.arity(2, 1)
    a, b, out = n.input(0), n.input(1), n.output(0)
    ta, tb = n.type(a), n.type(b)
    n.ensure(ta in (T.FLOAT32, T.INT8, T.INT16) and tb in (T.FLOAT32, T.INT8, T.INT16), "lhs/rhs types")
    n.ensure((ta == T.FLOAT32 and tb == T.INT8) or ta == tb or (ta == T.INT16 and tb == T.INT8), "lhs/rhs types")
    n.ensure(2 <= n.rank(a) <= 5 and 2 <= n.rank(b) <= 5, "2 <= NumDimensions <= 5")
    rank = max(n.rank(a), n.rank(b))
    sa, sb = (1,) * (rank - n.rank(a)) + n.shape(a), (1,) * (rank - n.rank(b)) + n.shape(b)
    batch = []
    for da, db in zip(sa[:-2], sb[:-2]):
        if da != db and da != 1:
            n.ensure_eq(db, 1, "rhs_dim", "1")
        batch.append(db if da == 1 and da != db else da)
    adj_x, adj_y = n.param("adj_x"), n.param("adj_y")
    n.ensure_eq(sa[-2] if adj_x else sa[-1], sb[-1] if adj_y else sb[-2], "accum_dim_lhs", "accum_dim_rhs")
    n.resize(out, (*batch, sa[-1] if adj_x else sa[-2], sb[-2] if adj_y else sb[-1]))


# -- recurrent ops -------------------------------------------------------------------------------------
def _lstm_checks(n: Node, n_input: int, n_output: int, n_cell: int, layer_norm: bool) -> None:
    """CheckInputTensorDimensions of the full LSTM kernels (slots of lstm_shared.h)."""
    n.ensure(n.param("cell_clip") >= 0 and n.param("proj_clip") >= 0, "params->cell_clip >= 0")

    def matrix(k: int, rows: int, cols: int | None, optional: bool) -> int | None:
        t = n.opt_input(k) if optional else n.input(k)
        if t is not None:
            if cols is None or n.rank(t) == 1:  # recurrent weights may be diagonal (rank 1)
                n.ensure(n.rank(t) in ((1, 2) if cols is not None else (1,)), f"input {k} rank")
            else:
                n.ensure_eq(n.rank(t), 2, f"input {k}->dims->size", "2")
                n.ensure_eq(n.dim(t, 1), cols, f"input {k}->dims->data[1]", str(cols))
            n.ensure_eq(n.dim(t, 0), rows, f"input {k}->dims->data[0]", str(rows))
        return t

    i2i = matrix(1, n_cell, n_input, True)
    matrix(2, n_cell, n_input, False)
    matrix(3, n_cell, n_input, False)
    r2i = matrix(5, n_cell, n_output, True)
    matrix(6, n_cell, n_output, False)
    matrix(7, n_cell, n_output, False)
    n.ensure((i2i is None) == (r2i is None), "cifg_weights_all_or_none == true")
    peep = [matrix(k, n_cell, None, True) for k in (9, 10, 11)]
    cifg = i2i is None
    n.ensure((peep[0] is not None or cifg) and peep[1] is not None and peep[2] is not None
             or all(p is None for p in peep), "peephole_weights_all_or_none == true")
    if cifg:
        n.ensure(n.opt_input(12) is None, "input_gate_bias == nullptr")
    for k in ((13, 14, 15) if cifg else (12, 13, 14, 15)):
        gate = n.input(k)
        n.ensure_eq(n.rank(gate), 1, f"input {k} (gate bias)->dims->size", "1")
        n.ensure_eq(n.dim(gate, 0), n_cell, f"input {k} (gate bias)->dims->data[0]", "n_cell")
    proj = n.opt_input(16)
    if proj is not None:
        n.ensure(n.rank(proj) == 2 and n.shape(proj) == (n_output, n_cell), "projection_weights is [n_output, n_cell]")
    if n.opt_input(17) is not None:
        n.ensure(proj is not None and n.shape(n.opt_input(17) or 0) == (n_output,), "projection_bias is [n_output]")
    if layer_norm:
        for k in ((21, 22, 23) if cifg else (20, 21, 22, 23)):
            n.ensure(n.shape(n.input(k)) == (n_cell,), f"layer norm coefficients {k} are [n_cell]")


def _lstm(n: Node, batch: int, n_input: int, out_shape: Shape | None, time_major_dims: Shape) -> None:
    n.ensure(n.n_in in (20, 24), "The LSTM Full kernel expects 20 or 24 inputs.")
    n.arity(None, 1)
    layer_norm = n.n_in == 24 and n.opt_input(21) is not None
    w = n.input(4)
    n_cell = n.dim(w, 0)
    n.ensure(n.rank(w) == 2 and n.dim(w, 1) == n_input, "input_to_output_weights is [n_cell, n_input]")
    r = n.input(8)
    n.ensure(n.rank(r) in (1, 2) and n.dim(r, 0) == n_cell, "recurrent_to_output_weights->dims->data[0] == n_cell")
    n_output = n.dim(r, 0) if n.rank(r) == 1 else n.dim(r, 1)
    _lstm_checks(n, n_input, n_output, n_cell, layer_norm)
    out = n.output(0)
    for k, size, what in ((18, n_output, "output_state"), (19, n_cell, "cell_state")):
        state = n.opt_input(k)
        # GetVariableInput: a state the file does not flag as variable is no state at all
        n.ensure(state is not None and n.tensor(state).is_variable, f"{what} != nullptr")
        n.ensure_eq(n.numel(state), batch * size, f"NumElements({what})", f"n_batch * {size}")
    n.resize(out, time_major_dims[:-1] + (n_output,) if out_shape is None else out_shape)


@kernel(B.UNIDIRECTIONAL_SEQUENCE_LSTM)
def _sequence_lstm(n: Node) -> None:
    x = n.input(0)
    n.ensure(n.rank(x) > 1, "input->dims->size > 1")
    s = n.shape(x)
    n.ensure(len(s) >= 3, "input is [time, batch, depth] or [batch, time, depth]")
    _lstm(n, s[1] if n.param("time_major") else s[0], s[2], None, s)


@kernel(B.LSTM)
def _lstm_full(n: Node) -> None:
    if n.param("kernel_type") != 0:
        return  # the basic (4-output) kernel is not modelled
    x = n.input(0)
    n.ensure(n.rank(x) >= 2, "input is [batch, depth]")
    batch = n.dim(x, 0)
    r = n.input(8)
    n_output = n.dim(r, 0) if n.rank(r) == 1 else n.dim(r, 1)
    _lstm(n, batch, n.dim(x, 1), (batch, n_output), n.shape(x))


@kernel(B.UNIDIRECTIONAL_SEQUENCE_RNN, B.RNN)
def _rnn(n: Node) -> None:
    n.arity(5, 1)
    x, w, r, bias, hidden = (n.input(k) for k in range(5))
    seq = n.op.builtin_code == B.UNIDIRECTIONAL_SEQUENCE_RNN
    if seq:
        n.ensure(n.rank(x) == 3 and n.rank(w) == 2 and n.rank(r) == 2 and n.rank(bias) == 1, "ranks")
        time_major = n.param("time_major")
        batch, steps, depth = (n.dim(x, 1), n.dim(x, 0), n.dim(x, 2)) if time_major else n.shape(x)
    else:
        batch, depth, steps, time_major = n.dim(x, 0), n.dim(x, 1), 0, False
    units = n.dim(w, 0)
    n.ensure_eq(depth, n.dim(w, 1), "input_size", "input_weights->dims->data[1]")
    n.ensure_eq(units, n.dim(bias, 0), "input_weights->dims->data[0]", "bias->dims->data[0]")
    n.ensure(n.dim(r, 0) == units and n.dim(r, 1) == units, "recurrent_weights is [units, units]")
    n.ensure(n.type(x) == T.FLOAT32, "input->type == kTfLiteFloat32")
    n.same_type(w, r)
    n.ensure(n.rank(hidden) == 2 and n.shape(hidden) == (batch, units), "hidden_state is [batch, units]")
    out = n.output(0)
    if not seq:
        n.resize(out, (batch, units))
    else:
        n.resize(out, (steps, batch, units) if time_major else (batch, steps, units))


@kernel(B.SVDF)
def _svdf(n: Node) -> None:
    x, wf = n.input(0), n.input(1)
    rank = n.param("rank")
    n.ensure(rank != 0, "rank != 0")
    filters = n.dim(wf, 0)
    n.ensure_eq(filters % rank, 0, "num_filters % rank", "0")
    n.resize(n.output(0), (n.dim(x, 0), filters // rank))


@custom_kernel("AudioSpectrogram")
def _audio_spectrogram(n: Node) -> None:
    """The AudioSpectrogram custom op: [channels, frames, fft_size / 2 + 1] from its flexbuffer options."""
    from flatbuffers import flexbuffers  # the only custom op whose options decide a shape

    n.arity(1, 1)
    x, out = n.input(0), n.output(0)
    n.ensure_eq(n.rank(x), 2, "NumDimensions(input)", "2")
    n.ensure(n.type(out) == T.FLOAT32 and n.type(x) == T.FLOAT32, "input and output are float32")
    try:
        m = flexbuffers.GetRoot(n.op.custom_options or b"").AsMap
        window, stride = int(m["window_size"].AsInt), int(m["stride"].AsInt)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
        raise PrepareFailure(f"AudioSpectrogram options: {e}") from None
    n.ensure(window >= 2 and stride >= 1, "spectrogram->Initialize(window_size, stride)")
    fft = 1
    while fft < window:
        fft <<= 1
    frames = 0 if n.dim(x, 0) < window else 1 + (n.dim(x, 0) - window) // stride
    n.resize(out, (n.dim(x, 1), frames, fft // 2 + 1))
