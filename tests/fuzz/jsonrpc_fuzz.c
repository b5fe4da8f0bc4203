/* jsonrpc_fuzz.c — libFuzzer target for the JSON-RPC reader every MCP request goes
 * through: parse (depth-bounded, UTF-8 checked), classify each message (a batch array item
 * by item), and serialize a reply echoing the id. */
#include <stdbool.h>

#include "fuzz_input.h"
#include "mcp/mcp.h"

static void classify_and_reply(json_t *v) {
    mcp_message m;
    mcp_jsonrpc_classify(v, &m);
    char *out = m.kind == MCP_MSG_INVALID ? mcp_jsonrpc_error(m.id, m.error_code, m.error_message, NULL)
                                          : mcp_jsonrpc_result(m.id, m.params);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 256 * 1024) return 0;
    gg_error err = GG_ERROR_INIT;
    json_t *v = mcp_jsonrpc_parse((const char *)data, size, 0, &err);
    if (v && json_is_array(v)) {
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item) classify_and_reply(item);
    } else if (v) {
        classify_and_reply(v);
    }
    json_decref(v);
    gg_error_clear(&err);
    return 0;
}
