/* error.c — the error value every layer returns. */
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Record code and formatted message in e, replacing what it held. A NULL e is allowed so
 * callers that do not care about details can pass NULL. */
void gg_error_vset(gg_error *e, const char *code, const char *fmt, va_list ap) {
    if (!e) return;
    free(e->message);
    e->message = NULL;
    snprintf(e->code, sizeof e->code, "%s", code ? code : "error");
    if (fmt) {
        char *m = NULL;
        if (vasprintf(&m, fmt, ap) >= 0) e->message = m;
    }
}

void gg_error_set(gg_error *e, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gg_error_vset(e, code, fmt, ap);
    va_end(ap);
}

void gg_error_set_pos(gg_error *e, int line, int column) {
    if (!e) return;
    e->line = line;
    e->column = column;
}

void gg_error_set_path(gg_error *e, const char *path) {
    if (!e) return;
    free(e->path);
    e->path = path ? strdup(path) : NULL;
}

/* Release the message and path and mark e as "no error". */
void gg_error_clear(gg_error *e) {
    if (!e) return;
    free(e->message);
    free(e->path);
    e->message = NULL;
    e->path = NULL;
    e->code[0] = '\0';
    e->position = -1;
    e->line = e->column = 0;
}

/* Transfer src into dst (dst's old contents are released); src is left cleared. */
void gg_error_move(gg_error *dst, gg_error *src) {
    if (!dst || !src || dst == src) return;
    gg_error_clear(dst);
    *dst = *src;
    src->message = NULL;
    src->path = NULL;
    src->code[0] = '\0';
    src->position = -1;
    src->line = src->column = 0;
}

void gg_error_format(const gg_error *e, char *buf, size_t size) {
    if (!buf || size == 0) return;
    if (!e || !gg_error_is_set(e)) {
        snprintf(buf, size, "no error");
        return;
    }
    size_t n = 0;
    if (e->path) n += snprintf(buf + n, size - n, "%s:", e->path);
    if (n < size && e->line > 0) n += snprintf(buf + n, size - n, "%d:%d:", e->line, e->column);
    if (n < size && n > 0) n += snprintf(buf + n, size - n, " ");
    if (n < size) n += snprintf(buf + n, size - n, "%s: %s", e->code, e->message ? e->message : "");
    if (n < size && e->position >= 0) snprintf(buf + n, size - n, " (position %d)", e->position);
}
