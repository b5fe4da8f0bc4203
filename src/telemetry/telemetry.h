/* telemetry.h — OpenTelemetry traces: W3C trace context (traceparent/tracestate), spans,
 * and a background exporter that sends them in batches over OTLP/HTTP (JSON encoding) with
 * libcurl.
 *
 * Ownership: there is one exporter per process, started and stopped by the composition root
 * (gg_tel_start/gg_tel_stop); everything else is plain values. A gg_span belongs to whoever
 * began it (on the stack or inside a job) and holds no heap memory; gg_span_end copies it
 * into the exporter's queue, preallocated at start, so no span allocates and no call waits
 * on the collector (a full queue drops the span and counts it). With telemetry off a span
 * only records "not recording": nothing is formatted, queued or allocated. Trace contexts
 * are values copied freely between threads.
 */
#ifndef GG_TELEMETRY_H
#define GG_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* ---- W3C trace context ---------------------------------------------------------------- */

#define GG_TRACESTATE_MAX 256 /* longer tracestate values are dropped, not cut */
#define GG_TRACEPARENT_LEN 55 /* "00-<32 hex>-<16 hex>-<2 hex>" */

typedef struct gg_trace_ctx {
    bool valid;
    uint8_t trace_id[16];
    uint8_t span_id[8]; /* the parent of whatever starts under this context */
    uint8_t flags;      /* bit 0: sampled */
    char state[GG_TRACESTATE_MAX];
} gg_trace_ctx;

/* Parse a traceparent header (version 00 layout; later versions by their first 55
 * characters, as the spec asks) and an optional tracestate. false (ctx invalid) when it is
 * malformed or an all-zero id. */
bool gg_trace_parse(gg_trace_ctx *ctx, const char *traceparent, const char *tracestate);
/* "00-trace-span-flags" into out (GG_TRACEPARENT_LEN + 1 bytes); "" when invalid. */
void gg_trace_format(const gg_trace_ctx *ctx, char *out);
/* The trace id as 32 lowercase hex digits into out (33 bytes); "" when invalid. */
void gg_trace_id_hex(const gg_trace_ctx *ctx, char *out);

/* ---- exporter ------------------------------------------------------------------------- */

typedef struct gg_tel_config {
    bool enabled;
    const char *endpoint;             /* OTLP/HTTP traces URL, e.g. http://host:4318/v1/traces */
    const char *const *headers;       /* "Name: value" lines, NULL-terminated (may be NULL) */
    double sampling_ratio;            /* new traces kept with this probability (0..1) */
    const char *service_name;         /* resource service.name */
    size_t queue_spans;               /* queue bound (0 = 2048) */
    size_t batch_spans;               /* spans per export request (0 = 256) */
    int flush_ms;                     /* export at least this often (0 = 1000) */
    int timeout_ms;                   /* per export request (0 = 5000) */
    size_t value_max;                 /* > 0: node spans carry input/output, cut to this */
} gg_tel_config;

/* Start the exporter thread (nothing when cfg->enabled is false). err "invalid_config". */
bool gg_tel_start(const gg_tel_config *cfg, gg_error *err);
/* Flush what is queued (one bounded attempt) and stop. */
void gg_tel_stop(void);
/* True while the exporter runs: the one check every hot path makes. */
bool gg_tel_enabled(void);
/* > 0: node spans may carry inputs and outputs cut to this many bytes. */
size_t gg_tel_value_max(void);

typedef struct gg_tel_stats {
    unsigned long long ended;    /* spans handed to the exporter */
    unsigned long long exported; /* accepted by the collector */
    unsigned long long dropped;  /* queue full */
    unsigned long long failed;   /* in batches the collector refused or never answered */
    unsigned long long queued;   /* waiting now */
} gg_tel_stats;
void gg_tel_get_stats(gg_tel_stats *s);
/* Prometheus text for /metrics. */
void gg_tel_metrics(gg_strbuf *out);

/* ---- spans ---------------------------------------------------------------------------- */

typedef enum { GG_SPAN_INTERNAL = 1, GG_SPAN_SERVER = 2, GG_SPAN_CLIENT = 3 } gg_span_kind;

#define GG_SPAN_ATTRS_MAX 2048

typedef struct gg_span {
    bool recording;       /* false: every call below is a no-op */
    gg_trace_ctx ctx;     /* this span's context: children start under it */
    uint8_t parent[8];
    bool has_parent;
    uint8_t kind;
    char name[96];
    long long start_ns, end_ns; /* unix nanoseconds */
    int status;                 /* 0 unset, 1 ok, 2 error */
    char status_msg[160];
    size_t attrs_len;
    char attrs[GG_SPAN_ATTRS_MAX]; /* rendered OTLP KeyValue objects, comma separated */
} gg_span;

/* Begin a span under parent (NULL or invalid: a new trace, kept by the sampling ratio;
 * otherwise the parent's sampled flag decides). Telemetry off: s->recording is false and
 * s->ctx is the parent's, so a client's trace id still passes through. */
void gg_span_begin(gg_span *s, const gg_trace_ctx *parent, gg_span_kind kind, const char *name);
/* The same with an explicit start (unix ns), for spans known only once they ended. */
void gg_span_begin_at(gg_span *s, const gg_trace_ctx *parent, gg_span_kind kind, const char *name,
                      long long start_ns);
void gg_span_attr_str(gg_span *s, const char *key, const char *value);
void gg_span_attr_int(gg_span *s, const char *key, long long value);
void gg_span_attr_bool(gg_span *s, const char *key, bool value);
/* An error status with its message (cut to fit). */
void gg_span_set_error(gg_span *s, const char *message);
void gg_span_set_ok(gg_span *s);
/* End now / at end_ns and hand the span to the exporter (dropped when the queue is full). */
void gg_span_end(gg_span *s);
void gg_span_end_at(gg_span *s, long long end_ns);

/* Wall clock in unix nanoseconds; a monotonic gg_now_ms() instant converted to it. */
long long gg_tel_wall_ns(void);
long long gg_tel_mono_to_wall_ns(double mono_ms);

#endif
