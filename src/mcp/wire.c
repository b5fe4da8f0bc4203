/* wire.c — turning the bytes a downstream server sent into JSON without trusting them.
 * jansson materializes a message whole, and a small text can cost far more in memory than
 * its size ("[{},{},…]": several hundred bytes of heap per two bytes of input), so every
 * downstream message is parsed under a memory budget: the allocations of the parse are
 * counted (jansson allocates through jsonata_budget_malloc, see jl_value.c) and the parse
 * fails as soon as they pass the bound, before the heap grows. */
#include "mcp/loop.h"

#include <limits.h>

#include "jsonata/jsonata.h"

/* A lower bound on what jansson allocates for the text, in one linear pass and without
 * allocating: an object costs at least its struct and first hash table, an array its
 * struct and first slots, every other value a struct. Texts far past the budget (a few MB of
 * "[{},{},…]") are refused here without building anything; what the bound misses, the
 * budget of the parse itself still stops. */
static size_t parse_cost_floor(const char *buf, size_t len) {
    size_t cost = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char ch = buf[i];
        if (in_string) {
            if (ch == '\\') i++;
            else if (ch == '"') in_string = false;
            continue;
        }
        switch (ch) {
        case '"': in_string = true; cost += 32; break;
        case '{': cost += 160; break;
        case '[': cost += 96; break;
        case ',': cost += 16; break;
        default: break;
        }
    }
    return cost + len;
}

/* The parse runs with its own budget in place of any the thread had: a downstream answer
 * is charged to the exchange, not to whatever evaluation happens to run on this thread. */
json_t *mcp_wire_parse(const char *buf, size_t len, size_t max_alloc, size_t *held, gg_error *err) {
    if (held) *held = 0;
    if (parse_cost_floor(buf, len) > max_alloc) {
        gg_error_set(err, "transport", "the downstream message needs more than %zu bytes of memory to parse "
                     "(downstream.max_parse_bytes)", max_alloc);
        return NULL;
    }
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
