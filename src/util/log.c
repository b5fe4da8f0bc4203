/* log.c — structured JSON log lines. The logger is process-wide by nature (one stream),
 * so its state lives in one named context struct guarded by a mutex. */
#include "util/util.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct gg_log_context {
    pthread_mutex_t lock;
    FILE *out; /* NULL means stderr */
    gg_log_level min_level;
} gg_log_ctx = {PTHREAD_MUTEX_INITIALIZER, NULL, GG_LOG_INFO};

static const char *level_name(gg_log_level l) {
    switch (l) {
    case GG_LOG_DEBUG: return "debug";
    case GG_LOG_INFO: return "info";
    case GG_LOG_WARN: return "warn";
    default: return "error";
    }
}

/* Choose the minimum level and the destination. A path that cannot be opened leaves the
 * stream on stderr (and says so there). */
void gg_log_configure(gg_log_level min_level, const char *file_path) {
    pthread_mutex_lock(&gg_log_ctx.lock);
    gg_log_ctx.min_level = min_level;
    if (gg_log_ctx.out) fclose(gg_log_ctx.out);
    gg_log_ctx.out = NULL;
    if (file_path && *file_path) {
        gg_log_ctx.out = fopen(file_path, "a");
        if (!gg_log_ctx.out) fprintf(stderr, "graphgate: cannot open log file %s, logging to stderr\n", file_path);
        else setvbuf(gg_log_ctx.out, NULL, _IOLBF, 0);
    }
    pthread_mutex_unlock(&gg_log_ctx.lock);
}

bool gg_log_enabled(gg_log_level level) { return level >= gg_log_ctx.min_level; }

void gg_log_json_line(const char *json_line) {
    pthread_mutex_lock(&gg_log_ctx.lock);
    FILE *f = gg_log_ctx.out ? gg_log_ctx.out : stderr;
    fputs(json_line, f);
    fputc('\n', f);
    fflush(f);
    pthread_mutex_unlock(&gg_log_ctx.lock);
}

/* gg_log(level, msg, "key", "value", ..., NULL) */
void gg_log(gg_log_level level, const char *msg, ...) {
    if (!gg_log_enabled(level)) return;
    json_t *o = json_object();
    if (!o) return;
    char ts[GG_TIME_ISO_MAX];
    gg_time_iso8601(gg_wall_ms(), ts);
    json_object_set_new(o, "ts", json_string(ts));
    json_object_set_new(o, "level", json_string(level_name(level)));
    json_object_set_new(o, "msg", json_string(msg ? msg : ""));
    va_list ap;
    va_start(ap, msg);
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k) break;
        const char *v = va_arg(ap, const char *);
        json_object_set_new(o, k, v ? json_string(v) : json_null());
    }
    va_end(ap);
    char *line = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (line) {
        gg_log_json_line(line);
        free(line);
    }
}

double gg_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

struct timespec gg_wall_timespec_in_ms(long ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

void gg_time_iso8601(long long wall_ms, char out[GG_TIME_ISO_MAX]) {
    long long ms = wall_ms >= 0 ? wall_ms % 1000 : 0;
    time_t secs = (time_t)(wall_ms >= 0 ? wall_ms / 1000 : 0);
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) memset(&tm, 0, sizeof tm);
    snprintf(out, GG_TIME_ISO_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

long long gg_wall_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (long long)t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}
