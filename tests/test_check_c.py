"""The generated NDK C, run: compiled with `cc -std=c99 -pedantic -Wall -Wextra -Werror` against nnconv's
NDK header and host recorder, run on its `.nnapi` file, and compared with that file (`convert --check-c`).

Every fixture model of examples/models is converted (float, fp16 weights, dynamic range, int8 / uint8 at
API 29 and 30 with per-channel weights, the WHILE loop of gru_keras, the partial conversion of
custom_op_middle); each one's C must build exactly its file, all of them must link into one program, and
C altered on purpose must be caught with the first difference named.
"""

from __future__ import annotations

import pathlib
import re
import shutil

import pytest

import nnconv
from nnconv.errors import NnconvError
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi import serialize
from nnconv.nnapi.emit_c import c_prefix_for, write_c
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.ndk.check import CheckError, GeneratedC, NoCompilerError, check_generated_c, find_compiler
from nnconv.pipeline import convert_partial
from nnconv.targets import Target

MODELS = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models"
pytestmark = pytest.mark.skipif(shutil.which("cc") is None,
                                reason="no C compiler `cc` on PATH (the CI images and dev machines have one)")

# (fixture model, API level): every fixture at API 30, and at API 29 those that convert there (the
# quantized ones lower differently: TENSOR_QUANT8_ASYMM with re-quantized signed weights).
CASES = [(p.stem, 30) for p in sorted(MODELS.glob("*.tflite"))] + [
    (name, 29) for name in ("mobilenet_v2_float", "mobilenet_v2_fp16", "mobilenet_v2_int8", "mobilenet_v2_uint8io",
                            "mobilenet_v3_int8", "mobilenet_v3_uint8io", "mobilenet_v2_dynamic_range",
                            "efficientnet_se_float", "lstm_keras")]
PARTIAL = {"custom_op_middle"}  # has an op NNAPI lacks: converted with --allow-partial, one function per partition


def generate(name: str, level: int, directory: pathlib.Path, prefix: str | None = None) -> GeneratedC:
    """Converts a fixture as `nnconv convert [--allow-partial] --emit-c` does and returns its generated C."""
    model = MODELS / f"{name}.tflite"
    nnapi_path = directory / f"{name}_{level}.nnapi"
    if name in PARTIAL:
        plan = convert_partial(str(model), level, ConversionOptions(target=Target.NNCONV))
        serialize.save(nnapi_path, plan.converted, plan=plan.to_json())
    else:
        converted, _ = nnconv.convert(str(model), api_level=level, options=ConversionOptions(target=Target.NNCONV))
        serialize.save(nnapi_path, [converted])
    loaded = serialize.load(nnapi_path)
    prefix = prefix or f"{c_prefix_for(model)}_{level}"
    c_path = directory / f"{name}_{level}.c"
    header = write_c(c_path, loaded, nnapi_path.name, prefix)
    return GeneratedC(c_path, pathlib.Path(header), prefix, nnapi_path, loaded)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[tuple[str, int], GeneratedC]:
    d = tmp_path_factory.mktemp("check_c")
    return {(name, level): generate(name, level, d) for name, level in CASES}


def test_the_cases_cover_what_the_issue_names(generated):
    loaded = {key: g.nnapi for key, g in generated.items()}
    ops = {key: {op.type for p in f.partitions for sg in p.model.subgraphs() for op in sg.operations}
           for key, f in loaded.items()}
    assert OperationType.WHILE in ops[("gru_keras", 30)]
    assert len(loaded[("custom_op_middle", 30)].partitions) == 2
    assert any(od.channel_quant is not None for sg in loaded[("mobilenet_v2_int8", 30)].partitions[0].model.subgraphs()
               for od in sg.operands)
    assert len(CASES) == len(set(CASES)) >= 20


@pytest.mark.parametrize("name,level", CASES, ids=[f"{n}-api{lv}" for n, lv in CASES])
def test_generated_c_builds_exactly_the_file(generated, name, level):
    assert check_generated_c([generated[(name, level)]]) is None


def test_every_fixture_links_into_one_program(generated):
    # One executable with every model's C: no symbol collides, and each still builds its own file.
    models = list(generated.values())
    assert len({m.prefix for m in models}) == len(models)
    assert check_generated_c(models) is None


# Each alteration of the C and the words the first difference must contain.
ALTERATIONS = [
    pytest.param(r"(ANeuralNetworksModel_addOperation\(model, )ANEURALNETWORKS_(\w+)",
                 r"\1ANEURALNETWORKS_SUB", "operation 0 (", id="operation-type"),
    pytest.param(r"(static const uint32_t dims\[\] = \{)1u", r"\g<1>2u", "the dimensions", id="dimensions"),
    pytest.param(r"(static const uint32_t in\[\] = \{)(\d+)u", lambda m: f"{m.group(1)}{int(m.group(2)) + 1}u",
                 "the inputs", id="operation-input-index"),
    pytest.param(r"(setOperandValueFromMemory\(model, \d+, file, )(\d+)u",
                 lambda m: f"{m.group(1)}{int(m.group(2)) + 64}u",
                 "the file offset", id="weights-offset"),
    pytest.param(r"(static const uint8_t mobilenet_v2_int8_30_p0_values\[\d+\] = \{\n  0x)(\w\w)",
                 lambda m: f"{m.group(1)}{(int(m.group(2), 16) ^ 1):02x}", "value byte", id="copied-value-byte"),
    pytest.param(r"(static const float scales\[\] = \{)([^,]+)f,", r"\g<1>1.5f,", "per-channel scales",
                 id="per-channel-scale"),
    pytest.param(r"(const ANeuralNetworksOperandType type = \{ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, \d+u, "
                 r"dims, )([^,]+)f",
                 r"\g<1>0.5f", "the scale", id="operand-scale"),
    pytest.param(r"ANeuralNetworksModel_identifyInputsAndOutputs\(model, 1u, in, 1u, out\)",
                 "ANeuralNetworksModel_identifyInputsAndOutputs(model, 1u, in, 0u, out)", "output", id="model-outputs"),
]


@pytest.mark.parametrize("pattern,replacement,expected", ALTERATIONS)
def test_c_altered_on_purpose_is_caught(generated, tmp_path, pattern, replacement, expected):
    g = generated[("mobilenet_v2_int8", 30)]
    source = g.c_path.read_text()
    altered, n = re.subn(pattern, replacement, source, count=1)
    assert n == 1, f"pattern not found: {pattern}"
    c_path = tmp_path / g.c_path.name
    c_path.write_text(altered)
    header = tmp_path / g.header_path.name
    header.write_text(g.header_path.read_text())
    difference = check_generated_c([GeneratedC(c_path, header, g.prefix, g.nnapi_path, g.nnapi)])
    assert difference is not None and expected in difference, difference


def test_altered_while_reference_and_relax_flag_are_caught(generated, tmp_path):
    g = generated[("gru_keras", 30)]
    source = g.c_path.read_text()
    refs = re.findall(r"setOperandValueFromModel\(model, (\d+), models\[(\d)\]\)", source)
    assert len(refs) == 2  # WHILE's condition and body
    swapped = source.replace(f"models[{refs[0][1]}]));", "models[@]));", 1).replace(
        f"models[{refs[1][1]}]));", f"models[{refs[0][1]}]));", 1).replace("models[@]));", f"models[{refs[1][1]}]));")
    relaxed = source.replace("  return ANEURALNETWORKS_NO_ERROR;\n}\n",
                             "  NNCONV_RELAX;\n  return ANEURALNETWORKS_NO_ERROR;\n}\n", 1).replace(
        "NNCONV_RELAX", "GRU_KERAS_30_CHECK(ANeuralNetworksModel_relaxComputationFloat32toFloat16(model, true))")
    for text, expected in ((swapped, "the referenced model"), (relaxed, "relaxComputationFloat32toFloat16")):
        c_path = tmp_path / g.c_path.name
        c_path.write_text(text)
        (tmp_path / g.header_path.name).write_text(g.header_path.read_text())
        difference = check_generated_c([GeneratedC(c_path, tmp_path / g.header_path.name, g.prefix, g.nnapi_path,
                                                    g.nnapi)])
        assert difference is not None and expected in difference, difference


def test_c_that_does_not_compile_is_a_check_failure(generated, tmp_path):
    g = generated[("lstm_keras", 30)]
    c_path = tmp_path / g.c_path.name
    source = g.c_path.read_text()
    c_path.write_text(source.replace("ANeuralNetworksModel_addOperand(", "ANeuralNetworksModel_addOperands(", 1))
    (tmp_path / g.header_path.name).write_text(g.header_path.read_text())
    with pytest.raises(CheckError, match="compiling the generated C failed") as e:
        check_generated_c([GeneratedC(c_path, tmp_path / g.header_path.name, g.prefix, g.nnapi_path, g.nnapi)])
    assert e.value.exit_code == 1


def test_no_compiler_is_a_clear_usage_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(NoCompilerError, match="--check-c needs a C compiler") as e:
        find_compiler()
    assert e.value.exit_code == 2 and isinstance(e.value, NnconvError)


# -- the command line: convert --emit-c [--c-prefix P] --check-c -------------------------------------
def run_cli(args: list[str]):
    """`nnconv ARGS --target nnconv`: the generated C is nnconv's own converter's path to a phone."""
    from click.testing import CliRunner

    from nnconv.cli import main
    return CliRunner().invoke(main, [*args, "--target", "nnconv"])


def test_cli_check_c_passes_and_names_symbols_after_the_model(tmp_path):
    out, c = tmp_path / "g.nnapi", tmp_path / "g.c"
    result = run_cli(["convert", str(MODELS / "gru_keras.tflite"), "-o", str(out), "--emit-c", str(c), "--check-c"])
    assert result.exit_code == 0, result.stderr
    assert "--check-c: " in result.stderr and "builds exactly the models of" in result.stderr
    assert "int gru_keras_p0_create(" in (tmp_path / "g.h").read_text()


def test_cli_check_c_with_paths_relative_to_the_current_directory(tmp_path, monkeypatch):
    """The compiler runs in a temporary directory: relative output paths used to hide the header from it."""
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    result = run_cli(["convert", str(MODELS / "gru_keras.tflite"), "-o", "out/g.nnapi", "--emit-c", "out/g.c",
                      "--check-c"])
    assert result.exit_code == 0, result.stderr
    assert "builds exactly the models of" in result.stderr


def test_cli_check_c_partial_conversion_with_a_prefix(tmp_path):
    out, c = tmp_path / "p.nnapi", tmp_path / "p.c"
    result = run_cli(["convert", str(MODELS / "custom_op_middle.tflite"), "--allow-partial", "-o", str(out),
                      "--emit-c", str(c), "--c-prefix", "audio", "--check-c"])
    assert result.exit_code == 0, result.stderr
    header = (tmp_path / "p.h").read_text()
    assert "#define AUDIO_PARTITION_COUNT 2" in header and "int audio_p1_create(" in header


def test_cli_check_c_exits_1_with_the_first_difference(tmp_path, monkeypatch):
    from nnconv.nnapi import emit_c as emit_c_module
    real = emit_c_module.emit_c
    monkeypatch.setattr(emit_c_module, "emit_c", lambda *a, **k: real(*a, **k).replace(
        "ANeuralNetworksModel_addOperation(model, ANEURALNETWORKS_FULLY_CONNECTED,",
        "ANeuralNetworksModel_addOperation(model, ANEURALNETWORKS_ADD,", 1))
    out, c = tmp_path / "g.nnapi", tmp_path / "g.c"
    result = run_cli(["convert", str(MODELS / "gru_keras.tflite"), "-o", str(out), "--emit-c", str(c), "--check-c"])
    assert result.exit_code == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("nnconv: error: --check-c: ") and "the type: ADD in the C, FULLY_CONNECTED" in last


def test_cli_without_a_compiler_exits_2_before_writing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CC", raising=False)
    out, c = tmp_path / "g.nnapi", tmp_path / "g.c"
    result = run_cli(["convert", str(MODELS / "gru_keras.tflite"), "-o", str(out), "--emit-c", str(c), "--check-c"])
    assert result.exit_code == 2
    assert result.stderr.strip() == ("nnconv: error: --check-c needs a C compiler: none of $CC, cc, gcc, clang is "
                                     "on PATH")
    assert not out.exists() and not c.exists()


@pytest.mark.parametrize("args,message", [
    (["--check-c"], "add --emit-c OUT.c"),
    (["--c-prefix", "x"], "add --emit-c OUT.c"),
    (["--emit-c", "{d}/m.c", "--c-prefix", "has-dash"], "is not a C identifier"),
])
def test_cli_c_options_misuse_is_a_usage_error(tmp_path, args, message):
    out = tmp_path / "m.nnapi"
    result = run_cli(["convert", str(MODELS / "lstm_keras.tflite"), "-o", str(out)]
                     + [a.format(d=tmp_path) for a in args])
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output
    assert not out.exists()
