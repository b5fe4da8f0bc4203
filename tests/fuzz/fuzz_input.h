/* fuzz_input.h — what the libFuzzer targets of tests/fuzz share: the input as a
 * NUL-terminated copy, optionally split in two at the first NUL byte (or "\n---\n"). */
#ifndef GG_FUZZ_INPUT_H
#define GG_FUZZ_INPUT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_input {
    char *buf;    /* the whole input + NUL (owned) */
    size_t len;
    char *second; /* after the separator, NUL-terminated; NULL when there is none */
} fuzz_input;

/* NULL-free copy; false on OOM. first part = buf (up to the separator). */
static inline bool fuzz_input_take(fuzz_input *in, const uint8_t *data, size_t size) {
    in->buf = malloc(size + 1);
    if (!in->buf) return false;
    memcpy(in->buf, data, size);
    in->buf[size] = '\0';
    in->len = size;
    in->second = NULL;
    size_t first = strlen(in->buf);
    if (first < size) in->second = in->buf + first + 1;
    else {
        char *sep = strstr(in->buf, "\n---\n");
        if (sep) { *sep = '\0'; in->second = sep + 5; }
    }
    return true;
}

#endif
