/* Internal to nnconv's host recorder: the recorded model, shared by recorder_model.c (the building calls),
 * recorder_finish.c (finish and memory) and recorder_write.c (the JSON record). */
#ifndef NNCONV_RECORDER_INTERNAL_H
#define NNCONV_RECORDER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recorder.h"

/* The highest OperationCode of the header (ANEURALNETWORKS_REVERSE, feature level 8). */
#define LAST_OPERATION_CODE 105

typedef enum { VALUE_NONE, VALUE_OMITTED, VALUE_COPY, VALUE_POINTER, VALUE_MEMORY, VALUE_MODEL } ValueKind;
typedef enum { ROLE_TEMPORARY, ROLE_INPUT, ROLE_OUTPUT } Role;

struct ANeuralNetworksMemory {
  uint32_t id;
  void* data;
  size_t size;
};

typedef struct {
  int32_t type;
  uint32_t rank;
  uint32_t* dims;
  float scale;
  int32_t zero_point;
  Role role;
  ValueKind kind;
  uint8_t* copy;           /* VALUE_COPY: the bytes, copied at the call (or at finish for a large buffer) */
  const void* pointer;     /* VALUE_POINTER: the caller's buffer, read at finish as the runtime may */
  size_t length;
  const ANeuralNetworksMemory* memory;
  size_t offset;
  const ANeuralNetworksModel* model;
  bool has_channel;
  uint32_t channel_dim;
  uint32_t scale_count;
  float* scales;
  bool written;            /* an operation's output (checked at finish) */
} RecordedOperand;

typedef struct {
  int32_t type;
  uint32_t input_count;
  uint32_t* inputs;
  uint32_t output_count;
  uint32_t* outputs;
} RecordedOperation;

struct ANeuralNetworksModel {
  uint32_t id;
  bool finished;
  bool invalid;
  bool relaxed;
  bool identified;
  RecordedOperand* operands;
  uint32_t operand_count;
  uint32_t operand_capacity;
  RecordedOperation* operations;
  uint32_t operation_count;
  uint32_t operation_capacity;
  uint32_t* inputs;
  uint32_t input_count;
  uint32_t* outputs;
  uint32_t output_count;
};

/* Records the message of the first failure since the last write (later ones usually follow from it) and
 * returns `code`. */
int nnconv_recorder_fail(int code, const char* format, ...);

/* The checks every mutating call starts with: UNEXPECTED_NULL for a NULL model, BAD_STATE for a finished or
 * invalid one. */
int nnconv_recorder_check_mutable(ANeuralNetworksModel* model, const char* call);

/* Forgets the first failure (after it was written). */
void nnconv_recorder_clear_error(void);

#endif /* NNCONV_RECORDER_INTERNAL_H */
