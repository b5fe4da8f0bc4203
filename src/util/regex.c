/* regex.c — the shared, limited PCRE2 match contexts (regex.h). */
#include "util/regex.h"

#include <pthread.h>

static const struct {
    uint32_t match, depth;
} LIMITS[GG_REGEX_BUDGETS] = {
    [GG_REGEX_EXPRESSION] = {2000000, 20000},
    [GG_REGEX_SCHEMA] = {200000, 20000},
};

/* Made once, then only read: the named context of this file. */
static struct {
    pthread_once_t once;
    pcre2_match_context *ctx[GG_REGEX_BUDGETS];
} regex_ctx = {PTHREAD_ONCE_INIT, {NULL}};

static void make_contexts(void) {
    for (int b = 0; b < GG_REGEX_BUDGETS; b++) {
        pcre2_match_context *c = pcre2_match_context_create(NULL);
        if (!c) continue;
        pcre2_set_match_limit(c, LIMITS[b].match);
        pcre2_set_depth_limit(c, LIMITS[b].depth);
        regex_ctx.ctx[b] = c;
    }
}

pcre2_match_context *gg_regex_context(gg_regex_budget budget) {
    if ((int)budget < 0 || budget >= GG_REGEX_BUDGETS) return NULL;
    pthread_once(&regex_ctx.once, make_contexts);
    return regex_ctx.ctx[budget];
}
