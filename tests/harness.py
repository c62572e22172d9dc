"""Parity harness for lowering tests: build a model with our builder, lower it, run our executor and the
TFLite interpreter on seeded inputs, and compare with the tolerance policy of nnconv.parity."""

from __future__ import annotations

from dataclasses import replace

from typing import Callable, Sequence

import numpy as np

import nnconv
from nnconv.errors import ConversionError
from nnconv.lowering.convert import ConversionOptions, rule_for
from nnconv.targets import Target
from nnconv.lowering.diagnostics import Code
from nnconv.nnapi.levels import feature_level
from nnconv.tflite.ir import DimensionMetadata, Sparsity
from nnconv.nnapi.operations import operation_level
from nnconv.nnapi.program import ConvertedModel
from nnconv.parity import random_inputs, run_parity
from nnconv.parity.tflite_runner import BUILTIN_KERNELS
from nnconv.tflite.builder import QuantParams, TfliteBuilder
from nnconv.tflite.ir import TfliteModel

__all__ = ["QuantParams", "StepClock", "TfliteBuilder", "assert_bit_exact", "assert_parity", "assert_refused",
           "assert_same_bits", "keras_flatten", "single_op_model", "step_names"]


class StepClock:
    """A clock for `ExecutionOptions.clock` that advances `step` seconds at each reading, whatever the wall
    clock does: a WHILE loop then times out after a fixed number of iterations (the kernel reads the clock
    once per iteration), never because the machine was loaded."""

    def __init__(self, step: float = 1e-6) -> None:
        self.now = 0.0
        self.step = step
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        self.now += self.step
        return self.now


def keras_flatten(b, x: int, shape: Sequence[int], dtype, quant: QuantParams | None = None,
                  batch_signature: bool = False) -> int:
    """Keras' Flatten as TensorFlow writes it: RESHAPE(x, PACK(SHAPE(x)[0], -1)); returns the [batch, rest]
    output. `batch_signature`: the batch left open (-1 in the output's shape_signature), as Keras exports it."""
    from nnconv.tflite.options import PackOptions, ReshapeOptions, ShapeOptions, StridedSliceOptions
    from nnconv.tflite.schema_enums import BuiltinOperator as B
    i32 = np.int32
    s = b.tensor("s", (len(shape),), i32)
    b.op(B.SHAPE, [x], [s], ShapeOptions(out_type=2))
    n = b.tensor("n", (), i32)
    b.op(B.STRIDED_SLICE, [s, b.const("b0", np.array([0], i32)), b.const("e0", np.array([1], i32)),
                           b.const("s0", np.array([1], i32))], [n], StridedSliceOptions(shrink_axis_mask=1))
    packed = b.tensor("packed", (2,), i32)
    b.op(B.PACK, [n, b.const("minus1", np.array(-1, i32))], [packed], PackOptions(values_count=2, axis=0))
    flat = (shape[0], int(np.prod(shape[1:])))
    y = b.tensor("flat", flat, dtype, quant=quant, shape_signature=(-1, flat[1]) if batch_signature else None)
    b.op(B.RESHAPE, [x, packed], [y], ReshapeOptions())
    return y


def single_op_model(opcode, inputs: Sequence[tuple], outputs: Sequence[tuple], options=None, version: int = 1,
                    custom_code: str | None = None) -> bytes:
    """A one-op model. Each input is ("name", shape, dtype[, quant]) for a model input, or
    ("name", ndarray[, quant]) for a constant, or None for an omitted optional input; outputs are
    ("name", shape, dtype[, quant])."""
    b = TfliteBuilder()
    ins = []
    for spec in inputs:
        if spec is None:
            ins.append(-1)
        elif isinstance(spec[1], np.ndarray):
            ins.append(b.const(spec[0], spec[1], quant=spec[2] if len(spec) > 2 else None))
        else:
            ins.append(b.input(spec[0], spec[1], spec[2], quant=spec[3] if len(spec) > 3 else None))
    outs = [b.tensor(s[0], s[1], s[2], quant=s[3] if len(s) > 3 else None) for s in outputs]
    b.op(opcode, ins, outs, options, version=version, custom_code=custom_code)
    b.output(*outs)
    return b.finish()


def nnconv_options(options: ConversionOptions | None = None) -> ConversionOptions:
    """`options` for nnconv's own converter: the lowering rules this harness tests are that target's (the
    default target is TFLite's NNAPI delegate, tested against its recordings in tests/delegate)."""
    return replace(options or ConversionOptions(), target=Target.NNCONV)


def assert_parity(model: bytes, api_level: int = 30, seed: int = 0, options: ConversionOptions | None = None,
                  inputs: dict | None = None, kernels: str = BUILTIN_KERNELS,
                  expect_ops: Sequence[str] | None = None,
                  input_fn: Callable[[dict], dict] | None = None) -> nnconv.ConversionResult:
    """Converts at `api_level`, runs both engines and fails on any output outside tolerance.
    `expect_ops` (optional) is the exact list of NNAPI operation names the lowering must emit."""
    options = nnconv_options(options)
    result = nnconv.convert(model, api_level=api_level, options=options)
    converted = result.converted
    assert_emits_what_rules_declare(model, converted, api_level, options)
    if expect_ops is not None:
        emitted = [op.type.name for op in converted.model.main.operations]
        assert emitted == list(expect_ops), f"emitted {emitted}, expected {list(expect_ops)}"
    feed = inputs if inputs is not None else random_inputs(converted.inputs, seed)
    if input_fn is not None:
        feed = input_fn(feed)
    report = run_parity(model, converted, feed, kernels=kernels)
    bad = [o for o in report.outputs if not o.passed]
    assert not bad, "parity failed: " + "; ".join(
        f"{o.name}: max|diff|={o.max_abs:.3g} rel={o.max_rel:.3g} lsb={o.max_lsb} {o.detail}" for o in bad)
    return result


def undeclared_emissions(tflite: TfliteModel, converted: ConvertedModel, api_level: int) -> list[str]:
    """The NNAPI operations of `converted`'s main subgraph that the rule of their TFLite op does not declare
    in `nnapi_ops`, or that the NNAPI spec introduced after `api_level`'s feature level."""
    sg = tflite.subgraphs[converted.subgraph]
    problems = []
    for op in converted.model.main.operations:
        if op.source_op is None:
            continue
        source = sg.operators[op.source_op]
        rule = rule_for(source)
        if rule is None or op.type not in rule.nnapi_ops:
            problems.append(f"{source.name} (op #{source.index}) emitted {op.type.name}, which "
                            f"{type(rule).__name__ if rule else 'no rule'}.nnapi_ops does not declare")
        if operation_level(op.type) > feature_level(api_level):
            problems.append(f"{source.name} (op #{source.index}) emitted {op.type.name} (feature level "
                            f"{operation_level(op.type)}) at API {api_level}")
    return problems


def assert_emits_what_rules_declare(model: bytes, converted: ConvertedModel, api_level: int,
                                    options: ConversionOptions | None = None) -> None:
    # the model the rules lowered: after the rewrite stage, whose rewritten operators keep their index
    lowered = nnconv.prepare(model, api_level, nnconv_options(options)).state.model
    problems = undeclared_emissions(lowered, converted, api_level)
    assert not problems, "; ".join(problems)


def assert_refused(model: bytes, api_level: int, code: Code, min_api_level: int | None = "any",
                   options: ConversionOptions | None = None) -> list:
    """Asserts the conversion is refused with diagnostic `code` (and, if given, that lowest API level)."""
    try:
        nnconv.convert(model, api_level=api_level, options=nnconv_options(options))
    except ConversionError as e:
        codes = [d.code for d in e.diagnostics]
        assert code in codes, f"expected {code.value}, got {[c.value for c in codes]}: " + \
            "; ".join(d.message for d in e.diagnostics)
        if min_api_level != "any":
            report = e.report  # type: ignore[attr-defined]
            levels = {r.min_api_level for r in report.ops if not r.supported}
            assert min_api_level in levels, f"lowest accepting level {levels}, expected {min_api_level}"
        return e.diagnostics
    raise AssertionError(f"conversion at API {api_level} was accepted; expected refusal {code.value}")


def assert_bit_exact(model: bytes, api_level: int, inputs: dict) -> None:
    """The lowered graph reproduces TFLite's outputs bit for bit (for lowerings documented as exact, which the
    tolerance of `assert_parity` could not tell from merely close)."""
    from nnconv.runtime.executor import Executor
    from nnconv.parity.tflite_runner import TfliteRunner
    ours = Executor(nnconv.convert(model, api_level=api_level, options=nnconv_options()).converted).run(inputs)
    runner = TfliteRunner(model)
    by_name = {d["name"]: d["index"] for d in runner.input_details()}
    theirs = runner.run({by_name[k]: v for k, v in inputs.items()})
    for (name, a), b in zip(ours.items(), theirs.values()):
        assert np.array_equal(a, b), f"{name}: not bit-exact"


def step_names(executor, feed) -> list[str]:
    """The names the executor's profile hook reports for one run: an operation's type, or a fused step's
    name (`LOGISTIC+MUL`, `ADD+PRELU`, ...)."""
    names: list[str] = []
    executor.runner.profile = lambda index, name, seconds: names.append(name)
    executor.run(feed)
    executor.runner.profile = None
    return names


def assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Float arrays equal bit for bit up to NaN payloads: NaN in the same places, the same signs of zero."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))
    np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


def filter_csr(dense: np.ndarray) -> tuple[np.ndarray, Sparsity]:
    """A 4-D filter [O, KH, KW, C] sparse along C: levels O, KH, KW dense and C as CSR."""
    o, kh, kw, ch = dense.shape
    flat = dense.reshape(-1, ch)
    rows, cols = np.nonzero(flat)
    segs = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=flat.shape[0]))])
    sp = Sparsity(traversal_order=(0, 1, 2, 3), block_map=(),
                  dim_metadata=(DimensionMetadata(0, o), DimensionMetadata(0, kh), DimensionMetadata(0, kw),
                                DimensionMetadata(1, 0, tuple(int(s) for s in segs), tuple(int(c) for c in cols))))
    return flat[rows, cols], sp
