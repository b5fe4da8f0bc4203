/* http_oauth.c — the MCP endpoints' credentials as HTTP answers: an API key as on every
 * route, or an OAuth access token issued for the endpoint by one of its tenant's
 * authorization servers (MCP authorization; RFC 6750 challenges, RFC 9728 metadata).
 *
 * Why API keys are told apart by their shape: a graphgate key is "gg_<16 hex>_<43>", a JWT
 * has two dots, so one header carries either and nothing is tried twice. A key keeps
 * exactly the answers it had before (statuses, bodies); what changes for every 401 of an
 * endpoint whose tenant has authorization servers is the challenge, which names the
 * resource's metadata so a client can start the OAuth flow. */
#include "auth/auth.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/http.h"

/* "<scheme> <token>" → the token (trimmed), else NULL. */
static const char *credential_of(const char *h, const char *scheme, size_t *len) {
    size_t n = strlen(scheme);
    if (!h || strncasecmp(h, scheme, n) != 0 || h[n] != ' ') return NULL;
    const char *t = h + n + 1;
    while (*t == ' ') t++;
    size_t l = strlen(t);
    while (l && t[l - 1] == ' ') l--;
    *len = l;
    return l ? t : NULL;
}

/* A challenge parameter's value: quoted-string, with `"` and `\` escaped. */
static void param(gg_strbuf *b, const char *name, const char *v) {
    if (strchr(b->data, '=')) gg_strbuf_puts(b, ", ");
    else gg_strbuf_puts(b, " ");
    gg_strbuf_puts(b, name);
    gg_strbuf_puts(b, "=\"");
    for (; *v; v++) {
        if (*v == '"' || *v == '\\') gg_strbuf_putc(b, '\\');
        if ((unsigned char)*v >= 0x20) gg_strbuf_putc(b, *v);
    }
    gg_strbuf_putc(b, '"');
}

static void challenge_as(gg_http_res *res, const char *scheme, const gg_resource *r, const char *error,
                         const char *desc, const char *scope);

/* WWW-Authenticate for this resource: the metadata URL and the scopes a client should ask
 * for (MCP authorization, "Scope selection"), plus an RFC 6750 error when there is one. */
void gg_auth_http_challenge(gg_http_res *res, const gg_resource *r, const char *error, const char *desc,
                            const char *scope) {
    challenge_as(res, "Bearer", r, error, desc, scope);
}

/* DPoP's challenge (RFC 9449 section 7.1) names the proof algorithms it takes. */
static void dpop_challenge(gg_http_res *res, const gg_resource *r, const char *error, const char *desc) {
    challenge_as(res, "DPoP", r, error, desc, NULL);
}

static void challenge_as(gg_http_res *res, const char *scheme, const gg_resource *r, const char *error,
                         const char *desc, const char *scope) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, scheme);
    if (!strcmp(scheme, "DPoP")) param(&b, "algs", "ES256 RS256 PS256 EdDSA");
    if (error) param(&b, "error", error);
    if (desc) param(&b, "error_description", desc);
    if (r && r->metadata_url) param(&b, "resource_metadata", r->metadata_url);
    if (scope) param(&b, "scope", scope);
    char *v = gg_strbuf_take(&b);
    gg_http_res_header(res, "WWW-Authenticate", v ? v : "Bearer");
    free(v);
}

static bool rate_limited(gg_auth *auth, gg_http_res *res, const gg_principal *p) {
    int wait = gg_auth_rate_take(auth, p);
    if (wait <= 0) return false;
    char ra[16];
    snprintf(ra, sizeof ra, "%d", wait);
    gg_http_res_header(res, "Retry-After", ra);
    gg_http_res_error_extra(res, 429, "rate_limited", json_pack("{s:i}", "retry_after", wait),
                            "rate limit exceeded for this %s; retry in %d s", p->oauth ? "user" : "key", wait);
    return true;
}

static bool unavailable(gg_http_res *res, const char *msg) {
    gg_http_res_header(res, "Retry-After", "1");
    gg_http_res_error_extra(res, 503, "unavailable", json_pack("{s:i}", "retry_after", 1), "%s", msg);
    return false;
}

/* The scopes a client should ask r's tenant's authorization servers for, into buf; false
 * when the endpoint takes no tokens (no authorization servers, or no public URL). */
static bool token_scopes(gg_oauth *o, const gg_resource *r, char *buf, size_t n) {
    if (!o || !r || !r->url || !r->tenant) return false;
    gg_error e = GG_ERROR_INIT;
    json_t *def = gg_oauth_definition(o, r->tenant, &e);
    gg_error_clear(&e);
    if (def && r->console) gg_oauth_scopes_text_for(def, GG_SCOPE_GRAPHS_WRITE, buf, n);
    else if (def) gg_oauth_scopes_text(def, buf, n);
    json_decref(def);
    return def != NULL;
}

static bool token_error(gg_http_res *res, const gg_resource *r, const char *code, const char *msg, bool dpop) {
    if (dpop) dpop_challenge(res, r, code, msg);
    else gg_auth_http_challenge(res, r, code, msg, NULL);
    gg_http_res_error(res, 401, code, "%s", msg);
    return false;
}

/* RFC 9449 section 7: a token bound to a key (cnf.jkt), presented with the DPoP scheme and a
 * proof of that key made for this request; an unbound token with a proof only if its issuer
 * does not require binding. */
static bool check_dpop(gg_oauth *o, gg_http_req *req, gg_http_res *res, const gg_resource *r, const char *tok,
                       size_t len, bool dpop_scheme, const gg_oauth_binding *b) {
    if (!dpop_scheme && b->jkt[0])
        return token_error(res, r, "invalid_token", "a DPoP-bound token goes with the DPoP scheme and a proof", true);
    if (b->dpop_required && !b->jkt[0])
        return token_error(res, r, "invalid_token", "this authorization server's tokens must be DPoP-bound", true);
    if (!dpop_scheme) return true;
    if (!b->jkt[0]) return token_error(res, r, "invalid_token", "the DPoP scheme with a token bound to no key", true);
    const char *proof = gg_http_header(req, "DPoP");
    if (!proof) return token_error(res, r, "invalid_dpop_proof", "no DPoP proof", true);
    gg_dpop_check c = {gg_http_method(req), r->url, tok, len, (double)gg_wall_ms() / 1000.0, 60};
    gg_dpop_proof p;
    gg_error err = GG_ERROR_INIT;
    if (!gg_jwt_dpop_verify(proof, strlen(proof), &c, &p, &err)) {
        bool ok = token_error(res, r, "invalid_dpop_proof", err.message ? err.message : "invalid DPoP proof", true);
        gg_error_clear(&err);
        return ok;
    }
    if (strcmp(p.jkt, b->jkt) != 0) return token_error(res, r, "invalid_dpop_proof", "the DPoP proof is made with another key than the token is bound to", true);
    if (b->dpop_nonce && !gg_oauth_dpop_nonce_ok(o, p.nonce)) { /* section 9: here is one, try again */
        char nonce[GG_DPOP_NONCE_LEN + 1];
        gg_oauth_dpop_nonce(o, nonce);
        gg_http_res_header(res, "DPoP-Nonce", nonce);
        return token_error(res, r, "use_dpop_nonce", "the DPoP proof must carry the server's nonce", true);
    }
    if (gg_oauth_dpop_replayed(o, p.jkt, p.jti, p.iat)) return token_error(res, r, "invalid_dpop_proof", "the DPoP proof was used before", true);
    return true;
}

static void run_again(void *user) { gg_http_async_redispatch(user); }

/* An opaque token nobody has introspected yet: the request waits for the answer without a
 * thread (deferred; the fetcher thread redispatches it, and the handler's second run finds
 * the answer remembered). false with res filled, or false with the request deferred. */
static bool await_introspection(gg_oauth *o, gg_http_req *req, gg_http_res *res, const gg_resource *r,
                                const char *tok, size_t len) {
    gg_http_async *a = gg_http_defer(req);
    if (!a) return unavailable(res, "the server is busy; retry shortly");
    gg_error err = GG_ERROR_INIT;
    gg_oauth_result st = gg_oauth_await(o, r->tenant, r->url, tok, len, run_again, a, &err);
    if (st == GG_OAUTH_PENDING) return false;
    if (st == GG_OAUTH_UNAVAILABLE) { /* refused by the limits: answered through the async */
        unavailable(gg_http_async_res(a), err.message ? err.message : "the token cannot be checked now");
        gg_http_async_complete(a);
    } else gg_http_async_redispatch(a); /* answered meanwhile */
    gg_error_clear(&err);
    return false;
}

static bool check_token(gg_auth *auth, gg_oauth *o, gg_http_req *req, gg_http_res *res, const gg_resource *r,
                        const char *tok, size_t len, bool dpop_scheme, gg_principal *out) {
    gg_error err = GG_ERROR_INIT;
    gg_oauth_binding b;
    gg_oauth_result st = r && r->url && r->tenant ? gg_oauth_verify(o, r->tenant, r->url, tok, len, out, &b, &err)
                                                  : GG_OAUTH_NONE;
    if (st == GG_OAUTH_PENDING) return await_introspection(o, req, res, r, tok, len);
    if (st == GG_OAUTH_OK) {
        gg_error_clear(&err);
        if (!r->console) out->scopes &= ~(unsigned)GG_SCOPE_GRAPHS_WRITE; /* an MCP client never writes graphs */
        return check_dpop(o, req, res, r, tok, len, dpop_scheme, &b) && !rate_limited(auth, res, out);
    }
    if (st == GG_OAUTH_UNAVAILABLE) {
        bool ok = unavailable(res, err.message ? err.message : "the authorization server cannot be checked now");
        gg_error_clear(&err);
        return ok;
    }
    const char *msg = st == GG_OAUTH_NONE ? "no valid API key, and this endpoint takes no OAuth tokens"
                                          : (err.message ? err.message : "invalid token");
    char scopes[512] = "";
    bool oauth = st != GG_OAUTH_NONE && token_scopes(o, r, scopes, sizeof scopes);
    gg_auth_http_challenge(res, oauth ? r : NULL, "invalid_token", msg, oauth ? scopes : NULL);
    gg_http_res_fail(res, st == GG_OAUTH_NONE ? "unauthorized" : "invalid_token", "%s", msg);
    gg_error_clear(&err);
    return false;
}

bool gg_auth_http_check_resource(gg_auth *auth, gg_oauth *o, gg_http_req *req, gg_http_res *res,
                                 const gg_resource *r, gg_principal *out) {
    size_t len = 0;
    const char *authz = gg_http_header(req, "Authorization"), *xkey = gg_http_header(req, "X-API-Key");
    const char *tok = credential_of(authz, "Bearer", &len);
    bool dpop = false;
    if (!tok && (tok = credential_of(authz, "DPoP", &len))) dpop = true;
    /* a JWT, or an opaque token where the tenant introspects them (elsewhere a token that is
     * neither keeps the answers of a wrong API key) */
    if (tok && !xkey && strncmp(tok, "gg_", 3) != 0 &&
        (memchr(tok, '.', len) || (o && r && r->url && gg_oauth_introspects(o, r->tenant))))
        return check_token(auth, o, req, res, r, tok, len, dpop, out);
    const char *key = gg_auth_key_from_headers(authz, xkey, &len);
    gg_auth_status st = gg_auth_verify(auth, key, len, out);
    if (st == GG_AUTH_ERROR) return unavailable(res, gg_auth_status_message(st));
    if (st != GG_AUTH_OK) {
        char scopes[512] = "";
        bool oauth = token_scopes(o, r, scopes, sizeof scopes);
        gg_auth_http_challenge(res, oauth ? r : NULL, key && oauth ? "invalid_token" : NULL, NULL,
                               oauth ? scopes : NULL);
        gg_http_res_fail(res, "unauthorized", "%s", gg_auth_status_message(st));
        return false;
    }
    return !rate_limited(auth, res, out);
}

void gg_auth_http_insufficient_scope_at(gg_http_res *res, gg_oauth *o, const gg_resource *r, const gg_principal *p,
                                        gg_scope need) {
    const char *name = gg_scope_name(need);
    char scopes[512] = "";
    if (p && p->oauth && token_scopes(o, r, scopes, sizeof scopes)) {
        /* step-up: the client asks its authorization server again, for every scope the
         * endpoint uses (MCP authorization, "Step-up authorization flow") */
        char desc[96];
        snprintf(desc, sizeof desc, "this needs the %s scope", name);
        gg_auth_http_challenge(res, r, "insufficient_scope", desc, scopes);
    }
    gg_http_res_error_extra(res, 403, "insufficient_scope", json_pack("{s:s}", "required_scope", name),
                            "Required scope: %s", name);
}
