/* secrets.c — ${secrets.NAME} in a server's url, headers, env and auth values.
 *
 * The compiled graph keeps the references, never values (the stored source is what was
 * uploaded). A value exists in the process only while a client is made (resolved through
 * gg_graph_options.secrets, the gateway's store, for the graph's own tenant) and in the list
 * kept for redaction. The client is made at one secrets generation: the first call after
 * the generation moved (a secret put, deleted or rekeyed, on any replica) makes a new one,
 * and the old one is retired, not freed — calls in flight on it finish there, and it is
 * freed once its call timeout has passed. So a rotated secret reaches the downstream
 * without a failed call and without an upload. A server without references pays nothing:
 * nsecrets is 0 and none of this runs.
 *
 * What a downstream answers on such a server is redacted: every value it was given (the
 * current and the retired clients') becomes "[secret:NAME]" in the result and in error
 * messages before they reach the run, its history, traces or the caller.
 */
#include <ctype.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "graph/internal.h"

#define REF_OPEN "${secrets."
#define NAME_MAX_LEN 64
#define SERVER_SECRETS_MAX 32 /* distinct names one server may use */
#define VALS_MAX 16           /* values remembered for redaction, newest kept */
#define RETIRE_GRACE_MS 5000  /* past the call timeout, before a retired client is freed */
#define USED_EVERY_MS 60000

typedef struct retired {
    gclient *h;
    double free_after_ms;
    struct retired *next;
} retired;

typedef struct gval {
    char *name, *value;
    size_t len;
} gval;

struct gsecrets {
    bool made;        /* a client was made at gen */
    long long gen;
    retired *retired;
    gval vals[VALS_MAX];
    size_t nvals;
    double used_ms;
};

static bool name_char(char c, bool first) { return isalpha((unsigned char)c) || c == '_' || (!first && isdigit((unsigned char)c)); }

/* See internal.h. */
bool gg_graph_secret_scan(gserver *s, const char *text, char *msg, size_t msglen) {
    for (const char *p = text ? strstr(text, REF_OPEN) : NULL; p; p = strstr(p, REF_OPEN)) {
        const char *n = p + strlen(REF_OPEN), *e = n;
        while (*e && e - n <= NAME_MAX_LEN && name_char(*e, e == n)) e++;
        if (*e != '}' || e == n || e - n > NAME_MAX_LEN) {
            snprintf(msg, msglen, "a secret reference is ${secrets.NAME}, NAME being [A-Za-z_][A-Za-z0-9_]{0,63}");
            return false;
        }
        size_t len = (size_t)(e - n);
        bool seen = false;
        for (size_t i = 0; i < s->nsecrets && !seen; i++) seen = strlen(s->secret_names[i]) == len && !strncmp(s->secret_names[i], n, len);
        if (!seen) {
            if (s->nsecrets == SERVER_SECRETS_MAX) {
                snprintf(msg, msglen, "a server may use at most %d secrets", SERVER_SECRETS_MAX);
                return false;
            }
            char **names = realloc(s->secret_names, (s->nsecrets + 2) * sizeof *names);
            if (!names || !(names[s->nsecrets] = strndup(n, len))) {
                if (names) s->secret_names = names;
                snprintf(msg, msglen, "out of memory");
                return false;
            }
            s->secret_names = names;
            names[++s->nsecrets] = NULL;
        }
        p = e + 1;
    }
    return true;
}

/* text with each ${secrets.NAME} replaced by its value (vals in s->secret_names' order). */
static char *expand(const gserver *s, const char *text, char *const *vals) {
    if (!text) return NULL;
    gg_strbuf b = GG_STRBUF_INIT;
    const char *p = text, *r;
    while ((r = strstr(p, REF_OPEN))) {
        gg_strbuf_append(&b, p, (size_t)(r - p));
        const char *n = r + strlen(REF_OPEN), *e = strchr(n, '}');
        size_t len = e ? (size_t)(e - n) : 0, i = 0;
        while (i < s->nsecrets && !(strlen(s->secret_names[i]) == len && !strncmp(s->secret_names[i], n, len))) i++;
        if (i < s->nsecrets) gg_strbuf_append(&b, vals[i], strlen(vals[i]));
        else gg_strbuf_append(&b, r, e ? (size_t)(e + 1 - r) : strlen(r)); /* scanned at load: cannot happen */
        p = e ? e + 1 : r + strlen(r);
    }
    gg_strbuf_append(&b, p, strlen(p));
    return gg_strbuf_take(&b);
}

static void wipe_free(char *p) {
    if (!p) return;
    sodium_memzero(p, strlen(p));
    free(p);
}

static char **expand_list(const gserver *s, const char *const *list, char *const *vals) {
    size_t n = 0;
    while (list && list[n]) n++;
    char **out = calloc(n + 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++) out[i] = expand(s, list[i], vals);
    return out;
}

/* A copy of the `auth` settings with every string's references expanded (new reference);
 * its expanded strings are wiped by wipe_json. */
static json_t *expand_json(const gserver *s, const json_t *auth, char *const *vals) {
    json_t *out = gg_json_clone(auth);
    const char *k;
    json_t *v;
    json_object_foreach(out, k, v) {
        const char *t = json_string_value(v);
        if (!t || !strstr(t, REF_OPEN)) continue;
        char *x = expand(s, t, vals);
        if (!x || json_object_set_new(out, k, json_string(x)) != 0) {
            wipe_free(x);
            json_decref(out);
            return NULL;
        }
        wipe_free(x);
    }
    return out;
}

static void wipe_json(json_t *o) {
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) if (json_is_string(v)) sodium_memzero((char *)json_string_value(v), json_string_length(v));
    json_decref(o);
}

static void free_list(char **list) {
    for (char **p = list; p && *p; p++) wipe_free(*p);
    free(list);
}

/* Remember name = value for redaction (the oldest forgotten past VALS_MAX). */
static void remember(struct gsecrets *sec, const char *name, const char *value) {
    size_t len = strlen(value);
    if (len < 4) return; /* "[secret:X]" for every "a" in an answer would redact nothing useful */
    for (size_t i = 0; i < sec->nvals; i++)
        if (sec->vals[i].len == len && !memcmp(sec->vals[i].value, value, len)) return;
    if (sec->nvals == VALS_MAX) {
        free(sec->vals[0].name);
        wipe_free(sec->vals[0].value);
        memmove(&sec->vals[0], &sec->vals[1], (VALS_MAX - 1) * sizeof sec->vals[0]);
        sec->nvals--;
    }
    gval *v = &sec->vals[sec->nvals];
    v->name = strdup(name);
    v->value = strdup(value);
    v->len = len;
    if (v->name && v->value) sec->nvals++;
    else {
        free(v->name);
        wipe_free(v->value);
    }
}

/* Make s's client from freshly resolved values; the previous one is retired. */
static mcp_client *make_client(gserver *s, const gg_graph_secrets *seam, long long gen, const mcp_client_policy *policy,
                               gg_error *err) {
    char **vals = calloc(s->nsecrets + 1, sizeof *vals);
    if (!vals) return gg_error_set(err, "oom", "out of memory"), NULL;
    bool ok = true;
    for (size_t i = 0; ok && i < s->nsecrets; i++) {
        vals[i] = seam->resolve(seam->user, s->owner ? s->owner : "", s->secret_names[i], err);
        if (!vals[i]) ok = false;
    }
    mcp_client *c = NULL;
    /* remembered first: an error making the client (a policy refusal quoting the url) is
     * redacted like an answer */
    for (size_t i = 0; ok && i < s->nsecrets; i++) remember(s->sec, s->secret_names[i], vals[i]);
    if (ok) {
        mcp_server_config cfg = s->cfg;
        char *url = expand(s, s->cfg.url, vals), **headers = expand_list(s, s->cfg.headers, vals),
             **env = expand_list(s, s->cfg.env, vals);
        json_t *auth = s->cfg.auth ? expand_json(s, s->cfg.auth, vals) : NULL;
        cfg.url = url;
        cfg.headers = (const char *const *)headers;
        cfg.env = (const char *const *)env;
        cfg.auth = auth;
        gclient *old = gg_graph_client_release(s);
        if (old) {
            retired *r = malloc(sizeof *r);
            if (r) {
                r->h = old;
                r->free_after_ms = gg_now_ms() + s->cfg.timeout_ms + RETIRE_GRACE_MS;
                r->next = s->sec->retired;
                s->sec->retired = r;
            } else gg_graph_client_leave(old, s); /* out of memory: its calls in flight fail */
        }
        if ((!s->cfg.url || url) && headers && env && (!s->cfg.auth || auth)) c = gg_graph_client_attach_cfg(s, &cfg, policy, err);
        else gg_error_set(err, "oom", "out of memory");
        wipe_json(auth);
        wipe_free(url);
        free_list(headers);
        free_list(env);
        if (c) {
            s->sec->made = true;
            s->sec->gen = gen;
        }
    }
    for (size_t i = 0; i < s->nsecrets; i++) wipe_free(vals[i]);
    free(vals);
    return c;
}

static char *redact_text(const struct gsecrets *sec, const char *text);

/* See internal.h. */
long long gg_graph_secrets_generation(const gserver *s) {
    const gg_graph_secrets *seam = s->graph ? s->graph->secrets : NULL;
    return seam ? seam->generation(seam->user) : 0;
}

/* See internal.h. */
bool gg_graph_secrets_resolve(gserver *s, gg_graph_resolved *out, gg_error *err) {
    memset(out, 0, sizeof *out);
    const gg_graph_secrets *seam = s->graph ? s->graph->secrets : NULL;
    if (!seam)
        return gg_error_set(err, "secret_missing", "server '%s' uses secret '%s', and no secrets are available here",
                            s->name ? s->name : "", s->secret_names[0]),
               false;
    if (!s->sec && !(s->sec = calloc(1, sizeof *s->sec))) return gg_error_set(err, "oom", "out of memory"), false;
    char **vals = calloc(s->nsecrets + 1, sizeof *vals);
    if (!vals) return gg_error_set(err, "oom", "out of memory"), false;
    out->gen = seam->generation(seam->user);
    bool ok = true;
    for (size_t i = 0; ok && i < s->nsecrets; i++)
        if (!(vals[i] = seam->resolve(seam->user, s->owner ? s->owner : "", s->secret_names[i], err))) ok = false;
    for (size_t i = 0; ok && i < s->nsecrets; i++) remember(s->sec, s->secret_names[i], vals[i]);
    if (ok) {
        out->url = expand(s, s->cfg.url, vals);
        out->headers = expand_list(s, s->cfg.headers, vals);
        out->env = expand_list(s, s->cfg.env, vals);
        out->auth = s->cfg.auth ? expand_json(s, s->cfg.auth, vals) : NULL;
        out->cfg = s->cfg;
        out->cfg.url = out->url;
        out->cfg.headers = (const char *const *)out->headers;
        out->cfg.env = (const char *const *)out->env;
        out->cfg.auth = out->auth;
        ok = (!s->cfg.url || out->url) && out->headers && out->env && (!s->cfg.auth || out->auth);
        if (!ok) gg_error_set(err, "oom", "out of memory");
    }
    for (size_t i = 0; i < s->nsecrets; i++) wipe_free(vals[i]);
    free(vals);
    if (!ok) gg_graph_secrets_resolved_free(out);
    return ok;
}

/* See internal.h. */
void gg_graph_secrets_resolved_free(gg_graph_resolved *r) {
    wipe_json(r->auth);
    wipe_free(r->url);
    free_list(r->headers);
    free_list(r->env);
    memset(r, 0, sizeof *r);
}

/* See internal.h. */
mcp_client *gg_graph_secrets_client(gserver *s, const mcp_client_policy *policy, gg_error *err) {
    const gg_graph_secrets *seam = s->graph ? s->graph->secrets : NULL;
    if (!seam) {
        gg_error_set(err, "secret_missing", "server '%s' uses secret '%s', and no secrets are available here",
                     s->name ? s->name : "", s->secret_names[0]);
        return NULL;
    }
    if (!s->sec && !(s->sec = calloc(1, sizeof *s->sec))) return gg_error_set(err, "oom", "out of memory"), NULL;
    long long gen = seam->generation(seam->user);
    mcp_client *c = s->client && s->sec->made && s->sec->gen == gen ? s->client : make_client(s, seam, gen, policy, err);
    char *t = !c && err->message ? redact_text(s->sec, err->message) : NULL;
    if (t) {
        wipe_free(err->message);
        err->message = t;
    }
    double now = gg_now_ms();
    if (c && seam->used && now - s->sec->used_ms >= USED_EVERY_MS) {
        s->sec->used_ms = now;
        seam->used(seam->user, s->owner ? s->owner : "", (const char *const *)s->secret_names, s->nsecrets);
    }
    return c;
}

/* See internal.h. Retired clients past their time, freed outside s->lock: freeing a client
 * waits for its reader, which may be delivering a notification that takes s->lock. */
void gg_graph_secrets_reclaim(gserver *s) {
    if (!s->nsecrets) return;
    retired *doomed = NULL;
    double now = gg_now_ms();
    pthread_mutex_lock(&s->lock);
    for (retired **p = s->sec ? &s->sec->retired : NULL; p && *p;) {
        retired *r = *p;
        if (r->free_after_ms <= now) {
            *p = r->next;
            r->next = doomed;
            doomed = r;
        } else p = &r->next;
    }
    pthread_mutex_unlock(&s->lock);
    while (doomed) {
        retired *r = doomed;
        doomed = r->next;
        gg_graph_client_leave(r->h, s);
        free(r);
    }
}

/* One string with every remembered value replaced; NULL when none occurs (no copy made). */
static char *redact_text(const struct gsecrets *sec, const char *text) {
    bool any = false;
    for (size_t i = 0; i < sec->nvals && !any; i++) any = strstr(text, sec->vals[i].value) != NULL;
    if (!any) return NULL;
    char *cur = strdup(text);
    for (size_t i = 0; cur && i < sec->nvals; i++) {
        const char *v = sec->vals[i].value;
        if (!strstr(cur, v)) continue;
        gg_strbuf b = GG_STRBUF_INIT;
        const char *p = cur, *r;
        while ((r = strstr(p, v))) {
            gg_strbuf_append(&b, p, (size_t)(r - p));
            gg_strbuf_printf(&b, "[secret:%s]", sec->vals[i].name);
            p = r + sec->vals[i].len;
        }
        gg_strbuf_append(&b, p, strlen(p));
        wipe_free(cur);
        cur = gg_strbuf_take(&b);
    }
    return cur;
}

/* v with its strings redacted, in place (v is the run's own copy). */
static void redact_in(const struct gsecrets *sec, json_t *v) {
    if (json_is_string(v)) {
        char *t = redact_text(sec, json_string_value(v));
        if (t) json_string_set(v, t);
        wipe_free(t);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) redact_in(sec, x);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) redact_in(sec, x);
    }
}

/* See internal.h. */
json_t *gg_graph_secrets_redact(gserver *s, json_t *v) {
    if (!v) return NULL;
    pthread_mutex_lock(&s->lock);
    json_t *out = s->sec && s->sec->nvals ? gg_json_clone(v) : json_incref(v);
    if (out && s->sec && s->sec->nvals) redact_in(s->sec, out);
    pthread_mutex_unlock(&s->lock);
    return out;
}

/* See internal.h. */
void gg_graph_secrets_redact_error(gserver *s, gg_error *err) {
    if (!err || !err->message) return;
    pthread_mutex_lock(&s->lock);
    char *t = s->sec ? redact_text(s->sec, err->message) : NULL;
    pthread_mutex_unlock(&s->lock);
    if (!t) return;
    wipe_free(err->message);
    err->message = t;
}

/* See internal.h. */
void gg_graph_secrets_free(gserver *s) {
    for (size_t i = 0; i < s->nsecrets; i++) free(s->secret_names[i]);
    free(s->secret_names);
    s->secret_names = NULL;
    if (!s->sec) return;
    for (retired *r = s->sec->retired, *next; r; r = next) {
        next = r->next;
        gg_graph_client_leave(r->h, s);
        free(r);
    }
    for (size_t i = 0; i < s->sec->nvals; i++) {
        free(s->sec->vals[i].name);
        wipe_free(s->sec->vals[i].value);
    }
    free(s->sec);
    s->sec = NULL;
}
