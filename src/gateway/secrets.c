/* secrets.c — tenant secrets in the gateway: the master key, the admin REST routes, and the
 * seam through which graphs resolve ${secrets.NAME} (src/graph/secrets.c).
 *
 * PUT /admin/tenants/{t}/secrets/{name} {"value": "..."} seals the value (src/store/vault.c)
 * and never returns it; GET lists metadata (fingerprint, created, updated, last_used).
 * The routes take `graphs:write` for the key's own tenant, like the graph routes: a key of
 * another tenant gets the same 403 whether or not the secret exists.
 *
 * Every change bumps the store's secrets generation; this replica reads it right after its
 * own change and the watcher reads it every second (at once on a PostgreSQL NOTIFY), into
 * an atomic the graphs read on each call of a server that uses secrets.
 *
 * last_used: a graph reports a server's use at most once a minute; the reports wait here
 * and the watcher writes them in one transaction, so calls never write.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/authz.h"
#include "gateway/credentials.h"
#include "gateway/internal.h"

#define USED_PENDING_MAX 4096 /* reports kept between two watcher passes */

typedef struct gw_secrets {
    gg_gateway *gw;
    gg_store_vault vault;
    atomic_llong gen;
    gg_graph_secrets seam;
    pthread_mutex_t mu; /* guards the pending last_used reports */
    char **used_tenant, **used_name;
    size_t nused;
} gw_secrets;

/* ---- the seam ------------------------------------------------------------------------- */

static char *resolve(void *user, const char *tenant, const char *name, gg_error *err) {
    gw_secrets *s = user;
    if (!s->vault.ready) {
        gg_error_set(err, "secret_missing", "secret '%s' cannot be read: no secrets key is configured", name);
        return NULL;
    }
    size_t len = 0;
    char *v = gg_store_secret_reveal(s->gw->store, &s->vault, tenant, name, &len, err);
    if (!v && strcmp(err->code, "not_found") == 0) {
        gg_error_clear(err);
        gg_error_set(err, "secret_missing", "secret '%s' is not set", name);
    }
    return v;
}

static bool exists(void *user, const char *tenant, const char *name) {
    gw_secrets *s = user;
    gg_error err = GG_ERROR_INIT;
    json_t *m = gg_store_secret_meta(s->gw->store, tenant, name, &err);
    gg_error_clear(&err);
    json_decref(m);
    return m != NULL;
}

static long long generation(void *user) {
    gw_secrets *s = user;
    return atomic_load_explicit(&s->gen, memory_order_acquire);
}

static void used(void *user, const char *tenant, const char *const *names, size_t n) {
    gw_secrets *s = user;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < n && s->nused < USED_PENDING_MAX; i++) {
        char *t = strdup(tenant), *nm = strdup(names[i]);
        if (!t || !nm) {
            free(t);
            free(nm);
            break;
        }
        s->used_tenant[s->nused] = t;
        s->used_name[s->nused++] = nm;
    }
    pthread_mutex_unlock(&s->mu);
}

/* ---- life ----------------------------------------------------------------------------- */

/* The key from secrets.key or secrets.key_file (GRAPHGATE_SECRETS_KEY[_FILE] set those);
 * none configured is no error here. */
static bool load_key(gw_secrets *s, const gg_config *c, gg_error *err) {
    if (c->secrets_key && *c->secrets_key) return gg_store_vault_init(&s->vault, c->secrets_key, err);
    if (c->secrets_key_file && *c->secrets_key_file) return gg_store_vault_load_file(&s->vault, c->secrets_key_file, err);
    return true;
}

/* Stored secrets and per-user grants (sealed alike) need the key they were sealed with. */
static bool check_rows(gw_secrets *s, gg_error *err) {
    long long other = 0, gother = 0;
    long long n = gg_store_secrets_count(s->gw->store, s->vault.ready ? s->vault.key_id : NULL, &other, err);
    if (n < 0) return false;
    long long g = gg_store_user_grants_count(s->gw->store, s->vault.ready ? s->vault.key_id : NULL, &gother, err);
    if (g < 0) return false;
    n += g;
    other += gother;
    if (n > 0 && !s->vault.ready) {
        gg_error_set(err, "invalid_config",
                     "%lld tenant secret(s) are stored and no secrets key is configured (secrets.key_file, "
                     "GRAPHGATE_SECRETS_KEY_FILE or GRAPHGATE_SECRETS_KEY)", n);
        return false;
    }
    if (other > 0) {
        gg_error_set(err, "invalid_config",
                     "%lld of %lld tenant secret(s) were sealed under another key than the configured one (key id %s); "
                     "configure that key, or re-encrypt them: graphgate secret rekey", other, n, s->vault.key_id);
        return false;
    }
    return true;
}

static void refresh_gen(gw_secrets *s) {
    gg_error err = GG_ERROR_INIT;
    long long g = gg_store_generation_get(s->gw->store, GG_GEN_SECRETS, &err);
    gg_error_clear(&err);
    if (g >= 0) atomic_store_explicit(&s->gen, g, memory_order_release);
}

/* See credentials.h. */
void gw_secrets_check(gg_gateway *gw) {
    gw_secrets *s = gw->secrets;
    if (!s) return;
    refresh_gen(s);
    pthread_mutex_lock(&s->mu);
    size_t n = s->nused;
    char **t = s->used_tenant, **nm = s->used_name;
    if (n) {
        s->used_tenant = calloc(USED_PENDING_MAX, sizeof *t);
        s->used_name = calloc(USED_PENDING_MAX, sizeof *nm);
        if (!s->used_tenant || !s->used_name) { /* keep the old arrays; try again next pass */
            free(s->used_tenant);
            free(s->used_name);
            s->used_tenant = t;
            s->used_name = nm;
            n = 0;
        } else s->nused = 0;
    }
    pthread_mutex_unlock(&s->mu);
    if (!n) return;
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_secrets_touch(gw->store, (const char *const *)t, (const char *const *)nm, n, gg_wall_ms(), &err))
        gg_log(GG_LOG_WARN, "secrets last_used not recorded", "error", err.message ? err.message : err.code, NULL);
    gg_error_clear(&err);
    for (size_t i = 0; i < n; i++) {
        free(t[i]);
        free(nm[i]);
    }
    free(t);
    free(nm);
}

/* See credentials.h. */
const gg_graph_secrets *gw_secrets_seam(gg_gateway *gw) { return gw->secrets ? &gw->secrets->seam : NULL; }

/* See credentials.h. */
const gg_store_vault *gw_secrets_vault(gg_gateway *gw) {
    return gw->secrets && gw->secrets->vault.ready ? &gw->secrets->vault : NULL;
}

/* See credentials.h. */
void gw_secrets_free(gg_gateway *gw) {
    gw_secrets *s = gw->secrets;
    if (!s) return;
    gw->secrets = NULL;
    for (size_t i = 0; i < s->nused; i++) {
        free(s->used_tenant[i]);
        free(s->used_name[i]);
    }
    free(s->used_tenant);
    free(s->used_name);
    pthread_mutex_destroy(&s->mu);
    gg_store_vault_wipe(&s->vault);
    free(s);
}

/* ---- REST ------------------------------------------------------------------------------ */

static int answer_error(gg_http_res *res, gg_error *err) {
    gg_http_res_error_from(res, 0, err);
    gg_error_clear(err);
    return GG_HTTP_DONE;
}

/* The route's tenant and secret name, the caller allowed and the name well formed. */
static bool route_ok(gg_gateway *gw, gg_http_req *req, gg_http_res *res, gg_principal *pr, const char **t,
                     const char **name) {
    *t = gg_http_param(req, "t");
    if (name) *name = gg_http_param(req, "name");
    if (!gw_admin_allow_as(gw, req, res, *t, GG_SCOPE_GRAPHS_WRITE, pr) || !gw_admin_tenant_exists(gw, res, *t))
        return false;
    if (name && !gg_store_secret_name_ok(*name)) {
        gg_http_res_fail(res, "invalid_name", "a secret name is [A-Za-z_][A-Za-z0-9_]{0,63}");
        return false;
    }
    return true;
}

/* {"value": "<1..16384 bytes, no NUL>"} from the body: the value (borrowed from *in). */
static const char *body_value(gg_http_req *req, json_t **in, size_t *len, gg_error *err) {
    *in = gg_http_body_object(req, "{\"value\": \"...\"}", err);
    if (!*in) return NULL;
    const char *k;
    json_t *v;
    json_object_foreach(*in, k, v) if (strcmp(k, "value") != 0) {
        gg_error_set(err, "invalid_argument", "unknown member '%s' (allowed: value)", k);
        return NULL;
    }
    v = json_object_get(*in, "value");
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) != strlen(json_string_value(v))) {
        gg_error_set(err, "invalid_argument", "value must be a non-empty string without NUL characters");
        return NULL;
    }
    if (json_string_length(v) > GG_STORE_SECRET_VALUE_MAX) {
        gg_error_set(err, "too_large", "a secret value is at most %d bytes", GG_STORE_SECRET_VALUE_MAX);
        return NULL;
    }
    *len = json_string_length(v);
    return json_string_value(v);
}

static int secret_put(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gw_secrets *s = gw->secrets;
    gg_principal pr;
    const char *t, *name;
    if (!route_ok(gw, req, res, &pr, &t, &name)) return GG_HTTP_DONE;
    if (!s->vault.ready) {
        gg_http_res_fail(res, "unavailable", "no secrets key is configured (secrets.key_file, GRAPHGATE_SECRETS_KEY)");
        return GG_HTTP_DONE;
    }
    gg_error err = GG_ERROR_INIT;
    json_t *in = NULL;
    size_t len = 0;
    const char *value = body_value(req, &in, &len, &err);
    int created = value ? gg_store_secret_put(gw->store, &s->vault, t, name, value, len, &err) : -1;
    json_decref(in); /* the request body itself is the HTTP layer's to free */
    if (created < 0) return answer_error(res, &err);
    refresh_gen(s); /* this replica's clients see it on their next call */
    json_t *meta = gg_store_secret_meta(gw->store, t, name, &err);
    if (!meta) return answer_error(res, &err);
    gw_admin_audit(gw, &pr, t, created ? "secret.create" : "secret.update", name,
                   json_pack("{s:O}", "fingerprint", json_object_get(meta, "fingerprint")));
    json_object_set_new(meta, "tenant", json_string(t));
    gg_http_res_json(res, created ? 201 : 200, meta);
    return GG_HTTP_DONE;
}

static int secrets_list(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t;
    if (!route_ok(gw, req, res, &pr, &t, NULL)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *l = gg_store_secrets_list(gw->store, t, &err);
    if (!l) return answer_error(res, &err);
    gg_http_res_json(res, 200, json_pack("{s:s,s:o}", "tenant", t, "secrets", l));
    return GG_HTTP_DONE;
}

static int secret_get(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t, *name;
    if (!route_ok(gw, req, res, &pr, &t, &name)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *m = gg_store_secret_meta(gw->store, t, name, &err);
    if (!m) return answer_error(res, &err);
    json_object_set_new(m, "tenant", json_string(t));
    gg_http_res_json(res, 200, m);
    return GG_HTTP_DONE;
}

static int secret_delete(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t, *name;
    if (!route_ok(gw, req, res, &pr, &t, &name)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_secret_delete(gw->store, t, name, &err)) return answer_error(res, &err);
    refresh_gen(gw->secrets);
    gw_admin_audit(gw, &pr, t, "secret.delete", name, NULL);
    gg_http_res_json(res, 200, json_pack("{s:b}", "deleted", 1));
    return GG_HTTP_DONE;
}

/* See credentials.h. */
bool gw_secrets_start(gg_gateway *gw, gg_error *err) {
    gw_secrets *s = calloc(1, sizeof *s);
    if (!s || !(s->used_tenant = calloc(USED_PENDING_MAX, sizeof *s->used_tenant)) ||
        !(s->used_name = calloc(USED_PENDING_MAX, sizeof *s->used_name))) {
        if (s) free(s->used_tenant);
        free(s);
        return gg_error_set(err, "oom", "out of memory"), false;
    }
    s->gw = gw;
    pthread_mutex_init(&s->mu, NULL);
    s->seam = (gg_graph_secrets){resolve, exists, generation, used, s};
    gw->secrets = s;
    if (!load_key(s, gw->cfg, err) || !check_rows(s, err)) return false; /* gw_secrets_free at the gateway's */
    refresh_gen(s);
    static const struct {
        const char *method, *pattern;
        gg_http_handler fn;
    } routes[] = {
        {"PUT", "/admin/tenants/{t}/secrets/{name}", secret_put},
        {"GET", "/admin/tenants/{t}/secrets", secrets_list},
        {"GET", "/admin/tenants/{t}/secrets/{name}", secret_get},
        {"DELETE", "/admin/tenants/{t}/secrets/{name}", secret_delete},
    };
    gg_router *r = gg_http_server_router(gw->app->http);
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!gg_router_add(r, GG_LISTENER_PUBLIC, routes[i].method, routes[i].pattern, routes[i].fn, gw, err))
            return false;
    return true;
}
