"""`convert --check-c`: compiles the generated C with the system compiler against nnconv's NDK header and
host recorder, runs it on the `.nnapi` file, and compares what it built with the file (`record.py`).

The program is the generated `.c` files, the recorder (`recorder_*.c`) and a small `main` written here
that maps the `.nnapi` file with ANeuralNetworksMemory_createFromFd, as an app would, and calls every
partition's `<prefix>_p<k>_create`. Everything compiles with `-std=c99 -pedantic -Wall -Wextra -Werror`,
so a warning in the generated code is a failure too.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Sequence

from nnconv.errors import NnconvError
from nnconv.nnapi.ndk.record import compare_record
from nnconv.nnapi.serialize import NnapiFile

NDK_DIR = pathlib.Path(__file__).resolve().parent
INCLUDE_DIR = NDK_DIR / "include"
RECORDER_SOURCES = ("recorder_model.c", "recorder_finish.c", "recorder_write.c")
C_FLAGS = ("-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror")
COMPILE_TIMEOUT_SECONDS = 300
RUN_TIMEOUT_SECONDS = 120


class NoCompilerError(NnconvError):
    """No C compiler on PATH (exit 2: the check cannot run, which is not a difference)."""


class CheckError(NnconvError):
    """The generated C did not compile or its program failed: a check failure (exit 1)."""

    exit_code = 1


@dataclass(frozen=True)
class GeneratedC:
    """One converted model's generated source: its `.c`, the `.h` beside it, the symbol prefix and the
    `.nnapi` file it reads."""

    c_path: pathlib.Path
    header_path: pathlib.Path
    prefix: str
    nnapi_path: pathlib.Path
    nnapi: NnapiFile


def find_compiler() -> str:
    """`$CC`, else `cc`, `gcc` or `clang` from PATH."""
    for name in ([os.environ["CC"]] if os.environ.get("CC") else []) + ["cc", "gcc", "clang"]:
        path = shutil.which(name)
        if path:
            return path
    raise NoCompilerError("--check-c needs a C compiler: none of $CC, cc, gcc, clang is on PATH")


# A C function mapping a whole file as an app does (needs <fcntl.h>, <sys/mman.h>, <sys/stat.h>, <unistd.h>):
# `--check-c`'s driver and `nnconv probe`'s program both read the `.nnapi` file with it.
MAP_FILE_C = (
    "/* Maps a whole file as an app does; NULL (and the status in *status) when it cannot. */",
    "static ANeuralNetworksMemory* map_file(const char* path, int* status) {",
    "  ANeuralNetworksMemory* memory = NULL;",
    "  struct stat st;",
    "  int fd = open(path, O_RDONLY);",
    "  *status = ANEURALNETWORKS_BAD_DATA;",
    "  if (fd >= 0 && fstat(fd, &st) == 0)",
    "    *status = ANeuralNetworksMemory_createFromFd((size_t)st.st_size, PROT_READ, fd, 0, &memory);",
    "  if (fd >= 0) close(fd);",
    "  return memory;",
    "}",
    "",
)


def driver_source(models: Sequence[GeneratedC]) -> str:
    """A `main` that records every partition of every model: argv = (json, blob, nnapi file per model)."""
    lines = ["#define _POSIX_C_SOURCE 200809L",
             "#include <fcntl.h>", "#include <stdio.h>", "#include <sys/mman.h>", "#include <sys/stat.h>",
             "#include <unistd.h>", "", '#include "recorder.h"']
    lines += [f'#include "{m.header_path.name}"' for m in models]
    lines += ["", *MAP_FILE_C,
              "int main(int argc, char** argv) {",
              f"  if (argc != {3 + len(models)}) return 2;",
              "  FILE* json = fopen(argv[1], \"w\");",
              "  FILE* blob = fopen(argv[2], \"wb\");",
              "  if (json == NULL || blob == NULL) return 2;",
              "  fputs(\"[\", json);"]
    for n, m in enumerate(models):
        lines += ["  {",
                  "    int status = 0;",
                  f"    ANeuralNetworksMemory* file = map_file(argv[{3 + n}], &status);",
                  f"    fprintf(json, \"%s{{\\\"memory_status\\\":%d,\\\"file_memory\\\":%u,\\\"partitions\\\":[\", "
                  f"\"{',' if n else ''}\", status, nnconv_recorder_memory_id(file));"]
        for k in range(len(m.nnapi.partitions)):
            p, count = f"{m.prefix}_p{k}_", f"{m.prefix.upper()}_P{k}_MODEL_COUNT"
            separator = '      fputs(",", json);' if k else ""
            lines += ["    {",
                      f"      ANeuralNetworksModel* models[{count}];",
                      f"      const int created = {p}create(file, models);",
                      separator,
                      f"      nnconv_recorder_write_partition(json, blob, created, models, {count});",
                      f"      {p}free(models);",
                      "    }"]
        lines += ["    fputs(\"]}\", json);", "    ANeuralNetworksMemory_free(file);", "  }"]
    lines += ["  fputs(\"]\\n\", json);",
              "  const int failed = ferror(json) || ferror(blob);",
              "  if (fclose(json) != 0 || fclose(blob) != 0 || failed) return 3;",
              "  return 0;",
              "}", ""]
    return "\n".join(lines)


def _run(argv: list[str], what: str, timeout: int, cwd: str) -> None:
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise CheckError(f"{what} took longer than {timeout} s") from None
    except OSError as e:
        raise CheckError(f"{what} could not start ({e.strerror or e})") from None
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        first = next((line for line in detail if "error" in line), detail[0] if detail else "")
        raise CheckError(f"{what} failed (exit {result.returncode}): {first.strip()}")


def build_and_record(models: Sequence[GeneratedC],
                     workdir: str | os.PathLike | None = None) -> list[tuple[dict, bytes]]:
    """Compiles the models' C with the recorder into one program, runs it, and returns each model's
    (record, blob) pair; every model's bytes are in the one blob, their offsets into it in the record."""
    cc = find_compiler()
    with tempfile.TemporaryDirectory(prefix="nnconv-check-c-", dir=workdir) as tmp:
        work = pathlib.Path(tmp)
        driver = work / "nnconv_check_main.c"
        driver.write_text(driver_source(models), encoding="utf-8")
        # The compiler and the program run in the temporary directory: paths the user gave relative to the
        # current directory are made absolute first (`--emit-c out/m.c` failed to find out/m.h).
        headers = sorted({f"-I{m.header_path.resolve().parent}" for m in models})
        includes = [f"-I{INCLUDE_DIR}", f"-I{NDK_DIR}"] + headers
        sources = [str(driver)] + [str(NDK_DIR / s) for s in RECORDER_SOURCES]
        sources += [str(m.c_path.resolve()) for m in models]
        exe = work / "nnconv_check"
        _run([cc, *C_FLAGS, *includes, *sources, "-o", str(exe), "-lm"], "compiling the generated C",
             COMPILE_TIMEOUT_SECONDS, tmp)
        json_path, blob_path = work / "record.json", work / "record.bin"
        _run([str(exe), str(json_path), str(blob_path), *(str(m.nnapi_path.resolve()) for m in models)],
             "running the generated C", RUN_TIMEOUT_SECONDS, tmp)
        try:
            records = json.loads(json_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise CheckError(f"the recorder's output is unreadable ({e})") from None
        blob = blob_path.read_bytes()
    return [(record, blob) for record in records]


def check_generated_c(models: Sequence[GeneratedC]) -> str | None:
    """None when the C of every model builds exactly its `.nnapi` file's models, else the first
    difference (one line, naming the model when there are several)."""
    for m, (record, blob) in zip(models, build_and_record(models)):
        difference = compare_record(m.nnapi, record, blob)
        if difference:
            return f"{m.c_path.name}: {difference}" if len(models) > 1 else difference
    return None
