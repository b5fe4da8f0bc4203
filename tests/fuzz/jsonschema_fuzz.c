/* jsonschema_fuzz.c — libFuzzer target for the JSON Schema validator: compile a schema
 * (JSON) and check an instance (the part after a NUL byte or "\n---\n") with every error
 * reported. $ref cycles, exponential $ref/allOf fans and hostile patterns must end in an
 * error or a verdict within the validator's budgets. */
#include <stdbool.h>

#include "fuzz_input.h"
#include "jsonschema/jsonschema.h"

static void count(void *user, const char *pointer, const char *message) {
    (void)pointer;
    (void)message;
    (*(size_t *)user)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 16 * 1024) return 0;
    fuzz_input in;
    if (!fuzz_input_take(&in, data, size)) return 0;
    json_t *schema = json_loads(in.buf, JSON_DECODE_ANY, NULL);
    json_t *inst = in.second ? json_loads(in.second, JSON_DECODE_ANY, NULL) : NULL;
    gg_error err = GG_ERROR_INIT;
    mcp_schema *s = schema ? mcp_schema_compile(schema, &err) : NULL;
    if (s) {
        size_t n = 0;
        mcp_schema_validate_all(s, inst ? inst : json_null(), 16, count, &n);
        (void)mcp_schema_validate(s, inst ? inst : json_null(), &err);
        mcp_schema_free(s);
    }
    gg_error_clear(&err);
    json_decref(schema);
    json_decref(inst);
    free(in.buf);
    return 0;
}
