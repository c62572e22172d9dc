"""The C `main` of `nnconv probe` (see `probe.py`): tables describing every NNAPI operation of the converted
model (its type and input-0 / output-0 types, as a profile entry), and the code that asks each device about
them and writes a device profile per device. It calls the `<prefix>_p<k>_create` / `_free` functions of the
C that `emit_c.py` writes for the same `.nnapi` file, and compiles with `-std=c99 -pedantic -Wall -Wextra
-Werror` against the NDK's header (or nnconv's, on the host)."""

from __future__ import annotations

import json

from nnconv.nnapi.emit_c import c_comment
from nnconv.nnapi.levels import feature_level
from nnconv.nnapi.ndk.check import MAP_FILE_C, NDK_DIR
from nnconv.nnapi.serialize import NnapiFile

from nnconv.devices.profile import FORMAT, FORMAT_VERSION


_EMPTY = '""'  # the one element of a table that would otherwise be empty (C has no empty arrays)


def _c_string(text: str) -> str:
    """A C string literal of `text` (ASCII JSON, so only quotes and backslashes need escaping)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _tables(nnapi: NnapiFile) -> tuple[list[str], list[str]]:
    """(distinct profile entries as JSON, C tables): per partition the entry index and name of each main-model
    operation, in the order the generated C adds them (the order getSupportedOperationsForDevices answers)."""
    entries: dict[str, int] = {}
    lines: list[str] = []
    counts = []
    for k, part in enumerate(nnapi.partitions):
        main = part.model.main
        combos, names = [], []
        for op in main.operations:
            entry = {"operation": op.type.name}
            if op.inputs:
                entry["input_types"] = [main.operands[op.inputs[0]].type.name]
            if op.outputs:
                entry["output_types"] = [main.operands[op.outputs[0]].type.name]
            text = json.dumps(entry, separators=(",", ":"))
            combos.append(entries.setdefault(text, len(entries)))
            names.append(op.type.name)
        counts.append(len(combos))
        lines.append(f"static const uint32_t p{k}_entries[] = {{{', '.join(f'{c}u' for c in combos) or '0u'}}};")
        lines.append(f"static const char* const p{k}_names[] = {{{', '.join(map(_c_string, names)) or _EMPTY}}};")
    n = len(nnapi.partitions)
    lines.append(f"static const uint32_t* const partition_entries[{n}] = "
                 f"{{{', '.join(f'p{k}_entries' for k in range(n))}}};")
    lines.append(f"static const char* const* const partition_names[{n}] = "
                 f"{{{', '.join(f'p{k}_names' for k in range(n))}}};")
    lines.append(f"static const uint32_t partition_ops[{n}] = {{{', '.join(f'{c}u' for c in counts)}}};")
    texts = list(entries)
    lines.append(f"static const char* const entry_json[{max(len(texts), 1)}] = "
                 f"{{{', '.join(map(_c_string, texts)) or _EMPTY}}};")
    return texts, lines


_COMMON = r"""
{json_string}
/* What one partition said: created, asked, compiled, and per operation whether it was taken. */
typedef struct {
  int create_status;
  int query_status;
  int compile_status;
  bool supported[MAX_OPS];
} PartitionResult;

static PartitionResult results[PARTITION_COUNT];

/* Writes the profile of one device from `results`. */
static int write_profile(const char* path, const char* name, const char* type, int feature_level,
                         const char* version) {
  bool taken[ENTRY_COUNT];
  FILE* json = fopen(path, "w");
  if (json == NULL) return -1;
  for (uint32_t e = 0; e < ENTRY_COUNT; ++e) taken[e] = false;
  for (uint32_t k = 0; k < PARTITION_COUNT; ++k)
    for (uint32_t i = 0; i < partition_ops[k]; ++i)
      if (results[k].supported[i]) taken[partition_entries[k][i]] = true;
  fprintf(json, "{\"format\": \"" PROFILE_FORMAT "\", \"format_version\": %d, \"name\": ", PROFILE_FORMAT_VERSION);
  write_string(json, name);
  fputs(",\n \"device\": {\"name\": ", json);
  write_string(json, name);
  fprintf(json, ", \"type\": \"%s\", \"feature_level\": ", type);
  if (feature_level > 0) fprintf(json, "%d}", feature_level);
  else fputs("null}", json);
  fputs(",\n \"source\": {\"kind\": \"probe\", \"description\": \"" SOURCE_TEXT "\", \"reference\": "
        "\"nnconv probe\", \"model\": " MODEL_NAME ", \"api_level\": " API_LEVEL_TEXT ", \"device_version\": ", json);
  write_string(json, version);
  fputs("},\n \"all_operations\": false,\n \"operations\": [", json);
  bool first = true;
  for (uint32_t e = 0; e < ENTRY_COUNT; ++e) {
    if (!taken[e]) continue;
    fprintf(json, "%s\n  %s", first ? "" : ",", entry_json[e]);
    first = false;
  }
  fputs("],\n \"probe\": {\"method\": \"" PROBE_METHOD "\", \"partitions\": [", json);
  for (uint32_t k = 0; k < PARTITION_COUNT; ++k) {
    fprintf(json, "%s\n  {\"index\": %u, \"create_status\": %d, \"query_status\": %d, \"compile_status\": %d, "
            "\"operations\": [", k ? "," : "", k, results[k].create_status, results[k].query_status,
            results[k].compile_status);
    for (uint32_t i = 0; i < partition_ops[k]; ++i)
      fprintf(json, "%s{\"operation\": %u, \"type\": \"%s\", \"supported\": %s}", i ? ", " : "", i,
              partition_names[k][i], results[k].supported[i] ? "true" : "false");
    fputs("]}", json);
  }
  fputs("]}}\n", json);
  const int failed = ferror(json);
  return fclose(json) != 0 || failed ? -1 : 0;
}

/* The model file named on the command line, mapped; NULL after saying why. */
static ANeuralNetworksMemory* open_model(int argc, char** argv) {
  int status = 0;
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL.nnapi OUT_DIR\n", argv[0]);
    return NULL;
  }
  ANeuralNetworksMemory* file = map_file(argv[1], &status);
  if (status != ANEURALNETWORKS_NO_ERROR) fprintf(stderr, "cannot map %s (status %d)\n", argv[1], status);
  return status == ANEURALNETWORKS_NO_ERROR ? file : NULL;
}

/* Writes one profile and prints its path; 0, or 3 when it cannot be written. */
static int save_profile(const char* path, const char* name, const char* type, int feature_level,
                        const char* version) {
  if (write_profile(path, name, type, feature_level, version) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    return 3;
  }
  printf("%s\n", path);
  return 0;
}

/* Creates partition k's models; the caller asks about them, then frees them. */
static ANeuralNetworksModel** begin_partition(uint32_t k, const ANeuralNetworksMemory* file,
                                              ANeuralNetworksModel** models) {
  PartitionResult* r = &results[k];
  memset(r, 0, sizeof *r);
  r->query_status = r->compile_status = -1;
  for (uint32_t m = 0; m < MAX_MODELS; ++m) models[m] = NULL;
  r->create_status = create_partition(k, file, models);
  return r->create_status == ANEURALNETWORKS_NO_ERROR ? models : NULL;
}
"""

_DEVICES = r"""
static const char* type_name(int32_t type) {
  switch (type) {
    case ANEURALNETWORKS_DEVICE_OTHER: return "OTHER";
    case ANEURALNETWORKS_DEVICE_CPU: return "CPU";
    case ANEURALNETWORKS_DEVICE_GPU: return "GPU";
    case ANEURALNETWORKS_DEVICE_ACCELERATOR: return "ACCELERATOR";
    default: return "UNKNOWN";
  }
}

/* getFeatureLevel's value (27..31, then 1000006..) as the NNAPI feature level 1..8; 0 when unknown. */
static int feature_level_of(int64_t code) {
  if (code >= 1000006 && code <= 1000008) return (int)(code - 1000000);
  if (code >= 27 && code <= 31) return (int)(code - 26);
  if (code == 32) return 5; /* Android 12L shares feature level 5 */
  return 0;
}

/* profile-<name>.json with characters other than letters, digits, '.', '-' and '_' made '_'. */
static void profile_path(char* path, size_t size, const char* dir, const char* name) {
  char safe[128];
  size_t n = 0;
  for (const char* c = name; *c && n + 1 < sizeof safe; ++c) {
    const char ch = *c;
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                    ch == '.' || ch == '-' || ch == '_';
    safe[n++] = ok ? ch : '_';
  }
  safe[n] = '\0';
  snprintf(path, size, "%s/profile-%s.json", dir, n ? safe : "device");
}

int main(int argc, char** argv) {
  uint32_t device_count = 0;
  int status = 0;
  ANeuralNetworksMemory* file = open_model(argc, argv);
  if (file == NULL) return 2;
  if (ANeuralNetworks_getDeviceCount(&device_count) != ANEURALNETWORKS_NO_ERROR) return 3;
  for (uint32_t d = 0; d < device_count; ++d) {
    ANeuralNetworksDevice* device = NULL;
    const char* name = "";
    const char* version = "";
    int32_t type = 0;
    int64_t level = 0;
    if (ANeuralNetworks_getDevice(d, &device) != ANEURALNETWORKS_NO_ERROR) continue;
    ANeuralNetworksDevice_getName(device, &name);
    ANeuralNetworksDevice_getType(device, &type);
    ANeuralNetworksDevice_getFeatureLevel(device, &level);
    ANeuralNetworksDevice_getVersion(device, &version);
    const ANeuralNetworksDevice* const chosen[1] = {device};
    for (uint32_t k = 0; k < PARTITION_COUNT; ++k) {
      ANeuralNetworksModel* models[MAX_MODELS];
      PartitionResult* r = &results[k];
      if (begin_partition(k, file, models) != NULL) {
        r->query_status = ANeuralNetworksModel_getSupportedOperationsForDevices(models[0], chosen, 1, r->supported);
        if (r->query_status != ANEURALNETWORKS_NO_ERROR)
          for (uint32_t i = 0; i < partition_ops[k]; ++i) r->supported[i] = false;
        ANeuralNetworksCompilation* compilation = NULL;
        r->compile_status = ANeuralNetworksCompilation_createForDevices(models[0], chosen, 1, &compilation);
        if (r->compile_status == ANEURALNETWORKS_NO_ERROR)
          r->compile_status = ANeuralNetworksCompilation_finish(compilation);
        ANeuralNetworksCompilation_free(compilation);
      }
      free_partition(k, models);
    }
    char path[4096];
    profile_path(path, sizeof path, argv[2], name);
    if (save_profile(path, name, type_name(type), feature_level_of(level), version) != 0) status = 3;
  }
  ANeuralNetworksMemory_free(file);
  return status;
}
"""

_RUNTIME = r"""
int main(int argc, char** argv) {
  ANeuralNetworksMemory* file = open_model(argc, argv);
  if (file == NULL) return 2;
  /* Below API 29 NNAPI names no device: whole-model compilation is all there is to ask. */
  for (uint32_t k = 0; k < PARTITION_COUNT; ++k) {
    ANeuralNetworksModel* models[MAX_MODELS];
    PartitionResult* r = &results[k];
    if (begin_partition(k, file, models) != NULL) {
      ANeuralNetworksCompilation* compilation = NULL;
      r->compile_status = ANeuralNetworksCompilation_create(models[0], &compilation);
      if (r->compile_status == ANEURALNETWORKS_NO_ERROR)
        r->compile_status = ANeuralNetworksCompilation_finish(compilation);
      ANeuralNetworksCompilation_free(compilation);
      for (uint32_t i = 0; i < partition_ops[k]; ++i) r->supported[i] = r->compile_status == ANEURALNETWORKS_NO_ERROR;
    }
    free_partition(k, models);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/profile-nnapi-runtime.json", argv[2]);
  const int status = save_profile(path, "nnapi-runtime", "UNKNOWN", RUNTIME_FEATURE_LEVEL, "");
  ANeuralNetworksMemory_free(file);
  return status;
}
"""


def _partition_calls(nnapi: NnapiFile, prefix: str) -> list[str]:
    """create_partition / free_partition: a switch over the partitions' generated functions."""
    create = ["static int create_partition(uint32_t k, const ANeuralNetworksMemory* file, "
              "ANeuralNetworksModel** models) {", "  switch (k) {"]
    free = ["static void free_partition(uint32_t k, ANeuralNetworksModel** models) {", "  switch (k) {"]
    for k in range(len(nnapi.partitions)):
        create.append(f"    case {k}u: return {prefix}_p{k}_create(file, models);")
        free.append(f"    case {k}u: {prefix}_p{k}_free(models); break;")
    create += ["    default: return ANEURALNETWORKS_BAD_DATA;", "  }", "}", ""]
    free += ["    default: break;", "  }", "}", ""]
    return create + free


def probe_source(nnapi: NnapiFile, prefix: str, model_name: str, api_level: int, devices: bool) -> str:
    """The probe's `probe.c` for a loaded `.nnapi` file whose C (`emit_c`) has the symbol prefix `prefix`."""
    entries, tables = _tables(nnapi)
    max_ops = max([len(p.model.main.operations) for p in nnapi.partitions] + [1])
    max_models = max(len(p.model.subgraphs()) for p in nnapi.partitions)
    method = "getSupportedOperationsForDevices" if devices else "compilation"
    what = ("ANeuralNetworksModel_getSupportedOperationsForDevices on the phone for every operation of "
            if devices else "whole-model compilation (ANeuralNetworksCompilation_create, below API 29) of ")
    source_text = json.dumps(f"{what}{model_name} converted by nnconv at API {api_level}")[1:-1]
    out = [f"/* Generated by nnconv probe from {c_comment(model_name)} at API {api_level}: do not edit.",
           " * Run as: nnconv_probe model.nnapi OUT_DIR   (writes OUT_DIR/profile-<device>.json) */",
           "#define _POSIX_C_SOURCE 200809L",
           "#include <fcntl.h>", "#include <stdbool.h>", "#include <stdint.h>", "#include <stdio.h>",
           "#include <string.h>", "#include <sys/mman.h>", "#include <sys/stat.h>", "#include <unistd.h>", "",
           "#include <android/NeuralNetworks.h>", "", f'#include "{prefix}.h"', "",
           f"#define PARTITION_COUNT {len(nnapi.partitions)}u",
           # at least 1: C has no empty arrays (an entry no operation names is never taken)
           f"#define ENTRY_COUNT {max(len(entries), 1)}u",
           f"#define MAX_OPS {max_ops}u", f"#define MAX_MODELS {max_models}u",
           f'#define PROFILE_FORMAT "{FORMAT}"', f"#define PROFILE_FORMAT_VERSION {FORMAT_VERSION}",
           f"#define SOURCE_TEXT {_c_string(source_text)}",
           f"#define MODEL_NAME {_c_string(json.dumps(model_name))}",
           f'#define API_LEVEL_TEXT "{api_level}"', f'#define PROBE_METHOD "{method}"',
           f"#define RUNTIME_FEATURE_LEVEL {feature_level(api_level)}", ""]
    out += tables + [""] + _partition_calls(nnapi, prefix)
    common = _COMMON.replace("{json_string}", (NDK_DIR / "json_string.h").read_text())
    return "\n".join(out) + "\n" + "\n".join(MAP_FILE_C) + common + (_DEVICES if devices else _RUNTIME)
