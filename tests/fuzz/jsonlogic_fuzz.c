/* jsonlogic_fuzz.c — libFuzzer target for the JSON Logic engine: compile a rule (JSON)
 * and apply it to data (the part after a NUL byte or "\n---\n"), in both semantics. */
#include <stdbool.h>

#include "fuzz_input.h"
#include "jsonlogic/jsonlogic.h"

static void run(json_t *rule, json_t *data, bool compat) {
    jsonlogic_options o = {.compat_semantics = compat, .max_depth = 64};
    gg_error err = GG_ERROR_INIT;
    jsonlogic_rule *r = jsonlogic_compile(rule, &o, &err);
    if (r) {
        json_decref(jsonlogic_apply(r, data, NULL, &err));
        gg_error_clear(&err);
        (void)jsonlogic_test(r, data, NULL, &err);
        jsonlogic_free(r);
    }
    gg_error_clear(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    fuzz_input in;
    if (!fuzz_input_take(&in, data, size)) return 0;
    json_t *rule = json_loads(in.buf, JSON_DECODE_ANY, NULL);
    json_t *doc = in.second ? json_loads(in.second, JSON_DECODE_ANY, NULL) : NULL;
    if (rule) {
        run(rule, doc, false);
        run(rule, doc, true);
    }
    json_decref(rule);
    json_decref(doc);
    free(in.buf);
    return 0;
}
