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

/* "Bearer <token>" → the token (trimmed), else NULL. */
static const char *bearer_of(const char *h, size_t *len) {
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return NULL;
    const char *t = h + 7;
    while (*t == ' ') t++;
    size_t n = strlen(t);
    while (n && t[n - 1] == ' ') n--;
    *len = n;
    return n ? t : NULL;
}

/* A challenge parameter's value: quoted-string, with `"` and `\` escaped. */
static void param(gg_strbuf *b, const char *name, const char *v) {
    if (b->len > 6) gg_strbuf_puts(b, ", ");
    else gg_strbuf_puts(b, " ");
    gg_strbuf_puts(b, name);
    gg_strbuf_puts(b, "=\"");
    for (; *v; v++) {
        if (*v == '"' || *v == '\\') gg_strbuf_putc(b, '\\');
        if ((unsigned char)*v >= 0x20) gg_strbuf_putc(b, *v);
    }
    gg_strbuf_putc(b, '"');
}

/* WWW-Authenticate for this resource: the metadata URL and the scopes a client should ask
 * for (MCP authorization, "Scope selection"), plus an RFC 6750 error when there is one. */
void gg_auth_http_challenge(gg_http_res *res, const gg_resource *r, const char *error, const char *desc,
                            const char *scope) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "Bearer");
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
    if (def) gg_oauth_scopes_text(def, buf, n);
    json_decref(def);
    return def != NULL;
}

static bool check_token(gg_auth *auth, gg_oauth *o, gg_http_res *res, const gg_resource *r, const char *tok,
                        size_t len, gg_principal *out) {
    gg_error err = GG_ERROR_INIT;
    gg_oauth_result st = r && r->url && r->tenant ? gg_oauth_verify(o, r->tenant, r->url, tok, len, out, &err)
                                                  : GG_OAUTH_NONE;
    if (st == GG_OAUTH_OK) {
        gg_error_clear(&err);
        return !rate_limited(auth, res, out);
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
    gg_http_res_error(res, 401, st == GG_OAUTH_NONE ? "unauthorized" : "invalid_token", "%s", msg);
    gg_error_clear(&err);
    return false;
}

bool gg_auth_http_check_resource(gg_auth *auth, gg_oauth *o, gg_http_req *req, gg_http_res *res,
                                 const gg_resource *r, gg_principal *out) {
    size_t len = 0;
    const char *authz = gg_http_header(req, "Authorization"), *xkey = gg_http_header(req, "X-API-Key");
    const char *tok = bearer_of(authz, &len);
    if (tok && !xkey && strncmp(tok, "gg_", 3) != 0 && memchr(tok, '.', len))
        return check_token(auth, o, res, r, tok, len, out);
    const char *key = gg_auth_key_from_headers(authz, xkey, &len);
    gg_auth_status st = gg_auth_verify(auth, key, len, out);
    if (st == GG_AUTH_ERROR) return unavailable(res, gg_auth_status_message(st));
    if (st != GG_AUTH_OK) {
        char scopes[512] = "";
        bool oauth = token_scopes(o, r, scopes, sizeof scopes);
        gg_auth_http_challenge(res, oauth ? r : NULL, key && oauth ? "invalid_token" : NULL, NULL,
                               oauth ? scopes : NULL);
        gg_http_res_error(res, 401, "unauthorized", "%s", gg_auth_status_message(st));
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
