/* tally.c — counts per name (tenant) with an optional bound: the one home of "how many of
 * these does this tenant hold" for the gateway's per-tenant caps (async branches, calls that
 * may wait downstream), auth's execution slots (gg_tenant_slots) and the downstream clients'
 * listen streams. A short list of the names
 * that hold any; an entry is freed when its count returns to 0, so the list never outgrows
 * the names in use. The caller serialises (each user already holds its own lock around the
 * count and the state it guards). */
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

struct gg_tally_entry {
    struct gg_tally_entry *next;
    int n;
    char name[];
};

static struct gg_tally_entry **find(gg_tally *t, const char *name) {
    struct gg_tally_entry **p = &t->head;
    while (*p && strcmp((*p)->name, name) != 0) p = &(*p)->next;
    return p;
}

int gg_tally_get(gg_tally *t, const char *name) {
    struct gg_tally_entry *e = *find(t, name);
    return e ? e->n : 0;
}

gg_tally_rc gg_tally_add(gg_tally *t, const char *name, int max) {
    struct gg_tally_entry **p = find(t, name);
    if (*p && max > 0 && (*p)->n >= max) return GG_TALLY_FULL;
    if (!*p) {
        size_t len = strlen(name);
        struct gg_tally_entry *e = malloc(sizeof *e + len + 1);
        if (!e) return GG_TALLY_OOM;
        memcpy(e->name, name, len + 1);
        e->n = 0;
        e->next = NULL;
        *p = e;
    }
    (*p)->n++;
    return GG_TALLY_OK;
}

void gg_tally_sub(gg_tally *t, const char *name) {
    struct gg_tally_entry **p = find(t, name);
    if (!*p || --(*p)->n > 0) return;
    struct gg_tally_entry *e = *p;
    *p = e->next;
    free(e);
}

void gg_tally_clear(gg_tally *t) {
    while (t->head) {
        struct gg_tally_entry *e = t->head;
        t->head = e->next;
        free(e);
    }
}
