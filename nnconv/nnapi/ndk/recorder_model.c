/* nnconv's host recorder (see recorder.h): the NDK model-building functions, validated and recorded.
 *
 * Result codes follow the NNAPI runtime (frameworks/ml nn/runtime NeuralNetworks.cpp and ModelBuilder):
 * a NULL argument is ANEURALNETWORKS_UNEXPECTED_NULL, a call on a finished model is BAD_STATE, an invalid
 * operand type, index, length or graph is BAD_DATA, and after a failed call the model is invalid: every
 * later call on it, finish included, is BAD_STATE. Operation signatures are not checked here (nnconv's
 * validator checks them before it writes the `.nnapi` file); the graph structure is, at finish.
 */
#define _POSIX_C_SOURCE 200809L

#include "recorder_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t next_model_id = 1;
static char first_error[512];

int nnconv_recorder_fail(int code, const char* format, ...) {
  if (first_error[0] == '\0') {
    va_list args;
    va_start(args, format);
    vsnprintf(first_error, sizeof first_error, format, args);
    va_end(args);
  }
  return code;
}

/* A failure that makes the model invalid, as ModelBuilder does after any failed mutation. */
static int invalidate(ANeuralNetworksModel* model, int code, const char* message, uint32_t index) {
  model->invalid = true;
  return nnconv_recorder_fail(code, message, index);
}

const char* nnconv_recorder_first_error(void) { return first_error; }

void nnconv_recorder_clear_error(void) { first_error[0] = '\0'; }

static bool is_scalar_type(int32_t type) {
  return type == ANEURALNETWORKS_FLOAT32 || type == ANEURALNETWORKS_INT32 || type == ANEURALNETWORKS_UINT32 ||
         type == ANEURALNETWORKS_BOOL || type == ANEURALNETWORKS_FLOAT16 || type == ANEURALNETWORKS_MODEL;
}

/* Bytes of one element (ANEURALNETWORKS_MODEL has no data size: its value is a model). */
static size_t element_size(int32_t type) {
  switch (type) {
    case ANEURALNETWORKS_FLOAT32:
    case ANEURALNETWORKS_INT32:
    case ANEURALNETWORKS_UINT32:
    case ANEURALNETWORKS_TENSOR_FLOAT32:
    case ANEURALNETWORKS_TENSOR_INT32:
      return 4;
    case ANEURALNETWORKS_TENSOR_QUANT16_SYMM:
    case ANEURALNETWORKS_TENSOR_FLOAT16:
    case ANEURALNETWORKS_FLOAT16:
    case ANEURALNETWORKS_TENSOR_QUANT16_ASYMM:
      return 2;
    case ANEURALNETWORKS_MODEL:
      return 0;
    default:
      return 1;
  }
}

/* Bytes of the operand's value, or 0 when a dimension is unspecified. */
static size_t operand_size(const RecordedOperand* operand) {
  size_t size = element_size(operand->type);
  for (uint32_t d = 0; d < operand->rank; ++d) size *= operand->dims[d];
  return size;
}

/* ANeuralNetworksOperandType validation (the runtime's validateOperandType, partial dimensions allowed). */
static const char* operand_type_error(const ANeuralNetworksOperandType* type) {
  if ((type->dimensionCount == 0) != (type->dimensions == NULL))
    return "dimensions must be NULL exactly when dimensionCount is 0";
  if (type->type < ANEURALNETWORKS_FLOAT32 || type->type > ANEURALNETWORKS_MODEL) return "unknown operand type";
  if (is_scalar_type(type->type)) {
    if (type->dimensionCount != 0) return "a scalar type must have dimensionCount 0";
    if (type->scale != 0.0f || type->zeroPoint != 0) return "a scalar type must have scale 0 and zeroPoint 0";
    return NULL;
  }
  const bool positive_scale = type->scale > 0.0f && isfinite(type->scale);
  switch (type->type) {
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      if (!positive_scale || type->zeroPoint < 0 || type->zeroPoint > 255)
        return "TENSOR_QUANT8_ASYMM needs scale > 0 and zeroPoint in [0, 255]";
      break;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      if (!positive_scale || type->zeroPoint < -128 || type->zeroPoint > 127)
        return "TENSOR_QUANT8_ASYMM_SIGNED needs scale > 0 and zeroPoint in [-128, 127]";
      break;
    case ANEURALNETWORKS_TENSOR_QUANT16_ASYMM:
      if (!positive_scale || type->zeroPoint < 0 || type->zeroPoint > 65535)
        return "TENSOR_QUANT16_ASYMM needs scale > 0 and zeroPoint in [0, 65535]";
      break;
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM:
    case ANEURALNETWORKS_TENSOR_QUANT16_SYMM:
      if (!positive_scale || type->zeroPoint != 0) return "a symmetric quantized type needs scale > 0 and zeroPoint 0";
      break;
    case ANEURALNETWORKS_TENSOR_INT32:
      break; /* the runtime lets TENSOR_INT32 carry quantization parameters (biases of quantized operations) */
    default:   /* float, bool and per-channel tensors: per-channel scales come from their own call */
      if (type->scale != 0.0f || type->zeroPoint != 0) return "this tensor type must have scale 0 and zeroPoint 0";
  }
  uint64_t size = element_size(type->type);
  for (uint32_t d = 0; d < type->dimensionCount; ++d) {
    if (type->dimensions[d] != 0) size *= type->dimensions[d];
    if (size > UINT32_MAX) return "the operand's byte size exceeds 2^32 - 1";
  }
  return NULL;
}

static void* grow(void* array, uint32_t* capacity, uint32_t needed, size_t item) {
  if (needed <= *capacity) return array;
  uint32_t wanted = *capacity ? *capacity * 2 : 16;
  while (wanted < needed) wanted *= 2;
  void* bigger = realloc(array, (size_t)wanted * item);
  if (bigger) *capacity = wanted;
  return bigger;
}

static uint32_t* copy_indexes(uint32_t count, const uint32_t* indexes) {
  uint32_t* copy = malloc((count ? count : 1) * sizeof *copy);
  if (copy && count) memcpy(copy, indexes, count * sizeof *copy);
  return copy;
}


int nnconv_recorder_check_mutable(ANeuralNetworksModel* model, const char* call) {
  if (model == NULL) return nnconv_recorder_fail(ANEURALNETWORKS_UNEXPECTED_NULL, "%s: model is NULL", call);
  if (model->finished) return nnconv_recorder_fail(ANEURALNETWORKS_BAD_STATE,
                                                   "%s: the model is already finished", call);
  if (model->invalid) return nnconv_recorder_fail(ANEURALNETWORKS_BAD_STATE,
                                                  "%s: the model is invalid (an earlier call failed)", call);
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksModel_create(ANeuralNetworksModel** model) {
  if (model == NULL) return nnconv_recorder_fail(ANEURALNETWORKS_UNEXPECTED_NULL,
                                                 "ANeuralNetworksModel_create: model is NULL");
  *model = calloc(1, sizeof **model);
  if (*model == NULL) return nnconv_recorder_fail(ANEURALNETWORKS_OUT_OF_MEMORY,
                                                  "ANeuralNetworksModel_create: out of memory");
  (*model)->id = next_model_id++;
  return ANEURALNETWORKS_NO_ERROR;
}

void ANeuralNetworksModel_free(ANeuralNetworksModel* model) {
  if (model == NULL) return;
  for (uint32_t i = 0; i < model->operand_count; ++i) {
    free(model->operands[i].dims);
    free(model->operands[i].copy);
    free(model->operands[i].scales);
  }
  for (uint32_t i = 0; i < model->operation_count; ++i) {
    free(model->operations[i].inputs);
    free(model->operations[i].outputs);
  }
  free(model->operands);
  free(model->operations);
  free(model->inputs);
  free(model->outputs);
  free(model);
}

int ANeuralNetworksModel_addOperand(ANeuralNetworksModel* model, const ANeuralNetworksOperandType* type) {
  int status = nnconv_recorder_check_mutable(model, "ANeuralNetworksModel_addOperand");
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  const uint32_t index = model->operand_count;
  if (type == NULL) return nnconv_recorder_fail(ANEURALNETWORKS_UNEXPECTED_NULL,
                                                "ANeuralNetworksModel_addOperand(%u): type is NULL", index);
  const char* error = operand_type_error(type);
  if (error) {
    model->invalid = true;
    return nnconv_recorder_fail(ANEURALNETWORKS_BAD_DATA, "ANeuralNetworksModel_addOperand(%u): %s", index, error);
  }
  RecordedOperand* operands = grow(model->operands, &model->operand_capacity, index + 1, sizeof *operands);
  uint32_t* dims = copy_indexes(type->dimensionCount, type->dimensions);
  if (operands == NULL || dims == NULL) {
    free(dims);
    return nnconv_recorder_fail(ANEURALNETWORKS_OUT_OF_MEMORY,
                                "ANeuralNetworksModel_addOperand(%u): out of memory", index);
  }
  model->operands = operands;
  RecordedOperand* operand = &operands[index];
  memset(operand, 0, sizeof *operand);
  operand->type = type->type;
  operand->rank = type->dimensionCount;
  operand->dims = dims;
  operand->scale = type->scale;
  operand->zero_point = type->zeroPoint;
  model->operand_count = index + 1;
  return ANEURALNETWORKS_NO_ERROR;
}

/* The operand a value is being set on, after the checks shared by the setOperandValue* calls:
   `null_argument` names the call's pointer argument when it is NULL where the call needs one (UNEXPECTED_NULL,
   before the model is looked at), else is NULL; then a mutable model, a valid index and an operand the model
   computes. */
static int value_target(ANeuralNetworksModel* model, int32_t index, const char* call, const char* null_argument,
                        RecordedOperand** operand) {
  if (null_argument != NULL)
    return nnconv_recorder_fail(ANEURALNETWORKS_UNEXPECTED_NULL, "%s(%d): %s is NULL", call, index, null_argument);
  int status = nnconv_recorder_check_mutable(model, call);
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  if (index < 0 || (uint32_t)index >= model->operand_count)
    return invalidate(model, ANEURALNETWORKS_BAD_DATA, "set value: invalid operand index %u", (uint32_t)index);
  *operand = &model->operands[index];
  if ((*operand)->role != ROLE_TEMPORARY)
    return invalidate(model, ANEURALNETWORKS_BAD_DATA, "set value: operand %u is a model input or output",
                      (uint32_t)index);
  return ANEURALNETWORKS_NO_ERROR;
}

/* The operand's byte size must be known and equal `length` for a constant value. */
static int check_value_length(ANeuralNetworksModel* model, int32_t index, const RecordedOperand* operand,
                              size_t length) {
  if (!is_scalar_type(operand->type)) {
    for (uint32_t d = 0; d < operand->rank; ++d)
      if (operand->dims[d] == 0)
        return invalidate(model, ANEURALNETWORKS_BAD_DATA, "set value: operand %u has unspecified dimensions",
                          (uint32_t)index);
    if (operand->rank == 0)
      return invalidate(model, ANEURALNETWORKS_BAD_DATA, "set value: operand %u has unspecified rank",
                        (uint32_t)index);
  }
  if (operand_size(operand) != length)
    return invalidate(model, ANEURALNETWORKS_BAD_DATA, "set value: length differs from operand %u's byte size",
                      (uint32_t)index);
  return ANEURALNETWORKS_NO_ERROR;
}

/* Drops the value a set-value call replaces (a later call wins, as in the runtime) and records the kind of
   the new one: VALUE_NONE while a copy is still to be made. */
static void replace_value(RecordedOperand* operand, ValueKind kind) {
  free(operand->copy);
  operand->copy = NULL;
  operand->pointer = NULL;
  operand->memory = NULL;
  operand->model = NULL;
  operand->kind = kind;
}

int ANeuralNetworksModel_setOperandValue(ANeuralNetworksModel* model, int32_t index, const void* buffer,
                                         size_t length) {
  RecordedOperand* operand = NULL;
  int status = value_target(model, index, "ANeuralNetworksModel_setOperandValue",
                            buffer == NULL && length != 0 ? "buffer" : NULL, &operand);
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  if (buffer == NULL) { /* an omitted optional operand (lifetime NO_VALUE) */
    replace_value(operand, VALUE_OMITTED);
    return ANEURALNETWORKS_NO_ERROR;
  }
  if (operand->type == ANEURALNETWORKS_MODEL)
    return invalidate(model, ANEURALNETWORKS_BAD_DATA,
                      "ANeuralNetworksModel_setOperandValue: operand %u is a model reference", (uint32_t)index);
  status = check_value_length(model, index, operand, length);
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  replace_value(operand, VALUE_NONE);
  operand->length = length;
  if (length <= ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES) {
    operand->copy = malloc(length ? length : 1);
    if (operand->copy == NULL) return nnconv_recorder_fail(ANEURALNETWORKS_OUT_OF_MEMORY,
                                                           "setOperandValue: out of memory");
    memcpy(operand->copy, buffer, length);
    operand->kind = VALUE_COPY;
  } else { /* the runtime keeps a pointer to larger values: the buffer must outlive the model */
    operand->pointer = buffer;
    operand->kind = VALUE_POINTER;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksModel_setOperandValueFromMemory(ANeuralNetworksModel* model, int32_t index,
                                                   const ANeuralNetworksMemory* memory, size_t offset,
                                                   size_t length) {
  RecordedOperand* operand = NULL;
  int status = value_target(model, index, "ANeuralNetworksModel_setOperandValueFromMemory",
                            memory == NULL ? "memory" : NULL, &operand);
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  status = check_value_length(model, index, operand, length);
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  if (offset > memory->size || length > memory->size - offset)
    return invalidate(model, ANEURALNETWORKS_BAD_DATA,
                      "ANeuralNetworksModel_setOperandValueFromMemory(%u): offset + length exceeds the memory",
                      (uint32_t)index);
  replace_value(operand, VALUE_MEMORY);
  operand->memory = memory;
  operand->offset = offset;
  operand->length = length;
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksModel_setOperandValueFromModel(ANeuralNetworksModel* model, int32_t index,
                                                  const ANeuralNetworksModel* value) {
  RecordedOperand* operand = NULL;
  int status = value_target(model, index, "ANeuralNetworksModel_setOperandValueFromModel",
                            value == NULL ? "value" : NULL, &operand);
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  if (operand->type != ANEURALNETWORKS_MODEL)
    return invalidate(model, ANEURALNETWORKS_BAD_DATA,
                      "ANeuralNetworksModel_setOperandValueFromModel: operand %u is not of type MODEL",
                      (uint32_t)index);
  if (!value->finished)
    return invalidate(model, ANEURALNETWORKS_BAD_DATA,
                      "ANeuralNetworksModel_setOperandValueFromModel(%u): the referenced model is not finished",
                      (uint32_t)index);
  replace_value(operand, VALUE_MODEL);
  operand->model = value;
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(
    ANeuralNetworksModel* model, int32_t index, const ANeuralNetworksSymmPerChannelQuantParams* channelQuant) {
  int status = nnconv_recorder_check_mutable(model, "ANeuralNetworksModel_setOperandSymmPerChannelQuantParams");
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  if (channelQuant == NULL)
    return nnconv_recorder_fail(ANEURALNETWORKS_UNEXPECTED_NULL,
                                "setOperandSymmPerChannelQuantParams(%d): channelQuant is NULL", index);
  if (index < 0 || (uint32_t)index >= model->operand_count)
    return invalidate(model, ANEURALNETWORKS_BAD_DATA, "setOperandSymmPerChannelQuantParams: invalid operand index %u",
                      (uint32_t)index);
  RecordedOperand* operand = &model->operands[index];
  if (operand->type != ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL)
    return invalidate(model, ANEURALNETWORKS_BAD_DATA,
                      "setOperandSymmPerChannelQuantParams: operand %u is not TENSOR_QUANT8_SYMM_PER_CHANNEL",
                      (uint32_t)index);
  if (channelQuant->channelDim >= operand->rank || operand->dims[channelQuant->channelDim] == 0 ||
      channelQuant->scaleCount != operand->dims[channelQuant->channelDim])
    return invalidate(model, ANEURALNETWORKS_BAD_DATA,
                      "setOperandSymmPerChannelQuantParams(%u): channelDim or scaleCount does not match the dimensions",
                      (uint32_t)index);
  if (channelQuant->scales == NULL)
    return nnconv_recorder_fail(ANEURALNETWORKS_UNEXPECTED_NULL,
                                "setOperandSymmPerChannelQuantParams(%d): scales is NULL", index);
  for (uint32_t c = 0; c < channelQuant->scaleCount; ++c)
    if (!(channelQuant->scales[c] > 0.0f) || !isfinite(channelQuant->scales[c]))
      return invalidate(model, ANEURALNETWORKS_BAD_DATA, "setOperandSymmPerChannelQuantParams(%u): a scale is not > 0",
                        (uint32_t)index);
  float* scales = malloc(channelQuant->scaleCount * sizeof *scales);
  if (scales == NULL) return nnconv_recorder_fail(ANEURALNETWORKS_OUT_OF_MEMORY,
                                                  "setOperandSymmPerChannelQuantParams: out of memory");
  memcpy(scales, channelQuant->scales, channelQuant->scaleCount * sizeof *scales);
  free(operand->scales);
  operand->scales = scales;
  operand->has_channel = true;
  operand->channel_dim = channelQuant->channelDim;
  operand->scale_count = channelQuant->scaleCount;
  return ANEURALNETWORKS_NO_ERROR;
}

static bool indexes_valid(const ANeuralNetworksModel* model, uint32_t count, const uint32_t* indexes) {
  for (uint32_t i = 0; i < count; ++i)
    if (indexes[i] >= model->operand_count) return false;
  return true;
}

int ANeuralNetworksModel_addOperation(ANeuralNetworksModel* model, ANeuralNetworksOperationType type,
                                      uint32_t inputCount, const uint32_t* inputs, uint32_t outputCount,
                                      const uint32_t* outputs) {
  int status = nnconv_recorder_check_mutable(model, "ANeuralNetworksModel_addOperation");
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  const uint32_t index = model->operation_count;
  if (inputs == NULL || outputs == NULL)
    return nnconv_recorder_fail(ANEURALNETWORKS_UNEXPECTED_NULL,
                                "ANeuralNetworksModel_addOperation(%u): inputs or outputs is NULL", index);
  if (type < 0 || type > LAST_OPERATION_CODE)
    return invalidate(model, ANEURALNETWORKS_BAD_DATA, "ANeuralNetworksModel_addOperation(%u): unknown operation type",
                      index);
  if (!indexes_valid(model, inputCount, inputs) || !indexes_valid(model, outputCount, outputs))
    return invalidate(model, ANEURALNETWORKS_BAD_DATA, "ANeuralNetworksModel_addOperation(%u): invalid operand index",
                      index);
  RecordedOperation* operations =
      grow(model->operations, &model->operation_capacity, index + 1, sizeof *operations);
  if (operations == NULL) return nnconv_recorder_fail(ANEURALNETWORKS_OUT_OF_MEMORY, "addOperation: out of memory");
  model->operations = operations;
  RecordedOperation* operation = &operations[index];
  operation->type = type;
  operation->input_count = inputCount;
  operation->inputs = copy_indexes(inputCount, inputs);
  operation->output_count = outputCount;
  operation->outputs = copy_indexes(outputCount, outputs);
  if (operation->inputs == NULL || operation->outputs == NULL) {
    free(operation->inputs);
    free(operation->outputs);
    return nnconv_recorder_fail(ANEURALNETWORKS_OUT_OF_MEMORY, "addOperation: out of memory");
  }
  model->operation_count = index + 1;
  return ANEURALNETWORKS_NO_ERROR;
}

/* Marks `indexes` as model inputs or outputs: each must be a temporary without a value, used once. */
static bool assign_role(ANeuralNetworksModel* model, uint32_t count, const uint32_t* indexes, Role role) {
  for (uint32_t i = 0; i < count; ++i) {
    RecordedOperand* operand = &model->operands[indexes[i]];
    if (operand->role != ROLE_TEMPORARY || operand->kind != VALUE_NONE) return false;
    operand->role = role;
  }
  return true;
}

int ANeuralNetworksModel_identifyInputsAndOutputs(ANeuralNetworksModel* model, uint32_t inputCount,
                                                  const uint32_t* inputs, uint32_t outputCount,
                                                  const uint32_t* outputs) {
  int status = nnconv_recorder_check_mutable(model, "ANeuralNetworksModel_identifyInputsAndOutputs");
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  if (inputs == NULL || outputs == NULL)
    return nnconv_recorder_fail(ANEURALNETWORKS_UNEXPECTED_NULL,
                                "ANeuralNetworksModel_identifyInputsAndOutputs: %s is NULL",
                                inputs == NULL ? "inputs" : "outputs");
  if (!indexes_valid(model, inputCount, inputs) || !indexes_valid(model, outputCount, outputs))
    return invalidate(model, ANEURALNETWORKS_BAD_DATA,
                      "identifyInputsAndOutputs: invalid operand index (of %u operands)", model->operand_count);
  if (model->identified || !assign_role(model, inputCount, inputs, ROLE_INPUT) ||
      !assign_role(model, outputCount, outputs, ROLE_OUTPUT))
    return invalidate(model, ANEURALNETWORKS_BAD_DATA,
                      "identifyInputsAndOutputs: an operand is a constant, omitted, or listed twice (model %u)",
                      model->id);
  model->inputs = copy_indexes(inputCount, inputs);
  model->outputs = copy_indexes(outputCount, outputs);
  if (model->inputs == NULL || model->outputs == NULL)
    return nnconv_recorder_fail(ANEURALNETWORKS_OUT_OF_MEMORY, "identifyInputsAndOutputs: out of memory");
  model->input_count = inputCount;
  model->output_count = outputCount;
  model->identified = true;
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksModel_relaxComputationFloat32toFloat16(ANeuralNetworksModel* model, bool allow) {
  int status = nnconv_recorder_check_mutable(model, "ANeuralNetworksModel_relaxComputationFloat32toFloat16");
  if (status != ANEURALNETWORKS_NO_ERROR) return status;
  model->relaxed = allow;
  return ANEURALNETWORKS_NO_ERROR;
}
