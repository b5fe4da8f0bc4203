/* jsonata_fuzz.c — libFuzzer target for the JSONata engine: compile and evaluate.
 * Input: the expression, optionally followed by a NUL byte (or "\n---\n") and a JSON
 * document used as the input. Evaluation runs under tight limits, so hostile expressions
 * must end in an error, never a crash, a leak or a hang. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonata/jsonata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *doc = NULL;
    size_t exprlen = strlen(buf);
    if (exprlen < size) doc = buf + exprlen + 1;
    else {
        char *sep = strstr(buf, "\n---\n");
        if (sep) { *sep = '\0'; doc = sep + 5; }
    }
    json_t *input = NULL;
    if (doc && *doc) input = json_loads(doc, JSON_DECODE_ANY, NULL);
    gg_error err = GG_ERROR_INIT;
    jsonata_expr *e = jsonata_compile(buf, NULL, &err);
    if (e) {
        jsonata_options opts = {.max_depth = 200, .time_limit_ms = 200, .max_sequence_length = 100000};
        json_t *r = jsonata_evaluate(e, input, NULL, &opts, NULL, &err);
        if (r) {
            char *s = jsonata_dump(r, 2);
            free(s);
            json_decref(r);
        }
        jsonata_free(e);
    }
    gg_error_clear(&err);
    json_decref(input);
    free(buf);
    return 0;
}
