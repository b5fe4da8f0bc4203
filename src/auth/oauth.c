/* oauth.c — a tenant's OAuth authorization servers: the definition an admin stores
 * (PUT /admin/tenants/{t}/oauth) checked and normalized, and how a verified token's claims
 * become graphgate scopes. Pure: no I/O, no shared state; any thread.
 *
 * Why a definition is normalized at write time: every replica reads the same stored JSON
 * and must reach the same decision, so defaults are written into it once (algorithms,
 * skew, scope mapping) instead of being applied by whichever build reads it.
 */
#include <string.h>

#include "auth/auth.h"

#define MAX_ISSUERS 8
#define MAX_URL 512
#define MAX_MAPPED 64

/* https, or http to a loopback host (a test's authorization server); no query, fragment or
 * user info: RFC 8414 issuer identifiers. */
bool gg_oauth_url_ok(const char *u, const char *what, gg_error *err) {
    size_t n = strlen(u);
    bool https = !strncmp(u, "https://", 8);
    bool loop = !strncmp(u, "http://127.0.0.1", 16) || !strncmp(u, "http://localhost", 16) ||
                !strncmp(u, "http://[::1]", 12);
    if (n == 0 || n > MAX_URL || (!https && !loop) || strpbrk(u, "?#@ \t\r\n") != NULL) {
        gg_error_set(err, "invalid_argument",
                     "%s must be an https URL (http only to a loopback host) of at most %d characters, "
                     "without query, fragment or user info",
                     what, MAX_URL);
        return false;
    }
    return true;
}

static json_t *algorithms_of(json_t *v, gg_error *err) {
    if (!v) return json_pack("[ssss]", "RS256", "PS256", "ES256", "EdDSA");
    size_t i;
    json_t *a;
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 4) goto bad;
    json_array_foreach(v, i, a) if (!gg_jwt_alg_bit(json_string_value(a))) goto bad;
    return json_incref(v);
bad:
    gg_error_set(err, "invalid_argument",
                 "algorithms must be a non-empty list of RS256, PS256, ES256, EdDSA (never none or an HMAC algorithm)");
    return NULL;
}

/* {"external scope": ["tools:read", ...]}; default: graphgate's own scope names map to
 * themselves, so an authorization server may simply issue "tools:execute". */
static json_t *scope_map_of(json_t *v, gg_error *err) {
    if (!v) {
        json_t *m = json_object();
        static const char *const own[] = {"tools:read", "tools:execute", "health:check"};
        for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) json_object_set_new(m, own[i], json_pack("[s]", own[i]));
        return m;
    }
    if (!json_is_object(v) || json_object_size(v) > MAX_MAPPED) {
        gg_error_set(err, "invalid_argument", "scope_map must be an object of at most %d scopes", MAX_MAPPED);
        return NULL;
    }
    const char *k;
    json_t *list;
    json_object_foreach(v, k, list) {
        size_t i;
        json_t *s;
        if (!*k || strlen(k) > 128 || !json_is_array(list)) goto bad;
        json_array_foreach(list, i, s) {
            gg_error e2 = GG_ERROR_INIT;
            unsigned m = json_is_string(s) ? gg_scopes_parse(json_string_value(s), &e2) : 0;
            gg_error_clear(&e2);
            /* admin is an operator's, never a token's; graphs:write counts only on the
             * tenant's console resource (its admin routes), never on an MCP endpoint */
            if (!m || (m & GG_SCOPE_ADMIN)) goto bad;
        }
    }
    return json_incref(v);
bad:
    gg_error_set(err, "invalid_argument",
                 "scope_map maps each token scope (1..128 characters) to a list of tools:read, tools:execute, health:check, "
                 "graphs:write (the console's)");
    return NULL;
}

/* An integer setting from lo to hi, def when absent; -1 + err when out of range. */
/* Every key of in is one of known (NULL-terminated); else invalid_argument naming it, so a
 * misspelt setting is refused rather than silently ignored. */
static bool only_known(const json_t *in, const char *const *known, const char *what, gg_error *err) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)in, k, v) {
        size_t i = 0;
        while (known[i] && strcmp(k, known[i])) i++;
        if (!known[i]) {
            gg_error_set(err, "invalid_argument", "unknown %s setting '%.64s'", what, k);
            return false;
        }
    }
    return true;
}

static json_int_t int_setting(const json_t *in, const char *name, json_int_t lo, json_int_t hi, json_int_t def,
                              gg_error *err) {
    json_t *v = json_object_get(in, name);
    if (!v) return def;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        gg_error_set(err, "invalid_argument", "introspection.%s must be an integer from %lld to %lld", name,
                     (long long)lo, (long long)hi);
        return -1;
    }
    return json_integer_value(v);
}

/* {"client_id", "client_secret": "${secrets.NAME}", "endpoint"?, "auth_method"?, limits}:
 * opaque tokens checked at the issuer's introspection endpoint (RFC 7662). The secret is
 * only ever a reference to the tenant's secret store, so the definition (which the admin
 * API answers with) never holds it. */
static json_t *introspection_of(json_t *in, gg_error *err) {
    const char *id = json_string_value(json_object_get(in, "client_id"));
    const char *sec = json_string_value(json_object_get(in, "client_secret"));
    const char *ep = json_string_value(json_object_get(in, "endpoint"));
    const char *am = json_string_value(json_object_get(in, "auth_method"));
    if (!json_is_object(in) || !id || !*id || strlen(id) > 128 || strpbrk(id, "\r\n")) {
        gg_error_set(err, "invalid_argument", "introspection needs a client_id (1..128 characters)");
        return NULL;
    }
    size_t sl = sec ? strlen(sec) : 0;
    char name[80] = "";
    if (sl > 12 && sl - 11 < sizeof name && !strncmp(sec, "${secrets.", 10) && sec[sl - 1] == '}')
        memcpy(name, sec + 10, sl - 11), name[sl - 11] = '\0';
    if (!name[0] || !gg_store_secret_name_ok(name)) {
        gg_error_set(err, "invalid_argument",
                     "introspection.client_secret must be a reference to a tenant secret, \"${secrets.NAME}\" "
                     "(the secret itself is never stored in the definition)");
        return NULL;
    }
    if (json_object_get(in, "endpoint") && (!ep || !gg_oauth_url_ok(ep, "introspection.endpoint", err))) {
        if (!err->code[0]) gg_error_set(err, "invalid_argument", "introspection.endpoint must be a URL");
        return NULL;
    }
    if (json_object_get(in, "auth_method") && (!am || (strcmp(am, "client_secret_basic") && strcmp(am, "client_secret_post")))) {
        gg_error_set(err, "invalid_argument", "introspection.auth_method is client_secret_basic or client_secret_post");
        return NULL;
    }
    json_int_t cache = int_setting(in, "cache_s", 1, 300, 60, err), neg = int_setting(in, "negative_cache_s", 1, 300, 10, err),
               tmo = int_setting(in, "timeout_s", 1, 30, 5, err), conc = int_setting(in, "concurrency", 1, 64, 4, err),
               rate = int_setting(in, "rate_per_s", 1, 1000, 20, err);
    if (cache < 0 || neg < 0 || tmo < 0 || conc < 0 || rate < 0) return NULL;
    static const char *const known[] = {"client_id", "client_secret", "endpoint", "auth_method", "cache_s",
                                        "negative_cache_s", "timeout_s", "concurrency", "rate_per_s", NULL};
    if (!only_known(in, known, "introspection", err)) return NULL;
    json_t *out = json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I}", "client_id", id, "client_secret", sec, "auth_method",
                            am ? am : "client_secret_basic", "cache_s", cache, "negative_cache_s", neg, "timeout_s", tmo,
                            "concurrency", conc, "rate_per_s", rate);
    if (ep) json_object_set_new(out, "endpoint", json_string(ep));
    return out;
}

static json_t *issuer_of(json_t *in, gg_error *err) {
    const char *iss = json_string_value(json_object_get(in, "issuer"));
    if (!json_is_object(in) || !iss) {
        gg_error_set(err, "invalid_argument", "each issuer is an object with an \"issuer\" URL");
        return NULL;
    }
    if (!gg_oauth_url_ok(iss, "issuer", err)) return NULL;
    const char *jwks = json_string_value(json_object_get(in, "jwks_uri"));
    if (json_object_get(in, "jwks_uri") && (!jwks || !gg_oauth_url_ok(jwks, "jwks_uri", err))) {
        if (!err->code[0]) gg_error_set(err, "invalid_argument", "jwks_uri must be a URL");
        return NULL;
    }
    json_t *skew = json_object_get(in, "clock_skew_s");
    if (skew && (!json_is_integer(skew) || json_integer_value(skew) < 0 || json_integer_value(skew) > 300)) {
        gg_error_set(err, "invalid_argument", "clock_skew_s must be an integer from 0 to 300");
        return NULL;
    }
    json_t *tc = json_object_get(in, "tenant_claim");
    if (tc && (!json_is_string(tc) || !*json_string_value(tc) || strlen(json_string_value(tc)) > 64)) {
        gg_error_set(err, "invalid_argument", "tenant_claim must name a claim (1..64 characters)");
        return NULL;
    }
    json_t *dpop = json_object_get(in, "dpop");
    const char *dm = json_string_value(dpop);
    if (dpop && (!dm || (strcmp(dm, "optional") && strcmp(dm, "required")))) {
        gg_error_set(err, "invalid_argument", "dpop is \"optional\" (bound tokens need proofs) or \"required\" (every token)");
        return NULL;
    }
    json_t *nonce = json_object_get(in, "dpop_nonce");
    if (nonce && !json_is_boolean(nonce)) {
        gg_error_set(err, "invalid_argument", "dpop_nonce is true or false");
        return NULL;
    }
    json_t *intro = json_object_get(in, "introspection");
    if (intro && !(intro = introspection_of(intro, err))) return NULL;
    static const char *const known[] = {"issuer", "jwks_uri", "algorithms", "clock_skew_s", "scope_map",
                                        "tenant_claim", "dpop", "dpop_nonce", "introspection", NULL};
    if (!only_known(in, known, "issuer", err)) {
        json_decref(intro);
        return NULL;
    }
    json_t *algs = algorithms_of(json_object_get(in, "algorithms"), err);
    json_t *map = algs ? scope_map_of(json_object_get(in, "scope_map"), err) : NULL;
    if (!map) {
        json_decref(algs);
        json_decref(intro);
        return NULL;
    }
    json_t *out = json_pack("{s:s,s:o,s:I,s:o}", "issuer", iss, "algorithms", algs, "clock_skew_s",
                            (json_int_t)(skew ? json_integer_value(skew) : 60), "scope_map", map);
    if (jwks) json_object_set_new(out, "jwks_uri", json_string(jwks));
    if (tc) json_object_set(out, "tenant_claim", tc);
    json_object_set_new(out, "dpop", json_string(dm ? dm : "optional"));
    json_object_set_new(out, "dpop_nonce", json_boolean(json_is_true(nonce)));
    if (intro) json_object_set_new(out, "introspection", intro);
    return out;
}

json_t *gg_oauth_definition_check(const json_t *in, gg_error *err) {
    json_t *list = json_object_get(in, "issuers");
    if (!json_is_object(in) || !json_is_array(list) || json_array_size(list) == 0 ||
        json_array_size(list) > MAX_ISSUERS) {
        gg_error_set(err, "invalid_argument", "the definition is {\"issuers\": [{\"issuer\": URL, ...}]} with 1..%d issuers",
                     MAX_ISSUERS);
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)in, k, v) if (strcmp(k, "issuers")) {
        gg_error_set(err, "invalid_argument", "unknown setting '%.64s' (only \"issuers\")", k);
        return NULL;
    }
    json_t *out = json_array();
    size_t i;
    json_array_foreach(list, i, v) {
        json_t *one = issuer_of(v, err);
        for (size_t j = 0; one && j < json_array_size(out); j++)
            if (!strcmp(json_string_value(json_object_get(json_array_get(out, j), "issuer")),
                        json_string_value(json_object_get(one, "issuer")))) {
                gg_error_set(err, "invalid_argument", "issuer %s is listed twice", json_string_value(json_object_get(one, "issuer")));
                json_decref(one);
                one = NULL;
            }
        if (!one) {
            json_decref(out);
            return NULL;
        }
        json_array_append_new(out, one);
    }
    return json_pack("{s:o}", "issuers", out);
}

/* Add the scopes one token scope maps to. */
static void map_one(const json_t *map, const char *s, size_t n, unsigned *mask) {
    char name[129];
    if (n == 0 || n >= sizeof name) return;
    memcpy(name, s, n);
    name[n] = '\0';
    json_t *list = json_object_get(map, name);
    size_t i;
    json_t *g;
    json_array_foreach(list, i, g) {
        gg_error e = GG_ERROR_INIT;
        *mask |= gg_scopes_parse(json_string_value(g), &e);
        gg_error_clear(&e);
    }
}

unsigned gg_oauth_claims_scopes(const json_t *issuer_def, const json_t *claims) {
    const json_t *map = json_object_get(issuer_def, "scope_map");
    unsigned mask = 0;
    const char *sc = json_string_value(json_object_get(claims, "scope")); /* RFC 9068: space-separated */
    for (const char *p = sc; p && *p;) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        map_one(map, p, (size_t)(e - p), &mask);
        p = e;
    }
    json_t *scp = json_object_get(claims, "scp"); /* Azure AD / Okta style: a list */
    size_t i;
    json_t *s;
    json_array_foreach(scp, i, s) if (json_is_string(s)) map_one(map, json_string_value(s), json_string_length(s), &mask);
    return mask & ~(unsigned)GG_SCOPE_ADMIN;
}

const json_t *gg_oauth_issuer_find(const json_t *definition, const char *iss) {
    size_t i;
    json_t *one;
    json_array_foreach(json_object_get(definition, "issuers"), i, one) {
        const char *x = json_string_value(json_object_get(one, "issuer"));
        if (x && iss && !strcmp(x, iss)) return one;
    }
    return NULL;
}

/* Whether a scope_map entry grants any of want. */
static bool grants_any(const json_t *list, unsigned want) {
    unsigned mask = 0;
    size_t i;
    json_t *g;
    json_array_foreach(list, i, g) {
        gg_error e = GG_ERROR_INIT;
        mask |= gg_scopes_parse(json_string_value(g), &e);
        gg_error_clear(&e);
    }
    return (mask & want) != 0;
}

void gg_oauth_scopes_text(const json_t *definition, char *buf, size_t n) {
    gg_oauth_scopes_text_for(definition, GG_SCOPE_TOOLS_READ | GG_SCOPE_TOOLS_EXECUTE | GG_SCOPE_HEALTH_CHECK, buf, n);
}

void gg_oauth_scopes_text_for(const json_t *definition, unsigned want, char *buf, size_t n) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_use(&b, buf, n);
    size_t i;
    json_t *one;
    json_array_foreach(json_object_get(definition, "issuers"), i, one) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(one, "scope_map"), k, v) {
            if (!grants_any(v, want)) continue;
            size_t kl = strlen(k);
            bool seen = false; /* another issuer named it already */
            for (const char *p = buf; !seen && b.len && (p = strstr(p, k)); p += kl)
                seen = (p == buf || p[-1] == ' ') && (p[kl] == ' ' || p[kl] == '\0');
            if (seen || b.len + kl + 2 > n) continue;
            if (b.len) gg_strbuf_putc(&b, ' ');
            gg_strbuf_puts(&b, k);
        }
    }
    if (!b.len && n) buf[0] = '\0';
}
