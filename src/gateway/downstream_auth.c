/* downstream_auth.c — wires the OAuth client (src/auth/oauth_client.c) into the downstream
 * MCP client's auth seam (mcp_auth_provider, src/mcp/mcp.h): src/mcp may not include
 * src/auth, so the composition happens here, above both. The provider's own requests
 * (metadata, registration, tokens) pass the same egress policy as the MCP client's.
 *
 * Under `serve` every provider made is also kept in the gateway's gw_dsauth, so an admin
 * sees each downstream server's credential state (GET /admin/tenants/{t}/downstream) and
 * /metrics counts the providers' requests; `run` and `conformance-client` keep none.
 *
 * Threads: providers are made and destroyed on any thread that makes or frees a client;
 * the list is guarded by its mutex, taken before a client's own (never the other way).
 */
#include "auth/auth.h"
#include "gateway/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dsa_entry {
    struct gw_dsauth *reg;
    gg_oauth_client *c;
    char owner[GG_TENANT_MAX], name[128], url[512];
    struct dsa_entry *prev, *next;
} dsa_entry;

struct gw_dsauth {
    pthread_mutex_t mu;
    dsa_entry *live;
    unsigned long gone_requests, gone_failures; /* of providers already destroyed */
    bool closing;                               /* freed by the last destroy once set */
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

/* ---- a kept provider: forwards to its client, leaves the list when destroyed ---------------- */

static bool kept_headers(void *impl, const char *url, const char *method, char *out, size_t cap) {
    return gg_oauth_client_headers(((dsa_entry *)impl)->c, url, method, out, cap);
}

static void kept_challenge(void *impl, const char *url, int status, const char *www_authenticate, const char *dpop_nonce,
                           mcp_auth_done_fn done, void *user) {
    gg_oauth_client_challenge(((dsa_entry *)impl)->c, url, status, www_authenticate, dpop_nonce, done, user);
}

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

static bool make_provider(void *user, const json_t *settings, const char *url, const char *name, const char *owner,
                          const struct mcp_client_policy *policy, mcp_auth_provider *out, gg_error *err) {
    struct gw_dsauth *reg = user;
    gg_oauth_client_net net = {NULL, NULL, NULL};
    if (policy) net = (gg_oauth_client_net){net_url_ok, net_connect_ok, (void *)policy};
    gg_oauth_client *c = gg_oauth_client_new(settings, url, name, &net, err);
    if (!c) return false;
    dsa_entry *e = reg ? calloc(1, sizeof *e) : NULL;
    if (!e) { /* nothing kept: run, conformance-client (or out of memory: unlisted) */
        *out = (mcp_auth_provider){c, gg_oauth_client_headers, gg_oauth_client_challenge, gg_oauth_client_destroy};
        return true;
    }
    *e = (dsa_entry){.reg = reg, .c = c};
    gg_strcopy(e->owner, sizeof e->owner, owner);
    gg_strcopy(e->name, sizeof e->name, name);
    gg_strcopy(e->url, sizeof e->url, url);
    pthread_mutex_lock(&reg->mu);
    e->next = reg->live;
    if (reg->live) reg->live->prev = e;
    reg->live = e;
    pthread_mutex_unlock(&reg->mu);
    *out = (mcp_auth_provider){e, kept_headers, kept_challenge, kept_destroy};
    return true;
}

void gg_gateway_downstream_auth_install(void) { mcp_http_set_auth_factory(make_provider, NULL); }

/* ---- the gateway's list ----------------------------------------------------------------------- */

struct gw_dsauth *gw_dsauth_install(void) {
    struct gw_dsauth *reg = calloc(1, sizeof *reg);
    if (!reg) return NULL;
    pthread_mutex_init(&reg->mu, NULL);
    mcp_http_set_auth_factory(make_provider, reg);
    return reg;
}

void gw_dsauth_free(struct gw_dsauth *reg) {
    if (!reg) return;
    /* providers made from now on are kept nowhere (the factory must not point at a list
     * that is going; another gateway in this process would install its own again) */
    mcp_http_set_auth_factory(make_provider, NULL);
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
        if (strcmp(e->owner, tenant) != 0) continue;
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
