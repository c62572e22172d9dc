/* nnconv's host recorder: fake NNAPI devices, for testing `nnconv probe` on a machine without a phone.
 *
 * Implements ANeuralNetworks_getDeviceCount / getDevice, ANeuralNetworksDevice_getName / getType /
 * getFeatureLevel / getVersion, ANeuralNetworksModel_getSupportedOperationsForDevices and
 * ANeuralNetworksCompilation_create / createForDevices / finish / free, with the argument checks and result
 * codes the NNAPI runtime documents. The devices come from the text file $NNCONV_FAKE_DEVICES (no file:
 * no device), one directive per line, `#` starting a comment:
 *
 *   device NAME TYPE FEATURE_LEVEL     a device: DeviceTypeCode (2 CPU, 3 GPU, 4 ACCELERATOR, ...) and
 *                                      what getFeatureLevel returns (27..31, 1000006..)
 *   op CODE [OPERAND_CODE ...]         the last device takes OperationCode CODE when its input 0 has one
 *                                      of these OperandCodes (none listed: any type)
 *
 * A fake device takes an operation when an `op` line of its type accepts input 0's type, and compiles a
 * model (createForDevices + finish) when it takes every operation of it and of its referenced models.
 * ANeuralNetworksCompilation_create (no device named, as below API 29) compiles any finished model, as the
 * runtime does with its CPU fallback. Nothing is executed.
 */
#define _POSIX_C_SOURCE 200809L

#include "recorder_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 16
#define MAX_RULES 256
#define MAX_TYPES 16

typedef struct {
  int32_t operation;
  uint32_t type_count; /* 0: any input type */
  int32_t types[MAX_TYPES];
} Rule;

struct ANeuralNetworksDevice {
  char name[128];
  int32_t type;
  int64_t feature_level;
  uint32_t rule_count;
  Rule rules[MAX_RULES];
};

struct ANeuralNetworksCompilation {
  const ANeuralNetworksModel* model;
  const ANeuralNetworksDevice* device; /* NULL: ANeuralNetworksCompilation_create */
  bool finished;
};

static ANeuralNetworksDevice devices[MAX_DEVICES];
static uint32_t device_count;
static bool loaded;

/* Reads $NNCONV_FAKE_DEVICES once; a malformed line is reported on stderr and ends the list there. */
static void load_devices(void) {
  if (loaded) return;
  loaded = true;
  const char* path = getenv("NNCONV_FAKE_DEVICES");
  FILE* file = path ? fopen(path, "r") : NULL;
  if (file == NULL) return;
  char line[1024];
  while (fgets(line, sizeof line, file) != NULL) {
    char* hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char* word = strtok(line, " \t\r\n");
    if (word == NULL) continue;
    if (strcmp(word, "device") == 0 && device_count < MAX_DEVICES) {
      ANeuralNetworksDevice* d = &devices[device_count];
      const char* name = strtok(NULL, " \t\r\n");
      const char* type = strtok(NULL, " \t\r\n");
      const char* level = strtok(NULL, " \t\r\n");
      if (name == NULL || type == NULL || level == NULL) break;
      snprintf(d->name, sizeof d->name, "%s", name);
      d->type = (int32_t)strtol(type, NULL, 10);
      d->feature_level = strtoll(level, NULL, 10);
      d->rule_count = 0;
      ++device_count;
    } else if (strcmp(word, "op") == 0 && device_count > 0) {
      ANeuralNetworksDevice* d = &devices[device_count - 1];
      const char* code = strtok(NULL, " \t\r\n");
      if (code == NULL || d->rule_count == MAX_RULES) break;
      Rule* rule = &d->rules[d->rule_count++];
      rule->operation = (int32_t)strtol(code, NULL, 10);
      rule->type_count = 0;
      for (const char* t = strtok(NULL, " \t\r\n"); t && rule->type_count < MAX_TYPES; t = strtok(NULL, " \t\r\n"))
        rule->types[rule->type_count++] = (int32_t)strtol(t, NULL, 10);
    } else {
      fprintf(stderr, "NNCONV_FAKE_DEVICES: cannot read the line starting with '%s'\n", word);
      break;
    }
  }
  fclose(file);
}

int ANeuralNetworks_getDeviceCount(uint32_t* numDevices) {
  if (numDevices == NULL) return ANEURALNETWORKS_UNEXPECTED_NULL;
  load_devices();
  *numDevices = device_count;
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworks_getDevice(uint32_t devIndex, ANeuralNetworksDevice** device) {
  if (device == NULL) return ANEURALNETWORKS_UNEXPECTED_NULL;
  load_devices();
  if (devIndex >= device_count) return ANEURALNETWORKS_BAD_DATA;
  *device = &devices[devIndex];
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksDevice_getName(const ANeuralNetworksDevice* device, const char** name) {
  if (device == NULL || name == NULL) return ANEURALNETWORKS_UNEXPECTED_NULL;
  *name = device->name;
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksDevice_getType(const ANeuralNetworksDevice* device, int32_t* type) {
  if (device == NULL || type == NULL) return ANEURALNETWORKS_UNEXPECTED_NULL;
  *type = device->type;
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksDevice_getFeatureLevel(const ANeuralNetworksDevice* device, int64_t* featureLevel) {
  if (device == NULL || featureLevel == NULL) return ANEURALNETWORKS_UNEXPECTED_NULL;
  *featureLevel = device->feature_level;
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksDevice_getVersion(const ANeuralNetworksDevice* device, const char** version) {
  if (device == NULL || version == NULL) return ANEURALNETWORKS_UNEXPECTED_NULL;
  *version = "nnconv-fake-1";
  return ANEURALNETWORKS_NO_ERROR;
}

static bool takes(const ANeuralNetworksDevice* device, const ANeuralNetworksModel* model, uint32_t k) {
  const RecordedOperation* operation = &model->operations[k];
  const int32_t input_type = operation->input_count ? model->operands[operation->inputs[0]].type : -1;
  for (uint32_t r = 0; r < device->rule_count; ++r) {
    const Rule* rule = &device->rules[r];
    if (rule->operation != operation->type) continue;
    if (rule->type_count == 0) return true;
    for (uint32_t t = 0; t < rule->type_count; ++t)
      if (rule->types[t] == input_type) return true;
  }
  return false;
}

/* Whether `device` takes every operation of `model` and of the models its MODEL operands reference. */
static bool takes_model(const ANeuralNetworksDevice* device, const ANeuralNetworksModel* model, uint32_t depth) {
  if (depth > 32) return false; /* referenced models cannot form cycles; a bound all the same */
  for (uint32_t k = 0; k < model->operation_count; ++k)
    if (!takes(device, model, k)) return false;
  for (uint32_t i = 0; i < model->operand_count; ++i)
    if (model->operands[i].kind == VALUE_MODEL && !takes_model(device, model->operands[i].model, depth + 1))
      return false;
  return true;
}

static bool known_device(const ANeuralNetworksDevice* device) {
  for (uint32_t d = 0; d < device_count; ++d)
    if (device == &devices[d]) return true;
  return false;
}

int ANeuralNetworksModel_getSupportedOperationsForDevices(const ANeuralNetworksModel* model,
                                                          const ANeuralNetworksDevice* const* devs,
                                                          uint32_t numDevices, bool* supportedOps) {
  if (model == NULL || devs == NULL || supportedOps == NULL) return ANEURALNETWORKS_UNEXPECTED_NULL;
  if (!model->finished) return ANEURALNETWORKS_BAD_STATE;
  if (numDevices == 0) return ANEURALNETWORKS_BAD_DATA;
  for (uint32_t d = 0; d < numDevices; ++d)
    if (!known_device(devs[d])) return ANEURALNETWORKS_BAD_DATA;
  for (uint32_t k = 0; k < model->operation_count; ++k) {
    supportedOps[k] = false;
    for (uint32_t d = 0; d < numDevices && !supportedOps[k]; ++d) supportedOps[k] = takes(devs[d], model, k);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

static int create_compilation(ANeuralNetworksModel* model, const ANeuralNetworksDevice* device,
                              ANeuralNetworksCompilation** compilation) {
  if (model == NULL || compilation == NULL) return ANEURALNETWORKS_UNEXPECTED_NULL;
  *compilation = NULL;
  if (!model->finished) return ANEURALNETWORKS_BAD_STATE;
  ANeuralNetworksCompilation* created = calloc(1, sizeof *created);
  if (created == NULL) return ANEURALNETWORKS_OUT_OF_MEMORY;
  created->model = model;
  created->device = device;
  *compilation = created;
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksCompilation_create(ANeuralNetworksModel* model, ANeuralNetworksCompilation** compilation) {
  return create_compilation(model, NULL, compilation);
}

int ANeuralNetworksCompilation_createForDevices(ANeuralNetworksModel* model, const ANeuralNetworksDevice* const* devs,
                                                uint32_t numDevices, ANeuralNetworksCompilation** compilation) {
  if (devs == NULL) return ANEURALNETWORKS_UNEXPECTED_NULL;
  /* The fake runtime compiles for one device at a time, which is what the probe asks. */
  if (numDevices != 1 || !known_device(devs[0])) return ANEURALNETWORKS_BAD_DATA;
  return create_compilation(model, devs[0], compilation);
}

int ANeuralNetworksCompilation_finish(ANeuralNetworksCompilation* compilation) {
  if (compilation == NULL) return ANEURALNETWORKS_UNEXPECTED_NULL;
  if (compilation->finished) return ANEURALNETWORKS_BAD_STATE;
  compilation->finished = true;
  if (compilation->device != NULL && !takes_model(compilation->device, compilation->model, 0))
    return ANEURALNETWORKS_BAD_DATA; /* what the runtime answers when the named devices cannot run the model */
  return ANEURALNETWORKS_NO_ERROR;
}

void ANeuralNetworksCompilation_free(ANeuralNetworksCompilation* compilation) { free(compilation); }
