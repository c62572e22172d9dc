/* nnconv's host recorder: ANeuralNetworksModel_finish (the graph checks the runtime makes before a model
 * may be compiled) and the file-backed memory of ANeuralNetworksMemory_createFromFd. */
#define _POSIX_C_SOURCE 200809L

#include "recorder_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static uint32_t next_memory_id = 1;

uint32_t nnconv_recorder_memory_id(const ANeuralNetworksMemory* memory) { return memory ? memory->id : 0u; }

/* The graph checks of finish: operands written once, by operations only, read after some operation
 * writes them, in an order without cycles (the runtime sorts the operations into run order). */
static int check_graph(ANeuralNetworksModel* model) {
  RecordedOperand* operands = model->operands;
  for (uint32_t k = 0; k < model->operation_count; ++k) {
    const RecordedOperation* operation = &model->operations[k];
    for (uint32_t o = 0; o < operation->output_count; ++o) {
      RecordedOperand* out = &operands[operation->outputs[o]];
      if (out->role == ROLE_INPUT || out->kind != VALUE_NONE || out->written)
        return nnconv_recorder_fail(ANEURALNETWORKS_BAD_DATA,
                                    "finish: operation %u writes operand %u, which is an input, a "
                                    "constant or written twice", k, operation->outputs[o]);
      out->written = true;
    }
  }
  for (uint32_t i = 0; i < model->operand_count; ++i) {
    const RecordedOperand* operand = &operands[i];
    if (operand->role == ROLE_OUTPUT && !operand->written)
      return nnconv_recorder_fail(ANEURALNETWORKS_BAD_DATA, "finish: model output %u is written by no operation", i);
    if (operand->type == ANEURALNETWORKS_MODEL && operand->kind != VALUE_MODEL)
      return nnconv_recorder_fail(ANEURALNETWORKS_BAD_DATA, "finish: MODEL operand %u has no model set", i);
    if (operand->type == ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL && !operand->has_channel)
      return nnconv_recorder_fail(ANEURALNETWORKS_BAD_DATA,
                                  "finish: per-channel operand %u has no channel parameters", i);
  }
  /* Run order: repeatedly take an operation whose inputs are all available. */
  bool* available = calloc(model->operand_count ? model->operand_count : 1, sizeof *available);
  bool* done = calloc(model->operation_count ? model->operation_count : 1, sizeof *done);
  if (available == NULL || done == NULL) {
    free(available);
    free(done);
    return nnconv_recorder_fail(ANEURALNETWORKS_OUT_OF_MEMORY, "finish: out of memory");
  }
  for (uint32_t i = 0; i < model->operand_count; ++i) available[i] = !operands[i].written;
  uint32_t remaining = model->operation_count;
  bool progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (uint32_t k = 0; k < model->operation_count; ++k) {
      const RecordedOperation* operation = &model->operations[k];
      bool ready = !done[k];
      for (uint32_t i = 0; ready && i < operation->input_count; ++i) ready = available[operation->inputs[i]];
      if (!ready) continue;
      for (uint32_t o = 0; o < operation->output_count; ++o) available[operation->outputs[o]] = true;
      done[k] = true;
      --remaining;
      progress = true;
    }
  }
  /* An operand that is read must have a value, a writer, or be a model input. */
  uint32_t missing = model->operand_count;
  for (uint32_t k = 0; k < model->operation_count && missing == model->operand_count; ++k)
    for (uint32_t i = 0; i < model->operations[k].input_count; ++i) {
      const uint32_t in = model->operations[k].inputs[i];
      const RecordedOperand* operand = &operands[in];
      if ((!done[k] && !available[in]) ||
          (operand->role == ROLE_TEMPORARY && operand->kind == VALUE_NONE && !operand->written))
        missing = in;
    }
  free(available);
  free(done);
  if (remaining > 0 || missing < model->operand_count)
    return nnconv_recorder_fail(ANEURALNETWORKS_BAD_DATA,
                                "finish: operand %u is read but has no value and no writer, or the "
                                "operations form a cycle", missing);
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksModel_finish(ANeuralNetworksModel* model) {
  int status = nnconv_recorder_check_mutable(model, "ANeuralNetworksModel_finish");
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  status = check_graph(model);
  if (status != ANEURALNETWORKS_NO_ERROR) {
    model->invalid = true;
    return status;
  }
  /* Values passed by pointer are read now: after finish the caller's buffer is the runtime's to read. */
  for (uint32_t i = 0; i < model->operand_count; ++i) {
    RecordedOperand* operand = &model->operands[i];
    if (operand->kind != VALUE_POINTER) continue;
    operand->copy = malloc(operand->length);
    if (operand->copy == NULL) return nnconv_recorder_fail(ANEURALNETWORKS_OUT_OF_MEMORY, "finish: out of memory");
    memcpy(operand->copy, operand->pointer, operand->length);
  }
  model->finished = true;
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksMemory_createFromFd(size_t size, int protect, int fd, size_t offset,
                                       ANeuralNetworksMemory** memory) {
  if (memory == NULL) return nnconv_recorder_fail(ANEURALNETWORKS_UNEXPECTED_NULL,
                                                  "ANeuralNetworksMemory_createFromFd: memory is NULL");
  *memory = NULL;
  if (size == 0 || fd < 0 || (protect & ~(PROT_READ | PROT_WRITE)) != 0)
    return nnconv_recorder_fail(ANEURALNETWORKS_BAD_DATA,
                                "ANeuralNetworksMemory_createFromFd: invalid size, fd or protect");
  void* data = mmap(NULL, size, protect, MAP_SHARED, fd, (off_t)offset);
  if (data == MAP_FAILED)
    return nnconv_recorder_fail(ANEURALNETWORKS_BAD_DATA, "ANeuralNetworksMemory_createFromFd: cannot map the file");
  ANeuralNetworksMemory* created = malloc(sizeof *created);
  if (created == NULL) {
    munmap(data, size);
    return nnconv_recorder_fail(ANEURALNETWORKS_OUT_OF_MEMORY, "ANeuralNetworksMemory_createFromFd: out of memory");
  }
  created->id = next_memory_id++;
  created->data = data;
  created->size = size;
  *memory = created;
  return ANEURALNETWORKS_NO_ERROR;
}

void ANeuralNetworksMemory_free(ANeuralNetworksMemory* memory) {
  if (memory == NULL) return;
  munmap(memory->data, memory->size);
  free(memory);
}
