"""One quant8 kernel at a time, on real layer shapes, with A/B of a module constant in the same process.

    python benchmarks/int8_layers.py [--only SUBSTRING] [--rounds 11] [--calls 3]
                                     [--ab MODULE:NAME=A,B]

Builds int8 CONV_2D / DEPTHWISE_CONV_2D operations (per-channel filters, seeded random values) at the shapes
MobileNetV2, MobileNetV3 and ResNet50 have at a 224x224 input (full-size int8 models need TensorFlow to
build; these do not) and calls the kernel through `KernelCall` with an operation cache, as the executor
does, at 1 BLAS thread on the calling thread's CPU clock: the median of `--rounds` rounds of `--calls`
calls per layer.

`--ab nnconv.runtime.kernels.conv_2d:SCALED_FILTER_MAX_K1=0,100` alternates the constant between A and B
round by round (the order flipped every round), rebuilding the operation's prepared data after each
switch, checks that both give the same bytes, and prints each layer's median times and the median of the
per-round ratios B/A ("paired"): on a shared machine, the only figure that means something. Layers the
constant does not touch are the controls of the run's noise.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from nnconv.nnapi.enums import FuseCode, OperationType  # noqa: E402
from nnconv.nnapi.enums import OperandLifeTime as L  # noqa: E402
from nnconv.nnapi.enums import OperandType as T  # noqa: E402
from nnconv.nnapi.model import Operand, Operation, SymmPerChannelQuantParams  # noqa: E402
from nnconv.runtime.kernels import KERNELS, KernelCall  # noqa: E402

# (kind, input side, input channels, output channels (conv), kernel, stride, activation)
LAYERS = [
    ("conv", 224, 3, 32, 3, 2, FuseCode.RELU6),  # MobileNetV2 stem
    ("conv", 112, 32, 16, 1, 1, FuseCode.NONE),
    ("conv", 112, 16, 96, 1, 1, FuseCode.RELU6),
    ("conv", 56, 96, 24, 1, 1, FuseCode.NONE),
    ("conv", 56, 24, 144, 1, 1, FuseCode.RELU6),
    ("conv", 56, 144, 24, 1, 1, FuseCode.NONE),
    ("conv", 28, 32, 192, 1, 1, FuseCode.RELU6),
    ("conv", 28, 192, 32, 1, 1, FuseCode.NONE),
    ("conv", 14, 64, 384, 1, 1, FuseCode.RELU6),
    ("conv", 14, 384, 64, 1, 1, FuseCode.NONE),
    ("conv", 14, 96, 576, 1, 1, FuseCode.RELU6),
    ("conv", 7, 160, 960, 1, 1, FuseCode.RELU6),
    ("conv", 7, 960, 160, 1, 1, FuseCode.NONE),
    ("conv", 56, 24, 72, 1, 1, FuseCode.RELU),  # MobileNetV3
    ("conv", 28, 40, 120, 1, 1, FuseCode.NONE),
    ("conv", 14, 112, 672, 1, 1, FuseCode.NONE),
    ("conv", 56, 64, 256, 1, 1, FuseCode.NONE),  # ResNet50
    ("conv", 56, 64, 64, 3, 1, FuseCode.RELU),
    ("conv", 28, 128, 128, 3, 1, FuseCode.RELU),
    ("conv", 40, 64, 256, 1, 1, FuseCode.NONE),  # ResNet50 at 160 (issue 28's table)
    ("conv", 40, 256, 64, 1, 1, FuseCode.RELU),
    ("conv", 20, 128, 512, 1, 1, FuseCode.NONE),
    ("conv", 10, 256, 1024, 1, 1, FuseCode.NONE),
    ("dw", 112, 32, 0, 3, 1, FuseCode.RELU6),  # MobileNetV2 depthwise
    ("dw", 112, 96, 0, 3, 2, FuseCode.RELU6),
    ("dw", 56, 144, 0, 3, 1, FuseCode.RELU6),
    ("dw", 28, 192, 0, 3, 1, FuseCode.RELU6),
    ("dw", 14, 384, 0, 3, 1, FuseCode.RELU6),
    ("dw", 7, 960, 0, 3, 1, FuseCode.RELU6),
]


def layer_name(spec: tuple) -> str:
    kind, h, c, o, k, stride, act = spec
    return f"{kind} {h}x{h}x{c}" + (f" -> {o}" if kind == "conv" else "") + f" k{k} s{stride} {FuseCode(act).name}"


def make_call(spec: tuple, rng: np.random.Generator) -> KernelCall:
    """The operation of one layer (SAME padding, int8, input zero point -128 as after a RELU)."""
    kind, h, c, o, k, stride, act = spec
    x = rng.integers(-128, 128, (1, h, h, c)).astype(np.int8)
    o = c if kind == "dw" else o
    shape = (1, k, k, o) if kind == "dw" else (o, k, k, c)
    # per-channel int8 filters: roughly normal with each channel's extreme at 127, as a quantizer makes them
    w = np.clip(np.round(rng.normal(0, 25, shape)), -127, 127).astype(np.int8)
    if kind == "dw":
        w[0, 0, 0] = 127
    else:
        w[:, 0, 0, 0] = 127
    b = rng.integers(-4000, 4000, o).astype(np.int32)
    scales = rng.uniform(0.002, 0.01, o).astype(np.float32)
    pad = k // 2
    pads = [pad, pad, pad, pad] if stride == 1 else [pad - 1 + (k % 2 == 0), pad, pad - 1 + (k % 2 == 0), pad]
    pads = [max(0, v) for v in pads]
    scalars = [*pads, stride, stride, *([1] if kind == "dw" else []), act]
    ods = [Operand(type=T.TENSOR_QUANT8_ASYMM_SIGNED, dimensions=x.shape, scale=0.05, zero_point=-128),
           Operand(type=T.TENSOR_QUANT8_SYMM_PER_CHANNEL, dimensions=w.shape, scale=0.0, zero_point=0,
                   lifetime=L.CONSTANT_COPY,
                   channel_quant=SymmPerChannelQuantParams(scales=list(scales), channel_dim=3 if kind == "dw" else 0)),
           Operand(type=T.TENSOR_INT32, dimensions=b.shape, scale=0.0, zero_point=0, lifetime=L.CONSTANT_COPY)]
    ods += [Operand(type=T.INT32, dimensions=(), lifetime=L.CONSTANT_COPY) for _ in scalars]
    arrays = [x, w, b] + [np.array(s, np.int32) for s in scalars]
    oh = (h + pads[2] + pads[3] - k) // stride + 1
    out = Operand(type=T.TENSOR_QUANT8_ASYMM_SIGNED, dimensions=(1, oh, oh, o), scale=0.1, zero_point=3)
    op = OperationType.DEPTHWISE_CONV_2D if kind == "dw" else OperationType.CONV_2D
    return KernelCall(Operation(op, list(range(len(arrays))), []), arrays, ods, [out], cache={})


def time_calls(kernel, call: KernelCall, calls: int) -> float:
    t0 = time.thread_time()
    for _ in range(calls):
        kernel(call)
    return (time.thread_time() - t0) / calls * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="layers whose name contains this")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--ab", default=None, help="MODULE:NAME=A,B (Python literals: numbers, True, None)")
    args = ap.parse_args()
    switch = None
    if args.ab is not None:
        try:
            target, values = args.ab.split("=", 1)
            module_name, attr = target.split(":")
            a, b = (ast.literal_eval(v) for v in values.split(","))
            module = importlib.import_module(module_name)
            getattr(module, attr)
        except (ValueError, ImportError, AttributeError, SyntaxError) as exc:
            print(f"--ab: expected MODULE:NAME=A,B naming an existing constant ({exc})", file=sys.stderr)
            return 2
        switch = (module, attr, a, b)
    threadpool_limits(1)
    rng = np.random.default_rng(0)
    totals = [0.0, 0.0]
    for spec in LAYERS:
        name = layer_name(spec)
        if args.only not in name:
            continue
        call = make_call(spec, rng)
        kernel = KERNELS[call.operation.type]
        if switch is None:
            kernel(call)
            ms = statistics.median(time_calls(kernel, call, args.calls) for _ in range(args.rounds))
            totals[0] += ms
            print(f"{name:38} {ms:8.3f} ms", flush=True)
            continue
        module, attr, a, b = switch

        def use(value):
            setattr(module, attr, value)
            call.cache.clear()  # the prepared data follow the constant
            return kernel(call)[0].copy()

        if not np.array_equal(use(a), use(b)):
            print(f"{name}: A and B give different bytes", file=sys.stderr)
            return 1
        times: dict[int, list[float]] = {0: [], 1: []}
        ratios = []
        for r in range(args.rounds):
            for side in ((0, 1) if r % 2 else (1, 0)):
                use((a, b)[side])
                times[side].append(time_calls(kernel, call, args.calls))
            ratios.append(times[1][-1] / times[0][-1])
        ma, mb = statistics.median(times[0]), statistics.median(times[1])
        totals[0] += ma
        totals[1] += mb
        print(f"{name:38} {ma:8.3f} -> {mb:8.3f} ms  paired {statistics.median(ratios):.3f}", flush=True)
    if switch is None:
        print(f"total {totals[0]:.2f} ms")
    else:
        print(f"total {totals[0]:.2f} -> {totals[1]:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
