/* consent.c — per-user consent for downstream servers (`auth.per_user: true`, issue 27).
 *
 * A graph's call of such a server by a user U (an OAuth principal) who holds no grant for it
 * ends with a URL elicitation (-32042, MCP 2025-11-25) naming graphgate's connect page:
 *
 *   GET /oauth/connect?state=S0   S0 sealed (src/auth/oauth_consent.c): tenant, U, server,
 *                                 the server's URL and configured client, an expiry
 *     → the browser signs in at the tenant's own authorization server (the one U's token
 *       came from): authorization code + PKCE for the tenant's console resource, S1 carrying
 *       the exchange and S0
 *   GET /oauth/callback?code&state=S1
 *     → the code exchanged, the token verified as any console token is (gg_oauth_verify):
 *       whoever signed in must be U (issuer and subject, through the principal's key_id),
 *       else 403 and nothing stored — the elicitation spec's phishing rule: a URL forwarded
 *       to, or opened by, someone else never binds their account to U's calls;
 *     → then the downstream's authorization (discovery, a client, PKCE, `resource` = the
 *       server, RFC 8707), S2 carrying its exchange
 *   GET /oauth/callback?code&state=S2
 *     → the code exchanged, the grant sealed into the store for (tenant, server, U); a page
 *       says to return to the client, whose retry of the tool call then goes through.
 *
 * Nothing is kept between the steps but the sealed states (any replica can take any step);
 * a state is single-use per replica (a replayed callback is refused) and expires after
 * CONSENT_TTL_MS. The network round-trips (discovery, registration, code exchanges) run on
 * helper threads (at most HELPERS_MAX at once) with the request deferred: no HTTP thread
 * waits on another server. No token, code or secret is logged or shown.
 */
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/authz.h"
#include "gateway/credentials.h"
#include "gateway/internal.h"
#include "gateway/relay.h"

#define CONSENT_TTL_MS (10 * 60 * 1000)
#define HELPERS_MAX 16
#define USED_MAX 1024
#define CALLBACK_PATH "/oauth/callback"
#define CONNECT_PATH "/oauth/connect"

struct gw_consent {
    gg_gateway *gw;
    bool ready; /* a secrets key is configured: the state key derives from it */
    unsigned char key[GG_OAUTH_CONSENT_KEY_BYTES];
    pthread_mutex_t mu; /* guards what follows */
    pthread_cond_t cv;
    int helpers;
    struct {
        char id[33];
        int leg;
        long long expires_ms;
    } used[USED_MAX]; /* callbacks' states already taken (a ring) */
    size_t used_next;
};

static const char *base(gg_gateway *gw) {
    return atomic_load_explicit(&gw->public_base_ready, memory_order_acquire) ? gw->public_base : "";
}

/* ---- pages ------------------------------------------------------------------------------- */

static void html_escaped(gg_strbuf *b, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '<': gg_strbuf_puts(b, "&lt;"); break;
        case '>': gg_strbuf_puts(b, "&gt;"); break;
        case '&': gg_strbuf_puts(b, "&amp;"); break;
        case '"': gg_strbuf_puts(b, "&quot;"); break;
        case '\'': gg_strbuf_puts(b, "&#39;"); break;
        default: gg_strbuf_printf(b, "%c", *s);
        }
    }
}

/* The headers of every answer: nothing cached, no referrer (the URLs carry states and codes),
 * no script, no framing. */
static void safe_headers(gg_http_res *res) {
    gg_http_res_header(res, "Cache-Control", "no-store");
    gg_http_res_header(res, "Referrer-Policy", "no-referrer");
    gg_http_res_header(res, "Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    gg_http_res_header(res, "X-Content-Type-Options", "nosniff");
}

static void page(gg_http_res *res, int status, const char *title, const char *text) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "<!doctype html><html><head><meta charset=\"utf-8\"><title>");
    html_escaped(&b, title);
    gg_strbuf_puts(&b, "</title></head><body style=\"font-family:sans-serif;max-width:40em;margin:3em auto\"><h1>");
    html_escaped(&b, title);
    gg_strbuf_puts(&b, "</h1><p>");
    html_escaped(&b, text);
    gg_strbuf_puts(&b, "</p></body></html>\n");
    safe_headers(res);
    size_t len = b.len;
    gg_http_res_bytes_take(res, status, "text/html; charset=utf-8", gg_strbuf_take(&b), len);
}

static void redirect(gg_http_res *res, const char *url) {
    safe_headers(res);
    gg_http_res_header(res, "Location", url);
    gg_http_res_bytes(res, 302, "text/plain; charset=utf-8", "", 0);
}

/* ---- the elicitation (the graphs' hook) --------------------------------------------------- */

static bool copy_setting(const json_t *auth, const char *k, char *out, size_t cap) {
    const char *v = json_string_value(json_object_get(auth, k));
    if (!v) return true;
    if (strlen(v) >= cap) return false;
    strcpy(out, v);
    return true;
}

/* See credentials.h. */
json_t *gw_consent_elicitation(void *user, const char *tenant, const char *server, const char *url, const json_t *auth,
                               const mcp_caller *who) {
    gg_gateway *gw = user;
    struct gw_consent *k = gw->consent;
    const char *b = base(gw);
    if (!k || !k->ready || !b[0] || !who || !who->key_id || !url || strlen(url) >= sizeof ((gg_oauth_consent *)0)->resource)
        return NULL;
    gg_oauth_consent cs;
    char challenge[GG_OAUTH_PKCE_CHALLENGE_LEN + 1];
    if (!gg_oauth_consent_new(&cs, tenant, who->key_id, server, gg_wall_ms() + CONSENT_TTL_MS, challenge)) return NULL;
    strcpy(cs.resource, url);
    bool ok = copy_setting(auth, "client_id", cs.client_id, sizeof cs.client_id) &&
              copy_setting(auth, "client_secret", cs.client_secret, sizeof cs.client_secret) &&
              copy_setting(auth, "scope", cs.scope, sizeof cs.scope) &&
              copy_setting(auth, "token_endpoint_auth_method", cs.auth_method, sizeof cs.auth_method);
    if (who->session && strlen(who->session) < sizeof cs.session) strcpy(cs.session, who->session);
    char *state = ok ? gg_oauth_consent_seal(k->key, &cs) : NULL;
    char id[sizeof cs.elicitation_id];
    memcpy(id, cs.elicitation_id, sizeof id);
    sodium_memzero(&cs, sizeof cs);
    if (!state) return NULL;
    gg_strbuf u = GG_STRBUF_INIT;
    gg_strbuf_printf(&u, "%s" CONNECT_PATH "?state=%s", b, state);
    free(state);
    json_t *data = u.data ? gg_oauth_consent_elicitation(u.data, id, server) : NULL;
    gg_strbuf_free(&u);
    return data;
}

/* ---- helpers: the network legs run off the HTTP threads ----------------------------------- */

typedef struct job {
    struct gw_consent *k;
    gg_http_async *a;
    gg_oauth_consent cs; /* the state opened */
    char code[1024], iss[512];
    bool has_iss;
} job;

static void job_free(job *j) {
    sodium_memzero(j, sizeof *j);
    free(j);
}

/* A client of gateway-chosen settings for one leg: the tenant's sign-in (no egress policy:
 * graphgate's own metadata and the tenant's configured issuer), or the downstream's (the
 * tenant's policy, as the graph's client has). */
static gg_oauth_client *leg_client(gg_gateway *gw, const gg_oauth_consent *cs, const char *server_url, bool downstream,
                                   gg_error *err) {
    json_t *s = json_pack("{s:s}", "type", "oauth");
    if (downstream && cs->client_id[0]) json_object_set_new(s, "client_id", json_string(cs->client_id));
    if (downstream && cs->client_secret[0]) json_object_set_new(s, "client_secret", json_string(cs->client_secret));
    if (downstream && cs->scope[0]) json_object_set_new(s, "scope", json_string(cs->scope));
    if (downstream && cs->auth_method[0]) json_object_set_new(s, "token_endpoint_auth_method", json_string(cs->auth_method));
    gg_oauth_client_net net = {NULL, NULL, NULL};
    const mcp_client_policy *pol = downstream ? mcp_policy_set_get(gw->policies, cs->tenant) : NULL;
    if (pol) net = gw_dsauth_net(pol);
    gg_oauth_client *c = s ? gg_oauth_client_new(s, server_url, downstream ? cs->server : "sign-in", &net, err) : NULL;
    const char *cs_secret = json_string_value(json_object_get(s, "client_secret"));
    if (cs_secret) sodium_memzero((char *)cs_secret, strlen(cs_secret));
    json_decref(s);
    return c;
}

/* Start a leg: its client prepared (discovery, registration), the next state sealed, the
 * authorization URL into *url. next: the state to carry (leg 1: S0), else NULL. */
static bool start_leg(struct gw_consent *k, const gg_oauth_consent *from, int leg, const char *server_url,
                      const char *next, char **url, gg_error *err) {
    gg_gateway *gw = k->gw;
    gg_oauth_consent cs;
    char challenge[GG_OAUTH_PKCE_CHALLENGE_LEN + 1], authz[1024], scope[512], redirect_uri[400];
    snprintf(redirect_uri, sizeof redirect_uri, "%s" CALLBACK_PATH, base(gw));
    if (!gg_oauth_consent_new(&cs, from->tenant, from->principal, from->server, gg_wall_ms() + CONSENT_TTL_MS, challenge))
        return gg_error_set(err, "invalid_consent", "the consent request names no user or server"), false;
    memcpy(cs.elicitation_id, from->elicitation_id, sizeof cs.elicitation_id);
    cs.leg = leg;
    if (leg == 2) { /* the downstream's client and scope as configured, for prepare and the exchange */
        memcpy(cs.client_id, from->client_id, sizeof cs.client_id);
        memcpy(cs.client_secret, from->client_secret, sizeof cs.client_secret);
        memcpy(cs.scope, from->scope, sizeof cs.scope);
        memcpy(cs.auth_method, from->auth_method, sizeof cs.auth_method);
        memcpy(cs.session, from->session, sizeof cs.session); /* told once the grant is stored */
    }
    gg_oauth_client *c = leg_client(gw, &cs, server_url, leg == 2, err);
    bool ok = c && gg_oauth_client_consent_prepare(c, redirect_uri, &cs, authz, sizeof authz, scope, sizeof scope, err);
    gg_oauth_client_free(c);
    if (ok && next && strlen(next) >= sizeof cs.next) {
        gg_error_set(err, "too_large", "the consent request is too long");
        ok = false;
    }
    char *state = NULL;
    if (ok) { /* S0 rides in the sign-in's state, to go on with once the user is known */
        if (next) strcpy(cs.next, next);
        state = gg_oauth_consent_seal(k->key, &cs);
        if (!state) gg_error_set(err, "too_large", "the consent request does not fit its state");
    }
    *url = state ? gg_oauth_consent_url(authz, cs.client_id, redirect_uri, scope[0] ? scope : NULL,
                                        cs.resource[0] ? cs.resource : NULL, challenge, state)
                 : NULL;
    free(state);
    sodium_memzero(&cs, sizeof cs);
    return *url != NULL;
}

/* Who signed in at the tenant's authorization server (leg 1): the code exchanged for a token
 * of the console resource, verified as the console verifies one; its principal's key_id. */
static bool signed_in_as(struct gw_consent *k, const job *j, char key_id[GG_KEY_ID_LEN + 1], gg_error *err) {
    gg_gateway *gw = k->gw;
    gw_resource r;
    gw_tenant_resource(gw, j->cs.tenant, &r);
    char redirect_uri[400];
    snprintf(redirect_uri, sizeof redirect_uri, "%s" CALLBACK_PATH, base(gw));
    gg_oauth_client *c = r.r.url ? leg_client(gw, &j->cs, r.r.url, false, err) : NULL;
    bool ok = c && gg_oauth_client_consent_exchange(c, &j->cs, j->code, j->has_iss ? j->iss : NULL, redirect_uri, err);
    char *g = ok ? gg_oauth_client_grant(c) : NULL;
    gg_oauth_client_free(c);
    json_t *gj = g ? json_loads(g, 0, NULL) : NULL;
    if (g) sodium_memzero(g, strlen(g));
    free(g);
    const char *tok = json_string_value(json_object_get(gj, "access"));
    gg_principal p;
    gg_oauth_binding b;
    gg_oauth_result st = tok ? gg_oauth_verify(gw->oauth, j->cs.tenant, r.r.url, tok, strlen(tok), &p, &b, err) : GG_OAUTH_INVALID;
    if (tok) sodium_memzero((char *)tok, strlen(tok));
    json_decref(gj);
    if (ok && st != GG_OAUTH_OK && !gg_error_is_set(err))
        gg_error_set(err, "invalid_token", "the sign-in's token could not be verified now; try again");
    if (!ok || st != GG_OAUTH_OK) return false;
    gg_strcopy(key_id, GG_KEY_ID_LEN + 1, p.key_id);
    return true;
}

/* The downstream's code (leg 2): exchanged, and the grant sealed into the store. */
static bool store_grant(struct gw_consent *k, const job *j, gg_error *err) {
    gg_gateway *gw = k->gw;
    char redirect_uri[400];
    snprintf(redirect_uri, sizeof redirect_uri, "%s" CALLBACK_PATH, base(gw));
    gg_oauth_client *c = leg_client(gw, &j->cs, j->cs.resource, true, err);
    bool ok = c && gg_oauth_client_consent_exchange(c, &j->cs, j->code, j->has_iss ? j->iss : NULL, redirect_uri, err);
    char *g = ok ? gg_oauth_client_grant(c) : NULL;
    gg_oauth_client_free(c);
    if (!g) return ok ? (gg_error_set(err, "oom", "out of memory"), false) : false;
    json_t *gj = json_loads(g, 0, NULL);
    long long exp = (long long)(json_number_value(json_object_get(gj, "expires_at")) * 1000);
    static const char *const secret_keys[] = {"access", "refresh", "client_secret"};
    for (size_t i = 0; gj && i < 3; i++) { /* the parsed copies go too */
        const char *t = json_string_value(json_object_get(gj, secret_keys[i]));
        if (t) sodium_memzero((char *)t, strlen(t));
    }
    json_decref(gj);
    const gg_store_vault *v = gw_secrets_vault(gw);
    ok = v && gg_store_user_grant_put(gw->store, v, j->cs.tenant, j->cs.server, j->cs.principal, g, strlen(g), exp, err) >= 0;
    if (!v) gg_error_set(err, "invalid_config", "no secrets key is configured");
    sodium_memzero(g, strlen(g));
    free(g);
    return ok;
}

static void finish_job(job *j) {
    struct gw_consent *k = j->k;
    gg_http_async_complete(j->a);
    job_free(j);
    pthread_mutex_lock(&k->mu);
    k->helpers--;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

static void *connect_main(void *arg) { /* leg 0 → 1 */
    job *j = arg;
    gg_http_res *res = gg_http_async_res(j->a);
    gw_resource r;
    gw_tenant_resource(j->k->gw, j->cs.tenant, &r);
    gg_error err = GG_ERROR_INIT;
    char *url = NULL;
    const char *s0 = gg_http_query(gg_http_async_req(j->a), "state");
    if (r.r.url && start_leg(j->k, &j->cs, 1, r.r.url, s0, &url, &err)) redirect(res, url);
    else {
        gg_log(GG_LOG_WARN, "consent: the sign-in could not start", "tenant", j->cs.tenant, "error",
               err.message ? err.message : "no public URL", NULL);
        page(res, 502, "Sign-in unavailable",
             "graphgate could not start the sign-in at your organization's authorization server. Try again later.");
    }
    free(url);
    gg_error_clear(&err);
    finish_job(j);
    return NULL;
}

static void *callback_main(void *arg) { /* leg 1 → 2, or leg 2 → stored */
    job *j = arg;
    gg_http_res *res = gg_http_async_res(j->a);
    gg_error err = GG_ERROR_INIT;
    if (j->cs.leg == 1) {
        char who[GG_KEY_ID_LEN + 1];
        gg_oauth_consent s0;
        char *url = NULL;
        if (!signed_in_as(j->k, j, who, &err)) {
            page(res, 502, "Sign-in failed", "The sign-in at your organization's authorization server did not complete.");
        } else if (strcmp(who, j->cs.principal)) {
            gg_log(GG_LOG_WARN, "consent: signed in as another user than the request was made for; nothing stored",
                   "tenant", j->cs.tenant, "server", j->cs.server, NULL);
            page(res, 403, "Not your request",
                 "This authorization request was made for another user. Nothing was stored. Ask your own client to "
                 "call the tool to get a request of your own.");
        } else if (!gg_oauth_consent_open(j->k->key, j->cs.next, gg_wall_ms(), &s0, &err) || s0.leg != 0) {
            page(res, 400, "Request expired", "The authorization request expired: call the tool again for a new one.");
        } else if (start_leg(j->k, &s0, 2, s0.resource, NULL, &url, &err)) {
            redirect(res, url);
        } else {
            gg_log(GG_LOG_WARN, "consent: the downstream authorization could not start", "server", j->cs.server, "error",
                   err.message ? err.message : err.code, NULL);
            page(res, 502, "Authorization unavailable", "graphgate could not reach the server's authorization server.");
        }
        sodium_memzero(&s0, sizeof s0);
        free(url);
    } else if (store_grant(j->k, j, &err)) {
        gg_log(GG_LOG_INFO, "consent: a per-user grant was stored", "tenant", j->cs.tenant, "server", j->cs.server, NULL);
        /* the session that got the elicitation hears it is done (2025-11-25), when its GET
         * stream is on this replica; elsewhere the client retries on the user's word */
        if (j->cs.session[0])
            gw_streams_elicitation_complete(j->k->gw->streams, j->cs.tenant, j->cs.session, j->cs.elicitation_id);
        page(res, 200, "Connected",
             "graphgate may now use this server for you. Return to your MCP client and call the tool again.");
    } else {
        gg_log(GG_LOG_WARN, "consent: the authorization code could not be exchanged", "server", j->cs.server, "error",
               err.message ? err.message : err.code, NULL);
        page(res, 502, "Authorization failed", "The server's authorization server did not issue a token.");
    }
    gg_error_clear(&err);
    finish_job(j);
    return NULL;
}

/* Defer the request and run fn on a helper; false (res filled) when none can start. */
static int spawn(struct gw_consent *k, gg_http_req *req, gg_http_res *res, job *j, void *(*fn)(void *)) {
    pthread_mutex_lock(&k->mu);
    bool room = k->helpers < HELPERS_MAX;
    if (room) k->helpers++;
    pthread_mutex_unlock(&k->mu);
    if (!room) {
        job_free(j);
        gg_http_res_header(res, "Retry-After", "1");
        page(res, 503, "Busy", "Too many authorizations are under way; try again in a moment.");
        return GG_HTTP_DONE;
    }
    j->k = k;
    j->a = gg_http_defer(req);
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    bool ok = j->a && pthread_create(&t, &at, fn, j) == 0;
    pthread_attr_destroy(&at);
    if (ok) return GG_HTTP_DEFERRED;
    pthread_mutex_lock(&k->mu);
    k->helpers--;
    pthread_mutex_unlock(&k->mu);
    gg_http_async *a = j->a;
    job_free(j);
    page(a ? gg_http_async_res(a) : res, 503, "Busy", "graphgate cannot start the authorization now; try again in a moment.");
    if (!a) return GG_HTTP_DONE;
    gg_http_async_complete(a);
    return GG_HTTP_DEFERRED;
}

/* Open the request's state for the expected legs; false with a 400 page. */
static bool open_state(struct gw_consent *k, gg_http_req *req, gg_http_res *res, int min_leg, int max_leg, job *j) {
    gg_error err = GG_ERROR_INIT;
    if (!k->ready) {
        page(res, 503, "Unavailable", "Per-user authorization needs graphgate's secrets key, and none is configured.");
        return false;
    }
    bool ok = gg_oauth_consent_open(k->key, gg_http_query(req, "state"), gg_wall_ms(), &j->cs, &err) &&
              j->cs.leg >= min_leg && j->cs.leg <= max_leg;
    if (!ok) page(res, 400, "Invalid authorization request",
                  err.message && strstr(err.message, "expired") ? "This authorization request expired: call the tool again for a new one."
                                                                : "This authorization request is not one graphgate made, or it was changed.");
    gg_error_clear(&err);
    return ok;
}

/* A callback's state is taken once (per replica): a replayed one is refused. */
static bool take_once(struct gw_consent *k, const gg_oauth_consent *cs) {
    long long now = gg_wall_ms();
    /* each sealed state has a PKCE verifier of its own (the elicitation id is shared by every
     * state made for one elicitation, someone else's refused sign-in included) */
    char id[33];
    unsigned char h[16];
    crypto_generichash(h, sizeof h, (const unsigned char *)cs->verifier, strlen(cs->verifier), NULL, 0);
    sodium_bin2hex(id, sizeof id, h, sizeof h);
    pthread_mutex_lock(&k->mu);
    bool seen = false;
    for (size_t i = 0; i < USED_MAX && !seen; i++)
        seen = k->used[i].expires_ms > now && k->used[i].leg == cs->leg && !strcmp(k->used[i].id, id);
    if (!seen) {
        size_t i = k->used_next++ % USED_MAX;
        gg_strcopy(k->used[i].id, sizeof k->used[i].id, id);
        k->used[i].leg = cs->leg;
        k->used[i].expires_ms = cs->expires_ms;
    }
    pthread_mutex_unlock(&k->mu);
    return !seen;
}

static int connect_page(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    job *j = calloc(1, sizeof *j);
    if (!j) return gg_http_res_fail(res, "oom", "out of memory"), GG_HTTP_DONE;
    if (!open_state(gw->consent, req, res, 0, 0, j)) {
        job_free(j);
        return GG_HTTP_DONE;
    }
    return spawn(gw->consent, req, res, j, connect_main);
}

static int callback_page(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    job *j = calloc(1, sizeof *j);
    if (!j) return gg_http_res_fail(res, "oom", "out of memory"), GG_HTTP_DONE;
    if (!open_state(gw->consent, req, res, 1, 2, j)) {
        job_free(j);
        return GG_HTTP_DONE;
    }
    const char *error = gg_http_query(req, "error"), *code = gg_http_query(req, "code"), *iss = gg_http_query(req, "iss");
    if (!take_once(gw->consent, &j->cs)) {
        page(res, 400, "Already used", "This authorization response was used already: call the tool again for a new request.");
    } else if (error || !code || strlen(code) >= sizeof j->code || (iss && strlen(iss) >= sizeof j->iss)) {
        page(res, 400, "Not authorized", error ? "The authorization was refused or cancelled. Nothing was stored."
                                               : "The authorization response carries no usable code.");
    } else {
        strcpy(j->code, code);
        j->has_iss = iss != NULL;
        if (iss) strcpy(j->iss, iss);
        return spawn(gw->consent, req, res, j, callback_main);
    }
    job_free(j);
    return GG_HTTP_DONE;
}

/* ---- life ------------------------------------------------------------------------------- */

/* See credentials.h. */
bool gw_consent_start(gg_gateway *gw, gg_error *err) {
    struct gw_consent *k = calloc(1, sizeof *k);
    if (!k) return gg_error_set(err, "oom", "out of memory"), false;
    k->gw = gw;
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    const gg_store_vault *v = gw_secrets_vault(gw);
    if (v) { /* every replica shares the secrets key: a state sealed by one opens on another */
        static const char ctx[] = "graphgate consent state v1";
        crypto_generichash(k->key, sizeof k->key, (const unsigned char *)ctx, sizeof ctx - 1, v->key, sizeof v->key);
        k->ready = true;
    }
    gw->consent = k;
    gg_router *r = gg_http_server_router(gw->app->http);
    return gg_router_add(r, GG_LISTENER_PUBLIC, "GET", CONNECT_PATH, connect_page, gw, err) &&
           gg_router_add(r, GG_LISTENER_PUBLIC, "GET", CALLBACK_PATH, callback_page, gw, err);
}

/* See credentials.h. */
void gw_consent_free(gg_gateway *gw) {
    struct gw_consent *k = gw->consent;
    if (!k) return;
    pthread_mutex_lock(&k->mu);
    while (k->helpers > 0) pthread_cond_wait(&k->cv, &k->mu); /* each ends within its requests' timeouts */
    pthread_mutex_unlock(&k->mu);
    gw->consent = NULL;
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    sodium_memzero(k->key, sizeof k->key);
    free(k);
}
