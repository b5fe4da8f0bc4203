/* downstream_auth.c — wires the OAuth client (src/auth/oauth_client.c) into the downstream
 * MCP client's auth seam (mcp_auth_provider, src/mcp/mcp.h): src/mcp may not include
 * src/auth, so the composition happens here, above both. The provider's own requests
 * (metadata, registration, tokens) pass the same egress policy as the MCP client's.
 *
 * Under `serve` every provider made is also kept in the gateway's gw_dsauth, so an admin
 * sees each downstream server's credential state (GET /admin/tenants/{t}/downstream) and
 * /metrics counts the providers' requests; `run` and `conformance-client` keep none.
 *
 * A server whose `auth` says per_user has one provider per (server, principal) (the graph
 * keeps a client per caller, src/graph/clients.c): it starts from the principal's grant in
 * the store (sealed with the secrets key), writes it back after a refresh and deletes it
 * when the refresh is refused; with none the call asks for consent (consent.c). The admin
 * view counts such grants per server instead of listing each user's provider.
 *
 * Threads: providers are made and destroyed on any thread that makes or frees a client;
 * the list is guarded by its mutex, taken before a client's own (never the other way).
 */
#include "auth/auth.h"
#include "gateway/credentials.h"
#include "gateway/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dsa_entry {
    struct gw_dsauth *reg;
    gg_oauth_client *c;
    char owner[GG_TENANT_MAX], name[128], url[512];
    char principal[GG_KEY_ID_LEN + 1]; /* per_user: whose grant it holds; "" = a shared client */
    bool for_caller;                   /* mcp_auth_for_caller: principal is the caller it acts for */
    struct dsa_entry *prev, *next;
} dsa_entry;

struct gw_dsauth {
    pthread_mutex_t mu;
    dsa_entry *live;
    unsigned long gone_requests, gone_failures; /* of providers already destroyed */
    bool closing;                               /* freed by the last destroy once set */
    gg_gateway *gw;                             /* the store and key of per-user grants */
};

static bool net_url_ok(void *ctx, const char *url, char *why, size_t n) {
    gg_error e = GG_ERROR_INIT;
    bool ok = mcp_policy_check_url(ctx, url, &e) || !strcmp(e.code, "dns"); /* resolved and checked at connect */
    if (!ok) snprintf(why, n, "%s", e.message ? e.message : "refused by policy");
    gg_error_clear(&e);
    return ok;
}

static bool net_connect_ok(void *ctx, const char *url, const struct sockaddr *sa, char *why, size_t n) {
    gg_error e = GG_ERROR_INIT;
    bool ok = mcp_policy_connect_ok(ctx, url, sa, &e);
    if (!ok) snprintf(why, n, "%s", e.message ? e.message : "refused by policy");
    gg_error_clear(&e);
    return ok;
}

/* See credentials.h. */
gg_oauth_client_net gw_dsauth_net(const mcp_client_policy *policy) {
    return (gg_oauth_client_net){net_url_ok, net_connect_ok, (void *)policy};
}

/* ---- a kept provider: forwards to its client, leaves the list when destroyed ---------------- */

static bool kept_headers(void *impl, const char *url, const char *method, char *out, size_t cap) {
    return gg_oauth_client_headers(((dsa_entry *)impl)->c, url, method, out, cap);
}

static void kept_challenge(void *impl, const char *url, int status, const char *www_authenticate, const char *dpop_nonce,
                           mcp_auth_done_fn done, void *user) {
    gg_oauth_client_challenge(((dsa_entry *)impl)->c, url, status, www_authenticate, dpop_nonce, done, user);
}

static void kept_subject(void *impl, const char *token) { gg_oauth_client_subject(((dsa_entry *)impl)->c, token); }

static void counts_of(gg_oauth_client *c, unsigned long *requests, unsigned long *failures) {
    json_t *s = gg_oauth_client_state(c);
    *requests = (unsigned long)json_integer_value(json_object_get(s, "fetches"));
    *failures = (unsigned long)json_integer_value(json_object_get(s, "failures"));
    json_decref(s);
}

static void kept_destroy(void *impl) {
    dsa_entry *e = impl;
    struct gw_dsauth *reg = e->reg;
    unsigned long rq, fl;
    pthread_mutex_lock(&reg->mu);
    counts_of(e->c, &rq, &fl);
    reg->gone_requests += rq;
    reg->gone_failures += fl;
    if (e->prev) e->prev->next = e->next;
    else reg->live = e->next;
    if (e->next) e->next->prev = e->prev;
    bool last = reg->closing && !reg->live;
    pthread_mutex_unlock(&reg->mu);
    gg_oauth_client_free(e->c);
    free(e);
    if (last) {
        pthread_mutex_destroy(&reg->mu);
        free(reg);
    }
}

/* ---- per-user grants (helper threads of the client: after a refresh, or when it failed) ---- */

static void grant_saved(void *user, const char *grant, long long expires_ms) {
    dsa_entry *e = user;
    gg_gateway *gw = e->reg->gw;
    const gg_store_vault *v = gw_secrets_vault(gw);
    gg_error err = GG_ERROR_INIT;
    if (!v || gg_store_user_grant_put(gw->store, v, e->owner, e->name, e->principal, grant, strlen(grant), expires_ms,
                                      &err) < 0)
        gg_log(GG_LOG_WARN, "a refreshed per-user grant was not stored", "server", e->name, "error",
               err.message ? err.message : "no secrets key", NULL);
    gg_error_clear(&err);
}

static void grant_dropped(void *user) {
    dsa_entry *e = user;
    gg_error err = GG_ERROR_INIT;
    if (gg_store_user_grant_delete(e->reg->gw->store, e->owner, e->name, e->principal, &err) < 0)
        gg_log(GG_LOG_WARN, "a refused per-user grant was not deleted", "server", e->name, "error",
               err.message ? err.message : err.code, NULL);
    gg_error_clear(&err);
}

/* The principal's stored grant (malloc'd), or NULL. */
static char *grant_load(void *user, size_t *len) {
    dsa_entry *e = user;
    gg_gateway *gw = e->reg->gw;
    const gg_store_vault *v = gw_secrets_vault(gw);
    gg_error ge = GG_ERROR_INIT;
    char *g = v ? gg_store_user_grant_get(gw->store, v, e->owner, e->name, e->principal, len, &ge) : NULL;
    if (!g && v && strcmp(ge.code, "not_found"))
        gg_log(GG_LOG_WARN, "a per-user grant could not be read: consent is asked again", "server", e->name, "error",
               ge.message ? ge.message : ge.code, NULL);
    gg_error_clear(&ge);
    return g;
}

/* A per-user client starts from its principal's stored grant (none: the first call asks). */
static bool seed_user(dsa_entry *e, gg_error *err) {
    if (!gw_secrets_vault(e->reg->gw))
        return gg_error_set(err, "invalid_config",
                            "server '%s': auth.per_user keeps each user's grant sealed with the secrets key, and none is "
                            "configured (secrets.key_file)",
                            e->name),
               false;
    size_t len = 0;
    char *g = grant_load(e, &len);
    if (g) gg_oauth_client_seed(e->c, g, len);
    gg_store_secret_free(g, len);
    gg_oauth_client_set_store(e->c, &(gg_oauth_client_store){grant_load, grant_saved, grant_dropped, e});
    return true;
}

static bool make_provider(void *user, const json_t *settings, const char *url, const char *name, const char *owner,
                          const char *principal, const struct mcp_client_policy *policy, mcp_auth_provider *out,
                          gg_error *err) {
    struct gw_dsauth *reg = user;
    bool per_user = json_is_true(json_object_get(settings, "per_user"));
    /* on behalf of the caller (token_exchange, id_jag with subject: caller): a provider per
     * (server, principal) too, whose token is exchanged for each call's caller's own (nothing
     * stored: it lives in this provider's memory only) */
    const char *type = json_string_value(json_object_get(settings, "type"));
    if (mcp_auth_for_caller(settings) && (!principal || !*principal || strlen(principal) > GG_KEY_ID_LEN))
        return gg_error_set(err, "principal_required",
                            "server '%s' is called on behalf of the caller (auth.type %s): no user called",
                            name ? name : url, type),
               false;
    if (per_user && (!principal || !*principal || strlen(principal) > GG_KEY_ID_LEN))
        return gg_error_set(err, "principal_required", "server '%s' acts for each user (auth.per_user): no user called",
                            name ? name : url),
               false;
    if (per_user && (!reg || !reg->gw || !owner))
        return gg_error_set(err, "invalid_config", "server '%s': auth.per_user works under graphgate serve only",
                            name ? name : url),
               false;
    gg_oauth_client_net net = policy ? gw_dsauth_net(policy) : (gg_oauth_client_net){NULL, NULL, NULL};
    gg_oauth_client *c = gg_oauth_client_new(settings, url, name, &net, err);
    if (!c) return false;
    dsa_entry *e = reg ? calloc(1, sizeof *e) : NULL;
    if (!e && per_user) {
        gg_oauth_client_free(c);
        return gg_error_set(err, "oom", "out of memory"), false;
    }
    if (!e) { /* nothing kept: run, conformance-client (or out of memory: unlisted) */
        *out = (mcp_auth_provider){c, gg_oauth_client_headers, gg_oauth_client_challenge, gg_oauth_client_destroy,
                                   gg_oauth_client_subject};
        return true;
    }
    *e = (dsa_entry){.reg = reg, .c = c};
    gg_strcopy(e->owner, sizeof e->owner, owner);
    gg_strcopy(e->name, sizeof e->name, name);
    gg_strcopy(e->url, sizeof e->url, url);
    if (principal && *principal && !per_user) /* for the caller: listed as a user's, never seeded */
        gg_strcopy(e->principal, sizeof e->principal, principal);
    e->for_caller = mcp_auth_for_caller(settings);
    if (per_user) {
        gg_strcopy(e->principal, sizeof e->principal, principal);
        if (!seed_user(e, err)) {
            gg_oauth_client_free(c);
            free(e);
            return false;
        }
    }
    pthread_mutex_lock(&reg->mu);
    e->next = reg->live;
    if (reg->live) reg->live->prev = e;
    reg->live = e;
    pthread_mutex_unlock(&reg->mu);
    *out = (mcp_auth_provider){e, kept_headers, kept_challenge, kept_destroy, kept_subject};
    return true;
}

void gg_gateway_downstream_auth_install(mcp_downstream *ds) { mcp_http_set_auth_factory(ds, make_provider, NULL); }

/* ---- the gateway's list ----------------------------------------------------------------------- */

struct gw_dsauth *gw_dsauth_install(gg_gateway *gw) {
    struct gw_dsauth *reg = calloc(1, sizeof *reg);
    if (!reg) return NULL;
    reg->gw = gw;
    pthread_mutex_init(&reg->mu, NULL);
    mcp_http_set_auth_factory(gw->downstream, make_provider, reg);
    return reg;
}

void gw_dsauth_free(struct gw_dsauth *reg) {
    if (!reg) return;
    /* providers made from now on (by a client of the gateway's context still held elsewhere)
     * are kept nowhere: the factory must not point at a list that is going */
    mcp_http_set_auth_factory(reg->gw->downstream, make_provider, NULL);
    pthread_mutex_lock(&reg->mu);
    reg->closing = true;
    bool now = !reg->live; /* else the last provider's destroy frees it */
    pthread_mutex_unlock(&reg->mu);
    if (now) {
        pthread_mutex_destroy(&reg->mu);
        free(reg);
    }
}

json_t *gw_dsauth_tenant(struct gw_dsauth *reg, const char *tenant) {
    json_t *out = json_array();
    if (!reg || !out) return out;
    pthread_mutex_lock(&reg->mu);
    for (dsa_entry *e = reg->live; e; e = e->next) {
        if (strcmp(e->owner, tenant) != 0 || e->principal[0]) continue; /* users' grants: counted instead */
        json_t *s = gg_oauth_client_state(e->c);
        if (!s) continue;
        json_object_set_new(s, "server", json_string(e->name));
        json_object_set_new(s, "url", json_string(e->url));
        json_object_set_new(s, "requests", json_incref(json_object_get(s, "fetches")));
        json_object_del(s, "fetches");
        json_array_append_new(out, s);
    }
    pthread_mutex_unlock(&reg->mu);
    return out;
}

/* The summary row of server (name, url) in out, made on first sight. */
static json_t *caller_row(json_t *out, const dsa_entry *e) {
    size_t i;
    json_t *r;
    json_array_foreach(out, i, r) {
        if (!strcmp(json_string_value(json_object_get(r, "server")), e->name) &&
            !strcmp(json_string_value(json_object_get(r, "url")), e->url))
            return r;
    }
    r = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i}", "server", e->name, "url", e->url, "callers", 0, "valid", 0, "requests",
                  0, "failures", 0);
    return r && !json_array_append_new(out, r) ? r : NULL;
}

static void add_to(json_t *row, const char *key, json_int_t n) {
    json_object_set_new(row, key, json_integer(json_integer_value(json_object_get(row, key)) + n));
}

/* One caller's client folded into its server's row: counts, and the newest failure (its
 * reason is the client's own message, which never carries a token). */
static void fold_caller(json_t *row, json_t *s) {
    add_to(row, "callers", 1);
    add_to(row, "valid", !strcmp(json_string_value(json_object_get(s, "state")), "valid"));
    add_to(row, "requests", json_integer_value(json_object_get(s, "fetches")));
    add_to(row, "failures", json_integer_value(json_object_get(s, "failures")));
    json_int_t at = json_integer_value(json_object_get(s, "last_failure_ms"));
    if (at && at > json_integer_value(json_object_get(row, "last_failure_ms"))) {
        json_object_set(row, "last_failure", json_object_get(s, "last_failure"));
        json_object_set_new(row, "last_failure_ms", json_integer(at));
    }
}

json_t *gw_dsauth_for_callers(struct gw_dsauth *reg, const char *tenant) {
    json_t *out = json_array();
    if (!reg || !out) return out;
    pthread_mutex_lock(&reg->mu);
    for (dsa_entry *e = reg->live; e; e = e->next) {
        if (!e->for_caller || strcmp(e->owner, tenant) != 0) continue;
        json_t *row = caller_row(out, e), *s = row ? gg_oauth_client_state(e->c) : NULL;
        if (s) fold_caller(row, s);
        json_decref(s);
    }
    pthread_mutex_unlock(&reg->mu);
    return out;
}

void gw_dsauth_metrics(struct gw_dsauth *reg, gg_strbuf *out) {
    if (!reg) return;
    unsigned long rq, fl, live = 0;
    pthread_mutex_lock(&reg->mu);
    rq = reg->gone_requests;
    fl = reg->gone_failures;
    for (dsa_entry *e = reg->live; e; e = e->next, live++) {
        unsigned long a, b;
        counts_of(e->c, &a, &b);
        rq += a;
        fl += b;
    }
    pthread_mutex_unlock(&reg->mu);
    gg_strbuf_printf(out,
                     "# HELP graphgate_downstream_oauth_clients Downstream servers with OAuth credentials (auth:) in use.\n"
                     "# TYPE graphgate_downstream_oauth_clients gauge\n"
                     "graphgate_downstream_oauth_clients %lu\n"
                     "# HELP graphgate_downstream_oauth_requests_total Requests of the downstream OAuth clients "
                     "(metadata, registration, tokens, refreshes).\n"
                     "# TYPE graphgate_downstream_oauth_requests_total counter\n"
                     "graphgate_downstream_oauth_requests_total %lu\n"
                     "# HELP graphgate_downstream_oauth_failures_total Those that failed.\n"
                     "# TYPE graphgate_downstream_oauth_failures_total counter\n"
                     "graphgate_downstream_oauth_failures_total %lu\n",
                     live, rq, fl);
}
