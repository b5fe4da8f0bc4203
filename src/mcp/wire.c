/* wire.c — turning the bytes a downstream server sent into JSON without trusting them.
 * jansson materializes a message whole, and a small text can cost far more in memory than
 * its size ("[{},{},…]": several hundred bytes of heap per two bytes of input), so every
 * downstream message is parsed under a memory budget: the allocations of the parse are
 * counted (jansson allocates through jsonata_budget_malloc, see jl_value.c) and the parse
 * fails as soon as they pass the bound, before the heap grows. */
#include "mcp/loop.h"

#include <limits.h>

#include "jsonata/jsonata.h"

/* The parse runs with its own budget in place of any the thread had: a downstream answer
 * is charged to the exchange, not to whatever evaluation happens to run on this thread. */
json_t *mcp_wire_parse(const char *buf, size_t len, size_t max_alloc, size_t *held, gg_error *err) {
    if (held) *held = 0;
    jsonata_budget b = {.limit = max_alloc > (size_t)LONG_MAX ? LONG_MAX : (long)max_alloc};
    jsonata_budget *outer = jsonata_budget_swap(&b);
    json_error_t je;
    json_t *m = json_loadb(buf, len, JSON_ALLOW_NUL, &je);
    jsonata_budget_swap(outer);
    if (b.exceeded) {
        json_decref(m); /* not reached in practice: a failed allocation fails the parse */
        gg_error_set(err, "transport", "the downstream message needs more than %zu bytes of memory to parse "
                     "(downstream.max_parse_bytes)", max_alloc);
        return NULL;
    }
    if (!m) {
        gg_error_set(err, "transport", "the downstream sent invalid JSON: %s (byte %d)", je.text, je.position);
        return NULL;
    }
    if (held) *held = b.live > 0 ? (size_t)b.live : 0;
    return m;
}
