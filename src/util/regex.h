/* regex.h — the one way graphgate runs a PCRE2 match: under a match limit and a depth limit,
 * so a pathological pattern (catastrophic backtracking) ends in an error instead of holding a
 * thread. A pattern comes from a tenant (JSONata `$match`, a regex literal, a JSON Schema
 * `pattern`) or an operator (a node spec's validation_pattern); each use names its budget.
 *
 * Ownership: the contexts are made once, owned here and never freed (they hold no per-call
 * state). Threads: immutable after creation, so any thread may pass one to pcre2_match. */
#ifndef GG_UTIL_REGEX_H
#define GG_UTIL_REGEX_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

typedef enum {
    GG_REGEX_EXPRESSION, /* JSONata: a tenant's expression (2M steps, depth 20k) */
    GG_REGEX_SCHEMA,     /* JSON Schema `pattern` and spec validation patterns: per value checked (200k, 20k) */
    GG_REGEX_BUDGETS
} gg_regex_budget;

/* The shared match context of a budget; NULL only when its one allocation failed (the caller
 * then answers out of memory, never matches unbounded). */
pcre2_match_context *gg_regex_context(gg_regex_budget budget);

#endif
