/* nnconv's host recorder: the recorded models written as JSON, their constant bytes as a blob. */
#define _POSIX_C_SOURCE 200809L

#include "json_string.h"
#include "recorder_internal.h"

#include <stdio.h>

static void write_indexes(FILE* json, uint32_t count, const uint32_t* indexes) {
  fputc('[', json);
  for (uint32_t i = 0; i < count; ++i) fprintf(json, "%s%u", i ? "," : "", indexes[i]);
  fputc(']', json);
}

/* Floats as text that reads back as the same float32 (9 significant digits). */
static void write_float(FILE* json, float value) { fprintf(json, "%.9g", (double)value); }

static const char* const value_kinds[] = {"none", "omitted", "copy", "pointer", "memory", "model"};

static void write_operand(FILE* json, FILE* blob, const RecordedOperand* operand) {
  fprintf(json, "{\"type\":%d,\"dims\":", (int)operand->type);
  write_indexes(json, operand->rank, operand->dims);
  fputs(",\"scale\":", json);
  write_float(json, operand->scale);
  fprintf(json, ",\"zero_point\":%d,\"value\":\"%s\"", (int)operand->zero_point, value_kinds[operand->kind]);
  const uint8_t* bytes = NULL;
  if (operand->kind == VALUE_COPY || operand->kind == VALUE_POINTER) bytes = operand->copy;
  if (operand->kind == VALUE_MEMORY) {
    bytes = (const uint8_t*)operand->memory->data + operand->offset;
    fprintf(json, ",\"memory\":%u,\"offset\":%lu", operand->memory->id, (unsigned long)operand->offset);
  }
  if (bytes) {
    fprintf(json, ",\"blob\":%ld,\"length\":%lu", ftell(blob), (unsigned long)operand->length);
    fwrite(bytes, 1, operand->length, blob);
  }
  if (operand->kind == VALUE_MODEL) fprintf(json, ",\"model\":%u", operand->model->id);
  if (operand->has_channel) {
    fprintf(json, ",\"channel_dim\":%u,\"scales\":[", operand->channel_dim);
    for (uint32_t c = 0; c < operand->scale_count; ++c) {
      if (c) fputc(',', json);
      write_float(json, operand->scales[c]);
    }
    fputc(']', json);
  }
  fputc('}', json);
}

static void write_model(FILE* json, FILE* blob, const ANeuralNetworksModel* model) {
  if (model == NULL) {
    fputs("null", json);
    return;
  }
  fprintf(json, "{\"id\":%u,\"finished\":%s,\"relaxed\":%s,\"operands\":[", model->id,
          model->finished ? "true" : "false", model->relaxed ? "true" : "false");
  for (uint32_t i = 0; i < model->operand_count; ++i) {
    fputs(i ? ",\n" : "\n", json);
    write_operand(json, blob, &model->operands[i]);
  }
  fputs("],\"operations\":[", json);
  for (uint32_t k = 0; k < model->operation_count; ++k) {
    const RecordedOperation* operation = &model->operations[k];
    fprintf(json, "%s{\"type\":%d,\"inputs\":", k ? ",\n" : "\n", (int)operation->type);
    write_indexes(json, operation->input_count, operation->inputs);
    fputs(",\"outputs\":", json);
    write_indexes(json, operation->output_count, operation->outputs);
    fputc('}', json);
  }
  fputs("],\"inputs\":", json);
  write_indexes(json, model->input_count, model->inputs);
  fputs(",\"outputs\":", json);
  write_indexes(json, model->output_count, model->outputs);
  fputc('}', json);
}

int nnconv_recorder_write_partition(FILE* json, FILE* blob, int status, ANeuralNetworksModel* const* models,
                                    uint32_t count) {
  fprintf(json, "{\"status\":%d,\"error\":", status);
  write_string(json, nnconv_recorder_first_error());
  fputs(",\"models\":[", json);
  for (uint32_t m = 0; status == ANEURALNETWORKS_NO_ERROR && m < count; ++m) {
    if (m) fputc(',', json);
    write_model(json, blob, models[m]);
  }
  fputs("]}", json);
  nnconv_recorder_clear_error();
  return ferror(json) || ferror(blob) ? -1 : 0;
}
