/* A JSON string literal written to a stream: the one writer of the host recorder (recorder_write.c) and of the
 * program `nnconv probe` writes, which pastes this file's text in (it runs on a phone, without the recorder). */
#ifndef NNCONV_JSON_STRING_H
#define NNCONV_JSON_STRING_H

#include <stdio.h>

static void write_string(FILE* json, const char* text) {
  fputc('"', json);
  for (const char* c = text; *c; ++c) {
    if (*c == '"' || *c == '\\') fprintf(json, "\\%c", *c);
    else if ((unsigned char)*c < 0x20) fprintf(json, "\\u%04x", (unsigned)(unsigned char)*c);
    else fputc(*c, json);
  }
  fputc('"', json);
}

#endif
