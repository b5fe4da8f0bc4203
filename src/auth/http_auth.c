/* http_auth.c — API-key checks as HTTP answers, shared by every route that takes a key
 * (gateway MCP and admin routes, the node-spec service), so they cannot drift apart: the
 * same statuses, bodies and Retry-After / WWW-Authenticate headers everywhere. */
#include "auth/auth.h"

#include <jansson.h>
#include <stdio.h>

#include "http/http.h"

/* See auth.h. */
bool gg_auth_http_check(gg_auth *auth, gg_http_req *req, gg_http_res *res, gg_principal *out) {
    size_t len = 0;
    const char *key = gg_auth_key_from_headers(gg_http_header(req, "Authorization"), gg_http_header(req, "X-API-Key"), &len);
    gg_auth_status st = gg_auth_verify(auth, key, len, out);
    if (st == GG_AUTH_ERROR) { /* the store cannot be read: try again shortly */
        gg_http_res_header(res, "Retry-After", "1");
        gg_http_res_error_extra(res, 503, "unavailable", json_pack("{s:i}", "retry_after", 1), "%s",
                                gg_auth_status_message(st));
        return false;
    }
    if (st != GG_AUTH_OK) {
        gg_http_res_header(res, "WWW-Authenticate", "Bearer");
        gg_http_res_fail(res, "unauthorized", "%s", gg_auth_status_message(st));
        return false;
    }
    int wait = gg_auth_rate_take(auth, out);
    if (wait > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", wait);
        gg_http_res_header(res, "Retry-After", ra);
        gg_http_res_error_extra(res, 429, "rate_limited", json_pack("{s:i}", "retry_after", wait),
                                "rate limit exceeded for this key; retry in %d s", wait);
        return false;
    }
    return true;
}

/* See auth.h. The JSON error model, with the scope the key lacks as a member of its own
 * so that clients (the console, the node-spec clients) need not parse the message. */
void gg_auth_http_insufficient_scope(gg_http_res *res, gg_scope need) {
    const char *name = gg_scope_name(need);
    gg_http_res_error_extra(res, 403, "insufficient_scope", json_pack("{s:s}", "required_scope", name),
                            "Required scope: %s", name);
}
