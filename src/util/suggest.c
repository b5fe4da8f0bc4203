/* suggest.c — "did you mean ...?": the one home of the edit distance that turns a misspelt
 * name (an unknown tool in tools/call, an unknown key or node in a graph) into the closest
 * name that exists. Levenshtein over bytes with two rows; a candidate whose length alone
 * puts it past the threshold is skipped without filling a row. */
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* Edit distance of a (na bytes) and b (nb bytes), or limit + 1 once every entry of a row
 * exceeds limit (no later row can come back under it). row holds nb + 1 ints. */
static size_t distance(const char *a, size_t na, const char *b, size_t nb, size_t limit, size_t *row) {
    for (size_t j = 0; j <= nb; j++) row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0], best = row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j];
            size_t d = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < d) d = up + 1;
            if (row[j - 1] + 1 < d) d = row[j - 1] + 1;
            row[j] = d;
            diag = up;
            if (d < best) best = d;
        }
        if (best > limit) return limit + 1;
    }
    return row[nb];
}

const char *gg_closest(const char *word, const char *const *candidates, size_t n) {
    if (!word || !candidates) return NULL;
    size_t len = strlen(word), limit = len / 3 > 2 ? len / 3 : 2;
    const char *best = NULL;
    size_t best_d = limit + 1;
    for (size_t k = 0; k < n; k++) {
        const char *c = candidates[k];
        if (!c) continue;
        size_t nc = strlen(c);
        if ((nc > len ? nc - len : len - nc) >= best_d) continue;
        size_t *row = malloc((nc + 1) * sizeof *row);
        if (!row) return best; /* out of memory: the suggestion is a courtesy */
        size_t d = distance(word, len, c, nc, best_d - 1, row);
        free(row);
        if (d < best_d) best = c, best_d = d;
    }
    return best;
}

/* "; did you mean 'digest'?" when a name is close, and "; tools: a, b" (what = "tools")
 * while there are few enough to list; the tail of an unknown-name message. */
void gg_suggest(gg_strbuf *b, const char *word, const char *const *names, size_t n, const char *what) {
    const char *near = gg_closest(word, names, n);
    if (near) gg_strbuf_printf(b, "; did you mean '%s'?", near);
    if (n > GG_SUGGEST_LIST_MAX) return;
    bool first = true;
    for (size_t k = 0; k < n; k++) {
        if (!names[k]) continue;
        if (first) gg_strbuf_printf(b, "; %s: %s", what, names[k]);
        else gg_strbuf_printf(b, ", %s", names[k]);
        first = false;
    }
}
