"""nnconv's NDK header and host recorder on their own: the header declares what the NDK page declares, with
the NDK's values, and each recorder call returns the result code the NNAPI runtime documents for it."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import pytest

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.ndk.check import C_FLAGS, INCLUDE_DIR, NDK_DIR, RECORDER_SOURCES

HEADER = (INCLUDE_DIR / "android" / "NeuralNetworks.h").read_text()
NDK_PAGE_SEED = pathlib.Path(__file__).resolve().parent / "data" / "seeds" / "ndk_neuralnetworks_page.txt"
needs_cc = pytest.mark.skipif(shutil.which("cc") is None,
                              reason="no C compiler `cc` on PATH (the CI images and dev machines have one)")


def test_header_has_every_operation_and_operand_code_with_the_ndk_value():
    for op in OperationType:
        assert f"  ANEURALNETWORKS_{op.name} = {int(op)},\n" in HEADER, op
    for t in OperandType:
        name = "MODEL" if t is OperandType.SUBGRAPH else t.name
        assert f"  ANEURALNETWORKS_{name} = {int(t)},\n" in HEADER, t
    assert "#define LAST_OPERATION_CODE " + str(max(OperationType)) in (NDK_DIR / "recorder_internal.h").read_text()


def test_header_declares_every_function_of_the_ndk_page():
    page = NDK_PAGE_SEED.read_text(encoding="utf-8", errors="replace")
    on_page = set(re.findall(r"^(ANeuralNetworks\w*)\(", page, flags=re.M))
    declared = set(re.findall(r"\b(ANeuralNetworks\w*)\(", HEADER))
    assert len(on_page) >= 68 and on_page <= declared, sorted(on_page - declared)


# A program calling the recorder with good and bad arguments; each line prints the call's label and result.
PROGRAM = r"""
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "recorder.h"

#define R(label, call) printf("%s %d\n", label, (call))

int main(int argc, char** argv) {
  (void)argc;
  ANeuralNetworksModel *m = NULL, *sub = NULL, *unfinished = NULL;
  ANeuralNetworksMemory* mem = NULL;
  const uint32_t d4[] = {1, 2, 2, 3}, d1[] = {3}, d0[] = {0, 2};
  const ANeuralNetworksOperandType f32 = {ANEURALNETWORKS_TENSOR_FLOAT32, 4, d4, 0.0f, 0};
  const ANeuralNetworksOperandType i32 = {ANEURALNETWORKS_INT32, 0, NULL, 0.0f, 0};
  const ANeuralNetworksOperandType q8_bad = {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, 1, d1, 0.0f, 0};
  const ANeuralNetworksOperandType q8_zp = {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, 1, d1, 0.5f, 256};
  const ANeuralNetworksOperandType scalar_dims = {ANEURALNETWORKS_INT32, 1, d1, 0.0f, 0};
  const ANeuralNetworksOperandType f32_scaled = {ANEURALNETWORKS_TENSOR_FLOAT32, 1, d1, 0.5f, 0};
  const ANeuralNetworksOperandType dims_null = {ANEURALNETWORKS_TENSOR_FLOAT32, 1, NULL, 0.0f, 0};
  const ANeuralNetworksOperandType unknown = {ANEURALNETWORKS_TENSOR_FLOAT32, 2, d0, 0.0f, 0};
  const ANeuralNetworksOperandType pc = {ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL, 1, d1, 0.0f, 0};
  const float scales[] = {0.5f, 0.25f, 0.125f}, bad_scales[] = {0.5f, 0.0f, 0.125f};
  const ANeuralNetworksSymmPerChannelQuantParams channel = {0, 3, scales}, channel_dim = {1, 3, scales},
      channel_count = {0, 2, scales}, channel_zero = {0, 3, bad_scales};
  const int32_t act = 0;
  float w[12] = {0};
  R("create_null", ANeuralNetworksModel_create(NULL));
  R("create", ANeuralNetworksModel_create(&m));
  R("add_null_type", ANeuralNetworksModel_addOperand(m, NULL));
  R("add_null_model", ANeuralNetworksModel_addOperand(NULL, &f32));
  R("add_f32", ANeuralNetworksModel_addOperand(m, &f32));                /* 0: input */
  R("add_f32_w", ANeuralNetworksModel_addOperand(m, &f32));              /* 1: weights */
  R("add_act", ANeuralNetworksModel_addOperand(m, &i32));                /* 2: activation */
  R("add_out", ANeuralNetworksModel_addOperand(m, &f32));                /* 3: output */
  R("add_unknown", ANeuralNetworksModel_addOperand(m, &unknown));        /* 4: unspecified dims */
  R("add_pc", ANeuralNetworksModel_addOperand(m, &pc));                  /* 5: per-channel */
  R("value_null_buffer", ANeuralNetworksModel_setOperandValue(m, 2, NULL, 4));
  R("value_bad_index", ANeuralNetworksModel_setOperandValue(m, 99, &act, 4));
  ANeuralNetworksModel_free(m);
  ANeuralNetworksModel_create(&m);  /* the failed call above made that model invalid */
  for (int k = 0; k < 4; ++k) ANeuralNetworksModel_addOperand(m, k == 2 ? &i32 : &f32);
  ANeuralNetworksModel_addOperand(m, &unknown);
  ANeuralNetworksModel_addOperand(m, &pc);
  R("value_wrong_length", ANeuralNetworksModel_setOperandValue(m, 2, &act, 2));
  ANeuralNetworksModel_free(m);
  ANeuralNetworksModel_create(&m);
  for (int k = 0; k < 4; ++k) ANeuralNetworksModel_addOperand(m, k == 2 ? &i32 : &f32);
  ANeuralNetworksModel_addOperand(m, &unknown);
  ANeuralNetworksModel_addOperand(m, &pc);
  R("value_unknown_dims", ANeuralNetworksModel_setOperandValue(m, 4, w, 0));
  R("after_invalid", ANeuralNetworksModel_setOperandValue(m, 2, &act, 4));
  ANeuralNetworksModel_free(m);
  ANeuralNetworksModel_create(&m);
  for (int k = 0; k < 4; ++k) ANeuralNetworksModel_addOperand(m, k == 2 ? &i32 : &f32);
  ANeuralNetworksModel_addOperand(m, &pc);
  R("value_act", ANeuralNetworksModel_setOperandValue(m, 2, &act, 4));
  R("value_large_pointer", ANeuralNetworksModel_setOperandValue(m, 1, w, sizeof w));
  R("channel_null", ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(m, 4, NULL));
  R("channel", ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(m, 4, &channel));
  R("pc_value", ANeuralNetworksModel_setOperandValue(m, 4, "abc", 3));
  {
    const uint32_t in[] = {0, 1, 2}, out[] = {3}, bad[] = {0, 1, 9}, io_in[] = {0}, io_out[] = {3}, io_const[] = {1};
    R("op_null_inputs", ANeuralNetworksModel_addOperation(m, ANEURALNETWORKS_ADD, 3, NULL, 1, out));
    R("op", ANeuralNetworksModel_addOperation(m, ANEURALNETWORKS_ADD, 3, in, 1, out));
    R("io_null", ANeuralNetworksModel_identifyInputsAndOutputs(m, 1, io_in, 0, NULL));
    R("io", ANeuralNetworksModel_identifyInputsAndOutputs(m, 1, io_in, 1, io_out));
    R("relax", ANeuralNetworksModel_relaxComputationFloat32toFloat16(m, true));
    R("finish", ANeuralNetworksModel_finish(m));
    R("finish_again", ANeuralNetworksModel_finish(m));
    R("add_after_finish", ANeuralNetworksModel_addOperand(m, &f32));
    /* Fresh models for the failures that invalidate one. */
    ANeuralNetworksModel_create(&sub);
    for (int k = 0; k < 4; ++k) ANeuralNetworksModel_addOperand(sub, k == 2 ? &i32 : &f32);
    R("op_bad_index", ANeuralNetworksModel_addOperation(sub, ANEURALNETWORKS_ADD, 3, bad, 1, out));
    ANeuralNetworksModel_free(sub);
    ANeuralNetworksModel_create(&sub);
    for (int k = 0; k < 4; ++k) ANeuralNetworksModel_addOperand(sub, k == 2 ? &i32 : &f32);
    R("op_bad_type", ANeuralNetworksModel_addOperation(sub, 106, 3, in, 1, out));
    ANeuralNetworksModel_free(sub);
    ANeuralNetworksModel_create(&sub);
    for (int k = 0; k < 4; ++k) ANeuralNetworksModel_addOperand(sub, k == 2 ? &i32 : &f32);
    ANeuralNetworksModel_setOperandValue(sub, 1, w, sizeof w);
    R("io_constant", ANeuralNetworksModel_identifyInputsAndOutputs(sub, 1, io_const, 1, io_out));
    ANeuralNetworksModel_free(sub);
    ANeuralNetworksModel_create(&sub);
    for (int k = 0; k < 4; ++k) ANeuralNetworksModel_addOperand(sub, k == 2 ? &i32 : &f32);
    ANeuralNetworksModel_setOperandValue(sub, 2, &act, 4);
    ANeuralNetworksModel_addOperation(sub, ANEURALNETWORKS_ADD, 3, in, 1, out);
    ANeuralNetworksModel_identifyInputsAndOutputs(sub, 1, io_in, 1, io_out);
    R("finish_unwritten_input", ANeuralNetworksModel_finish(sub));  /* operand 1: no value, no writer */
    ANeuralNetworksModel_free(sub);
    ANeuralNetworksModel_create(&sub);
    for (int k = 0; k < 4; ++k) ANeuralNetworksModel_addOperand(sub, k == 2 ? &i32 : &f32);
    ANeuralNetworksModel_identifyInputsAndOutputs(sub, 1, io_in, 1, io_out);
    R("finish_output_unwritten", ANeuralNetworksModel_finish(sub));
    ANeuralNetworksModel_free(sub);
  }
  R("channel_dim", (ANeuralNetworksModel_create(&sub), ANeuralNetworksModel_addOperand(sub, &pc),
                    ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(sub, 0, &channel_dim)));
  ANeuralNetworksModel_free(sub);
  R("channel_count", (ANeuralNetworksModel_create(&sub), ANeuralNetworksModel_addOperand(sub, &pc),
                      ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(sub, 0, &channel_count)));
  ANeuralNetworksModel_free(sub);
  R("channel_zero_scale", (ANeuralNetworksModel_create(&sub), ANeuralNetworksModel_addOperand(sub, &pc),
                           ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(sub, 0, &channel_zero)));
  ANeuralNetworksModel_free(sub);
  R("channel_not_pc", (ANeuralNetworksModel_create(&sub), ANeuralNetworksModel_addOperand(sub, &f32),
                       ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(sub, 0, &channel)));
  ANeuralNetworksModel_free(sub);
  {
    const ANeuralNetworksOperandType* bad_types[] = {&q8_bad, &q8_zp, &scalar_dims, &f32_scaled, &dims_null};
    const char* labels[] = {"type_q8_scale0", "type_q8_zp256", "type_scalar_dims", "type_float_scale",
                            "type_dims_null"};
    for (int k = 0; k < 5; ++k) {
      ANeuralNetworksModel_create(&sub);
      R(labels[k], ANeuralNetworksModel_addOperand(sub, bad_types[k]));
      ANeuralNetworksModel_free(sub);
    }
  }
  {
    const ANeuralNetworksOperandType model_type = {ANEURALNETWORKS_MODEL, 0, NULL, 0.0f, 0};
    ANeuralNetworksModel_create(&unfinished);
    ANeuralNetworksModel_create(&sub);
    ANeuralNetworksModel_addOperand(sub, &model_type);
    ANeuralNetworksModel_addOperand(sub, &i32);
    R("ref_null", ANeuralNetworksModel_setOperandValueFromModel(sub, 0, NULL));
    R("ref_not_model_type", ANeuralNetworksModel_setOperandValueFromModel(sub, 1, m));
    ANeuralNetworksModel_free(sub);
    ANeuralNetworksModel_create(&sub);
    ANeuralNetworksModel_addOperand(sub, &model_type);
    R("ref_unfinished", ANeuralNetworksModel_setOperandValueFromModel(sub, 0, unfinished));
    ANeuralNetworksModel_free(sub);
    ANeuralNetworksModel_create(&sub);
    ANeuralNetworksModel_addOperand(sub, &model_type);
    R("ref", ANeuralNetworksModel_setOperandValueFromModel(sub, 0, m));
    ANeuralNetworksModel_free(sub);
    ANeuralNetworksModel_free(unfinished);
  }
  {
    int fd = open(argv[1], O_RDONLY);
    R("mem_null", ANeuralNetworksMemory_createFromFd(64, PROT_READ, fd, 0, NULL));
    R("mem_bad_fd", ANeuralNetworksMemory_createFromFd(64, PROT_READ, -1, 0, &mem));
    R("mem", ANeuralNetworksMemory_createFromFd(64, PROT_READ, fd, 0, &mem));
    close(fd);
    ANeuralNetworksModel_create(&sub);
    ANeuralNetworksModel_addOperand(sub, &f32);
    R("from_memory_null", ANeuralNetworksModel_setOperandValueFromMemory(sub, 0, NULL, 0, 48));
    R("from_memory", ANeuralNetworksModel_setOperandValueFromMemory(sub, 0, mem, 16, 48));
    R("from_memory_past_end", ANeuralNetworksModel_setOperandValueFromMemory(sub, 0, mem, 32, 48));
    ANeuralNetworksModel_free(sub);
    ANeuralNetworksMemory_free(mem);
  }
  ANeuralNetworksModel_free(m);
  return 0;
}
"""

EXPECTED = {  # ResultCode: 0 NO_ERROR, 3 UNEXPECTED_NULL, 4 BAD_DATA, 6 BAD_STATE
    "create_null": 3, "create": 0, "add_null_type": 3, "add_null_model": 3, "add_f32": 0, "add_f32_w": 0,
    "add_act": 0, "add_out": 0, "add_unknown": 0, "add_pc": 0, "value_null_buffer": 3, "value_bad_index": 4,
    "value_wrong_length": 4, "value_unknown_dims": 4, "after_invalid": 6, "value_act": 0,
    "value_large_pointer": 0, "channel_null": 3, "channel": 0, "pc_value": 0, "op_null_inputs": 3, "op": 0,
    "io_null": 3, "io": 0, "relax": 0, "finish": 0, "finish_again": 6, "add_after_finish": 6,
    "op_bad_index": 4, "op_bad_type": 4, "io_constant": 4, "finish_unwritten_input": 4,
    "finish_output_unwritten": 4, "channel_dim": 4, "channel_count": 4, "channel_zero_scale": 4,
    "channel_not_pc": 4, "type_q8_scale0": 4, "type_q8_zp256": 4, "type_scalar_dims": 4, "type_float_scale": 4,
    "type_dims_null": 4, "ref_null": 3, "ref_not_model_type": 4, "ref_unfinished": 4, "ref": 0, "mem_null": 3,
    "mem_bad_fd": 4, "mem": 0, "from_memory_null": 3, "from_memory": 0, "from_memory_past_end": 4,
}


@needs_cc
def test_each_call_returns_the_documented_result_code(tmp_path):
    (tmp_path / "calls.c").write_text(PROGRAM)
    (tmp_path / "data.bin").write_bytes(bytes(range(64)))
    exe = tmp_path / "calls"
    build = subprocess.run(["cc", *C_FLAGS, f"-I{INCLUDE_DIR}", f"-I{NDK_DIR}", str(tmp_path / "calls.c"),
                            *(str(NDK_DIR / s) for s in RECORDER_SOURCES), "-o", str(exe), "-lm"],
                           capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe), str(tmp_path / "data.bin")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    got = dict((label, int(code)) for label, code in (line.split() for line in run.stdout.splitlines()))
    assert got == EXPECTED
