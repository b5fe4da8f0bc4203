/* oauth_client.c — graphgate as an OAuth client of a downstream MCP server (the MCP
 * authorization spec, client side; 2025-11-25 and 2026-07-28).
 *
 * One gg_oauth_client per downstream server definition (a graph's mcpServers entry of one
 * tenant): it holds that server's tokens in memory only and hands them out as headers; the
 * MCP client (src/mcp/client_http.c, through the mcp_auth_provider seam the composition
 * root wires: src/gateway/downstream_auth.c) asks for them on every request and brings back
 * every 401/403 with its WWW-Authenticate. Resolving one means, in order:
 *   - the challenge's Bearer parameters (resource_metadata, scope, error);
 *   - protected-resource metadata (RFC 9728): the challenge's URL, else the path-inserted
 *     well-known URL, then the root one; its `resource` must name this server (same origin,
 *     a path prefix at a segment boundary) or nothing is sent anywhere;
 *   - authorization-server metadata (RFC 8414, then OpenID discovery, in the spec's order of
 *     URLs); its `issuer` must be exactly the issuer the URL was built from;
 *   - a client: the configured client_id (pre-registered), else a client ID metadata document
 *     URL when the server advertises client_id_metadata_document_supported, else dynamic
 *     registration (RFC 7591); a new issuer (authorization-server migration) drops the
 *     registration and the tokens of the old one;
 *   - a grant: refresh_token when one is held; else client_credentials, jwt_bearer, or the
 *     authorization code with PKCE S256 (headless: the authorization URL is fetched and the
 *     redirect's code read — an auto-approving server, as the conformance suite's; RFC 9207
 *     `iss` checked by plain string comparison); `resource` (RFC 8707, exactly the metadata's)
 *     on the authorization and every token request; scope from the challenge, else the
 *     configured scope, else scopes_supported, else none, plus offline_access when the server
 *     offers it and refresh tokens;
 *   - a 403 insufficient_scope steps up (the union of the scopes) at most
 *     GG_OAUTH_CLIENT_MAX_STEP_UPS times in a row;
 *   - on behalf of the caller (mcp_auth_for_caller), instead of a grant of its own: the caller's
 *     token exchanged (RFC 8693) at the authorization server (token_exchange), or at the
 *     enterprise IdP for an ID-JAG then presented as a jwt-bearer grant (id_jag with
 *     subject: caller); never refreshed; a 403 insufficient_scope exchanges it again for
 *     more scope (the same bound).
 * Every request of the provider is blocking libcurl on a helper thread (one per resolution,
 * concurrent 401s wait for the same one), bounded in time (timeout_ms) and size
 * (GG_OAUTH_CLIENT_MAX_BODY), without redirects, each address checked by the caller's policy
 * callbacks. Tokens and secrets never go into an error message or a log line.
 */
#include "auth/auth.h"
#include "mcp/mcp.h" /* mcp_auth_for_caller: this client implements that seam */

#include <stdatomic.h>
#include <curl/curl.h>
#include <jose/b64.h>
#include <jose/jwk.h>
#include <jose/jws.h>
#include <jose/openssl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_BODY GG_OAUTH_CLIENT_MAX_BODY
#define DEFAULT_TIMEOUT_MS 10000
/* A token this close to its expiry is renewed in the background before a request needs it,
 * tried at most this often (an authorization server that is down costs one thread a while). */
#define RENEW_MARGIN_S 60.0
#define RENEW_RETRY_S 10.0
#define DEFAULT_REDIRECT "http://127.0.0.1/callback"

typedef enum { GT_OAUTH, GT_CLIENT_CREDENTIALS, GT_JWT_BEARER, GT_ID_JAG, GT_EXCHANGE } grant_type;

/* token_exchange (RFC 8693, on behalf of the caller): an exchanged token is used until this
 * close to its expiry, or for half its life when that is shorter (then the next call
 * exchanges again: nothing renews it in the background, since only a call brings a caller's
 * token); one without expires_in is kept at most EXCHANGE_UNKNOWN_TTL_S. A token refused (401 invalid_token) within
 * EXCHANGE_REFUSED_WINDOW_S of an exchange that followed a refusal is not exchanged again. */
#define EXCHANGE_MARGIN_S 30.0
#define EXCHANGE_UNKNOWN_TTL_S 300.0
#define EXCHANGE_REFUSED_WINDOW_S 60.0
#define TOKEN_TYPE_ACCESS "urn:ietf:params:oauth:token-type:access_token"
#define TOKEN_TYPE_ID "urn:ietf:params:oauth:token-type:id_token"

typedef struct waiter {
    gg_oauth_client_done_fn done;
    void *user;
    struct waiter *next;
} waiter;

struct gg_oauth_client {
    /* settings (immutable after _new) */
    grant_type type;
    /* on behalf of the caller (mcp_auth_for_caller): token_exchange, or id_jag with
     * subject: caller; each call's caller's token is exchanged, nothing is refreshed */
    bool for_caller;
    char *name, *server_url;
    char *client_id, *client_secret, *scope, *auth_method, *cimd_url, *redirect_uri, *assertion;
    char *idp_token_endpoint, *idp_client_id, *idp_client_secret; /* id_jag: the enterprise IdP */
    char *audience; /* token_exchange: the `audience` parameter, when configured */
    json_t *client_key; /* private_key_jwt: the private JWK (with its alg) signing assertions */
    json_t *dpop_key;   /* DPoP: the private JWK of this client's proofs (ES256, made at start) */
    json_t *dpop_pub;   /* its public half, in every proof's header */
    int timeout_ms;
    bool per_user;              /* one principal's grant: refreshed, never made here */
    gg_oauth_client_store store; /* per_user: where its grant goes after a refresh */
    gg_oauth_client_net net;
    /* state, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *access, *refresh, *granted_scope;
    bool dpop_token; /* token_type DPoP (not sent: no proof key yet, see the header) */
    double expires_at; /* wall seconds; 0 = unknown (kept until a 401) */
    double renew_tried; /* wall seconds of the last background renewal */
    char *resource, *issuer; /* discovery, kept between resolutions */
    json_t *as_meta, *prm;
    char *reg_id, *reg_secret, *reg_method; /* dynamic registration at issuer */
    char *want_scope; /* the scope asked for last (step-up unions with it) */
    char as_nonce[256], rs_nonce[256]; /* DPoP nonces the servers gave (RFC 9449 sections 8, 9) */
    int step_ups;     /* 403 insufficient_scope in a row */
    /* token_exchange: the callers' token (the newest a call handed over, a copy) while any
     * call holds it (gg_oauth_client_subject), and the last exchange */
    char *subject;
    int subject_holds;
    double exchanged_at;  /* wall seconds */
    double use_until;     /* wall seconds: the exchanged token is used until then (see EXCHANGE_MARGIN_S) */
    bool reexchanged;     /* that exchange followed a refused token */
    /* the resolution in flight */
    bool busy;
    int threads;
    waiter *waiting;
    int pending_status;
    char *pending_challenge;
    char last_error[256]; /* why the last resolution failed (its message: no credential in it) */
    double last_error_at; /* wall seconds; 0 = the last one succeeded */
    _Atomic unsigned long fetches, failures;
};

char *gg_oauth_client_grant(gg_oauth_client *c);

/* ---- pure parts (exported for the unit test) ---------------------------------------------- */

/* RFC 9110 auth-param lists: `Bearer a="x", b=y, DPoP algs="ES256"`; only the parameters
 * of the OAuth schemes (Bearer, DPoP) are kept (another scheme's are skipped). */
static const char *skip_ws(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == ',') s++;
    return s;
}

static size_t token_len(const char *s) {
    size_t n = 0;
    while (s[n] && !strchr(" \t,=\"", s[n])) n++;
    return n;
}

/* One value (token or quoted-string) into out (cut at cap); returns the text after it. */
static const char *read_value(const char *s, char *out, size_t cap) {
    size_t o = 0;
    if (*s == '"') {
        s++;
        while (*s && *s != '"') {
            if (*s == '\\' && s[1]) s++;
            if (o + 1 < cap) out[o++] = *s;
            s++;
        }
        if (*s == '"') s++;
    } else {
        size_t n = token_len(s);
        for (size_t i = 0; i < n; i++)
            if (o + 1 < cap) out[o++] = s[i];
        s += n;
    }
    if (cap) out[o] = '\0';
    return s;
}

bool gg_oauth_client_parse_challenge(const char *www, gg_oauth_challenge *out) {
    memset(out, 0, sizeof *out);
    if (!www) return false;
    const char *s = skip_ws(www);
    bool in_bearer = false;
    while (*s) {
        size_t n = token_len(s);
        if (!n) { /* stray character: skip it */
            s++;
            s = skip_ws(s);
            continue;
        }
        const char *after = s + n;
        while (*after == ' ' || *after == '\t') after++;
        if (*after != '=' || after[1] == '=' || (after[1] == '\0')) { /* a scheme name (or token68) */
            if (*after == '=') { /* token68 "abc==": skip */
                while (*after == '=') after++;
                s = skip_ws(after);
                continue;
            }
            in_bearer = (n == 6 && !strncasecmp(s, "Bearer", 6)) || (n == 4 && !strncasecmp(s, "DPoP", 4));
            if (in_bearer) out->bearer = true;
            s = skip_ws(after);
            continue;
        }
        char name[32] = "";
        snprintf(name, sizeof name, "%.*s", (int)(n < 31 ? n : 31), s);
        s = after + 1;
        while (*s == ' ' || *s == '\t') s++;
        char val[GG_OAUTH_CLIENT_URL_MAX];
        s = read_value(s, val, sizeof val);
        s = skip_ws(s);
        if (!in_bearer) continue;
        if (!strcasecmp(name, "resource_metadata")) gg_strcopy(out->resource_metadata, sizeof out->resource_metadata, val);
        else if (!strcasecmp(name, "scope")) gg_strcopy(out->scope, sizeof out->scope, val);
        else if (!strcasecmp(name, "error")) gg_strcopy(out->error, sizeof out->error, val);
    }
    return out->bearer;
}

/* scheme://authority and the path (without a trailing '/') of an http(s) URL; false when it
 * is not one (or has a query or fragment we would have to carry). */
static bool split_url(const char *url, char *origin, size_t ocap, char *path, size_t pcap) {
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *p = NULL;
    bool ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_PATH, &p, 0) == CURLUE_OK &&
              (!strcasecmp(scheme, "http") || !strcasecmp(scheme, "https"));
    if (ok) curl_url_get(u, CURLUPART_PORT, &port, 0);
    if (ok) {
        int n = port ? snprintf(origin, ocap, "%s://%s:%s", scheme, host, port) : snprintf(origin, ocap, "%s://%s", scheme, host);
        size_t pl = strlen(p);
        while (pl && p[pl - 1] == '/') pl--;
        ok = n > 0 && (size_t)n < ocap && pl < pcap;
        if (ok) {
            memcpy(path, p, pl);
            path[pl] = '\0';
        }
    }
    curl_free(scheme), curl_free(host), curl_free(port), curl_free(p);
    if (u) curl_url_cleanup(u);
    return ok;
}

int gg_oauth_client_prm_urls(const char *server_url, char urls[][GG_OAUTH_CLIENT_URL_MAX], int max) {
    char origin[GG_OAUTH_CLIENT_URL_MAX], path[GG_OAUTH_CLIENT_URL_MAX];
    if (max < 2 || !split_url(server_url, origin, sizeof origin, path, sizeof path)) return 0;
    int n = 0;
    if (path[0] && snprintf(urls[n], GG_OAUTH_CLIENT_URL_MAX, "%s/.well-known/oauth-protected-resource%s", origin, path) <
                       GG_OAUTH_CLIENT_URL_MAX)
        n++;
    if (snprintf(urls[n], GG_OAUTH_CLIENT_URL_MAX, "%s/.well-known/oauth-protected-resource", origin) < GG_OAUTH_CLIENT_URL_MAX)
        n++;
    return n;
}

int gg_oauth_client_as_urls(const char *issuer, char urls[][GG_OAUTH_CLIENT_URL_MAX], int max) {
    char origin[GG_OAUTH_CLIENT_URL_MAX], path[GG_OAUTH_CLIENT_URL_MAX];
    if (max < 3 || !split_url(issuer, origin, sizeof origin, path, sizeof path)) return 0;
    int n = 0;
    const int M = GG_OAUTH_CLIENT_URL_MAX;
    if (path[0]) { /* the spec's order for an issuer with a path */
        if (snprintf(urls[n], M, "%s/.well-known/oauth-authorization-server%s", origin, path) < M) n++;
        if (snprintf(urls[n], M, "%s/.well-known/openid-configuration%s", origin, path) < M) n++;
        if (snprintf(urls[n], M, "%s%s/.well-known/openid-configuration", origin, path) < M) n++;
    } else {
        if (snprintf(urls[n], M, "%s/.well-known/oauth-authorization-server", origin) < M) n++;
        if (snprintf(urls[n], M, "%s/.well-known/openid-configuration", origin) < M) n++;
    }
    return n;
}

bool gg_oauth_client_resource_ok(const char *resource, const char *server_url) {
    char ro[GG_OAUTH_CLIENT_URL_MAX], rp[GG_OAUTH_CLIENT_URL_MAX], so[GG_OAUTH_CLIENT_URL_MAX], sp[GG_OAUTH_CLIENT_URL_MAX];
    if (!resource || strchr(resource, '#') || !split_url(resource, ro, sizeof ro, rp, sizeof rp) ||
        !split_url(server_url, so, sizeof so, sp, sizeof sp))
        return false;
    if (strcasecmp(ro, so)) return false;
    size_t n = strlen(rp);
    return !strncmp(rp, sp, n) && (sp[n] == '\0' || sp[n] == '/');
}

bool gg_oauth_client_iss_ok(const char *iss, const char *issuer, bool advertised) {
    if (!iss) return !advertised;
    return issuer && !strcmp(iss, issuer); /* RFC 9207: simple string comparison */
}

void gg_oauth_client_pkce(char verifier[GG_OAUTH_PKCE_VERIFIER_LEN + 1], char challenge[GG_OAUTH_PKCE_CHALLENGE_LEN + 1]) {
    unsigned char rnd[32], h[crypto_hash_sha256_BYTES];
    randombytes_buf(rnd, sizeof rnd);
    sodium_bin2base64(verifier, GG_OAUTH_PKCE_VERIFIER_LEN + 1, rnd, sizeof rnd, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    crypto_hash_sha256(h, (const unsigned char *)verifier, GG_OAUTH_PKCE_VERIFIER_LEN);
    sodium_bin2base64(challenge, GG_OAUTH_PKCE_CHALLENGE_LEN + 1, h, sizeof h, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(rnd, sizeof rnd);
}

/* ---- settings ---------------------------------------------------------------------------- */

static const char *const setting_keys[] = {"type", "client_id", "client_secret", "scope", "token_endpoint_auth_method",
                                           "client_metadata_url", "redirect_uri", "assertion", "private_key",
                                           "signing_algorithm", "dpop", "idp_token_endpoint", "idp_client_id",
                                           "idp_client_secret", "timeout", "per_user", "audience", "subject", NULL};

bool gg_oauth_client_check_settings(const json_t *s, gg_error *err) {
    if (!json_is_object(s)) return gg_error_set(err, "invalid_config", "auth must be a mapping"), false;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        size_t i = 0;
        while (setting_keys[i] && strcmp(setting_keys[i], k)) i++;
        if (!setting_keys[i]) return gg_error_set(err, "invalid_config", "auth: unknown key '%s'", k), false;
        bool num = !strcmp(k, "timeout"), flag = !strcmp(k, "dpop") || !strcmp(k, "per_user");
        if (num ? !json_is_integer(v) : flag ? !json_is_boolean(v) : !json_is_string(v))
            return gg_error_set(err, "invalid_config", "auth.%s must be a %s", k, num ? "number" : flag ? "boolean" : "string"),
                   false;
    }
    const char *type = json_string_value(json_object_get(s, "type"));
    if (!type || (strcmp(type, "oauth") && strcmp(type, "client_credentials") && strcmp(type, "jwt_bearer") &&
                  strcmp(type, "id_jag") && strcmp(type, "token_exchange")))
        return gg_error_set(err, "invalid_config",
                            "auth.type must be oauth, client_credentials, jwt_bearer, id_jag or token_exchange"),
               false;
    bool ex = !strcmp(type, "token_exchange");
    if (ex && !json_object_get(s, "client_id"))
        return gg_error_set(err, "invalid_config", "auth: token_exchange needs client_id"), false;
    if (ex && json_object_get(s, "assertion"))
        return gg_error_set(err, "invalid_config", "auth: token_exchange takes no assertion (the caller's token is the subject)"),
               false;
    if (!ex && json_object_get(s, "audience"))
        return gg_error_set(err, "invalid_config", "auth.audience is a token_exchange setting"), false;
    const char *subject = json_string_value(json_object_get(s, "subject"));
    if (subject && (strcmp(subject, "caller") || strcmp(type, "id_jag")))
        return gg_error_set(err, "invalid_config", "auth.subject must be caller, with type id_jag"), false;
    if (subject && json_object_get(s, "assertion"))
        return gg_error_set(err, "invalid_config",
                            "auth: id_jag with subject caller takes no assertion (the caller's token is the subject)"),
               false;
    if (!strcmp(type, "id_jag") && (!json_object_get(s, "idp_token_endpoint") || !json_object_get(s, "idp_client_id") ||
                                    (!subject && !json_object_get(s, "assertion")) || !json_object_get(s, "client_id")))
        return gg_error_set(err, "invalid_config",
                            "auth: id_jag needs idp_token_endpoint, idp_client_id, assertion (the ID token; or subject: "
                            "caller) and client_id"),
               false;
    const char *m = json_string_value(json_object_get(s, "token_endpoint_auth_method"));
    if (m && strcmp(m, "client_secret_basic") && strcmp(m, "client_secret_post") && strcmp(m, "none") &&
        strcmp(m, "private_key_jwt"))
        return gg_error_set(err, "invalid_config",
                            "auth.token_endpoint_auth_method must be client_secret_basic, client_secret_post, none or "
                            "private_key_jwt"),
               false;
    if (m && !strcmp(m, "private_key_jwt") && !json_object_get(s, "private_key"))
        return gg_error_set(err, "invalid_config", "auth: private_key_jwt needs private_key (PEM)"), false;
    const char *alg = json_string_value(json_object_get(s, "signing_algorithm"));
    if (alg && strcmp(alg, "ES256") && strcmp(alg, "ES384") && strcmp(alg, "RS256") && strcmp(alg, "PS256"))
        return gg_error_set(err, "invalid_config", "auth.signing_algorithm must be ES256, ES384, RS256 or PS256"), false;
    if (json_is_true(json_object_get(s, "per_user")) && strcmp(type, "oauth"))
        return gg_error_set(err, "invalid_config", "auth.per_user needs type oauth (each user's consent)"), false;
    if (!strcmp(type, "client_credentials") && !json_object_get(s, "client_id"))
        return gg_error_set(err, "invalid_config", "auth: client_credentials needs client_id"), false;
    if (!strcmp(type, "jwt_bearer") && !json_object_get(s, "assertion"))
        return gg_error_set(err, "invalid_config", "auth: jwt_bearer needs assertion (the workload's JWT)"), false;
    json_t *to = json_object_get(s, "timeout");
    if (to && (json_integer_value(to) < 100 || json_integer_value(to) > 120000))
        return gg_error_set(err, "invalid_config", "auth.timeout must be milliseconds between 100 and 120000"), false;
    return true;
}

static char *opt_dup(const json_t *s, const char *key) {
    const char *v = json_string_value(json_object_get(s, key));
    return v ? strdup(v) : NULL;
}

static void wipe_free(char *s) {
    if (s) sodium_memzero(s, strlen(s));
    free(s);
}

/* An encrypted key is refused (OpenSSL's default would ask a terminal for its passphrase). */
static int no_passphrase(char *buf, int size, int rw, void *u) {
    (void)buf, (void)size, (void)rw, (void)u;
    return 0;
}

/* A PEM private key as a JWK signing with alg (libjose over OpenSSL); NULL when unreadable. */
static json_t *key_from_pem(const char *pem, const char *alg) {
    BIO *b = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *pk = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL) : NULL;
    json_t *jwk = pk ? jose_openssl_jwk_from_EVP_PKEY(NULL, pk) : NULL;
    EVP_PKEY_free(pk);
    BIO_free(b);
    if (jwk) json_object_set_new(jwk, "alg", json_string(alg));
    return jwk;
}

/* A fresh ES256 key for DPoP proofs (one per client: its tokens are bound to it). */
static bool dpop_key_new(gg_oauth_client *c) {
    c->dpop_key = json_pack("{s:s}", "alg", "ES256");
    if (!c->dpop_key || !jose_jwk_gen(NULL, c->dpop_key)) return false;
    c->dpop_pub = gg_json_clone(c->dpop_key);
    return c->dpop_pub && jose_jwk_pub(NULL, c->dpop_pub);
}

gg_oauth_client *gg_oauth_client_new(const json_t *settings, const char *server_url, const char *name,
                                     const gg_oauth_client_net *net, gg_error *err) {
    if (!gg_oauth_client_check_settings(settings, err)) return NULL;
    gg_oauth_client *c = calloc(1, sizeof *c);
    if (!c) return gg_error_set(err, "oom", "out of memory"), NULL;
    const char *type = json_string_value(json_object_get(settings, "type"));
    c->type = !strcmp(type, "oauth")                ? GT_OAUTH
              : !strcmp(type, "client_credentials") ? GT_CLIENT_CREDENTIALS
              : !strcmp(type, "id_jag")             ? GT_ID_JAG
              : !strcmp(type, "token_exchange")     ? GT_EXCHANGE
                                                    : GT_JWT_BEARER;
    c->for_caller = mcp_auth_for_caller(settings);
    c->audience = opt_dup(settings, "audience");
    c->idp_token_endpoint = opt_dup(settings, "idp_token_endpoint");
    c->idp_client_id = opt_dup(settings, "idp_client_id");
    c->idp_client_secret = opt_dup(settings, "idp_client_secret");
    c->name = strdup(name ? name : server_url);
    c->server_url = strdup(server_url);
    c->client_id = opt_dup(settings, "client_id");
    c->client_secret = opt_dup(settings, "client_secret");
    c->scope = opt_dup(settings, "scope");
    c->auth_method = opt_dup(settings, "token_endpoint_auth_method");
    c->cimd_url = opt_dup(settings, "client_metadata_url");
    c->redirect_uri = opt_dup(settings, "redirect_uri");
    c->assertion = opt_dup(settings, "assertion");
    json_t *to = json_object_get(settings, "timeout");
    c->timeout_ms = to ? (int)json_integer_value(to) : DEFAULT_TIMEOUT_MS;
    c->per_user = json_is_true(json_object_get(settings, "per_user"));
    if (net) c->net = *net;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (!c->name || !c->server_url) {
        gg_oauth_client_free(c);
        return gg_error_set(err, "oom", "out of memory"), NULL;
    }
    const char *pem = json_string_value(json_object_get(settings, "private_key"));
    const char *alg = json_string_value(json_object_get(settings, "signing_algorithm"));
    if (pem && !(c->client_key = key_from_pem(pem, alg ? alg : "ES256"))) {
        gg_oauth_client_free(c);
        return gg_error_set(err, "invalid_config", "auth.private_key is not a PEM private key"), NULL;
    }
    if (json_is_true(json_object_get(settings, "dpop")) && !dpop_key_new(c)) {
        gg_oauth_client_free(c);
        return gg_error_set(err, "downstream_auth", "cannot make a DPoP key"), NULL;
    }
    return c;
}

static void forget_tokens(gg_oauth_client *c) {
    wipe_free(c->access);
    wipe_free(c->refresh);
    free(c->granted_scope);
    c->access = c->refresh = c->granted_scope = NULL;
    c->expires_at = 0;
}

static void forget_registration(gg_oauth_client *c) {
    free(c->reg_id);
    wipe_free(c->reg_secret);
    free(c->reg_method);
    c->reg_id = c->reg_secret = c->reg_method = NULL;
}

void gg_oauth_client_free(gg_oauth_client *c) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    while (c->threads > 0) pthread_cond_wait(&c->cv, &c->mu); /* resolutions end within their timeouts */
    pthread_mutex_unlock(&c->mu);
    forget_tokens(c);
    forget_registration(c);
    free(c->name), free(c->server_url), free(c->client_id), free(c->scope), free(c->auth_method);
    wipe_free(c->client_secret);
    wipe_free(c->assertion);
    free(c->idp_token_endpoint), free(c->idp_client_id);
    wipe_free(c->idp_client_secret);
    free(c->cimd_url), free(c->redirect_uri), free(c->resource), free(c->issuer), free(c->want_scope);
    free(c->pending_challenge);
    free(c->audience);
    wipe_free(c->subject);
    json_decref(c->as_meta);
    json_decref(c->prm);
    json_decref(c->client_key);
    json_decref(c->dpop_key);
    json_decref(c->dpop_pub);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

/* ---- JWTs this client signs (libjose): private_key_jwt assertions, DPoP proofs ------------- */

/* header and claims (both taken) signed by key into a compact JWS (caller frees). */
static char *sign_compact(const json_t *key, json_t *hdr, json_t *claims) {
    char *p = claims ? json_dumps(claims, JSON_COMPACT) : NULL;
    json_decref(claims);
    json_t *pe = p ? jose_b64_enc(p, strlen(p)) : NULL;
    free(p);
    json_t *jws = pe ? json_pack("{s:o}", "payload", pe) : NULL;
    json_t *sig = hdr ? json_pack("{s:o}", "protected", hdr) : NULL;
    char *out = NULL;
    if (jws && sig && jose_jws_sig(NULL, jws, sig, key) &&
        asprintf(&out, "%s.%s.%s", json_string_value(json_object_get(jws, "protected")),
                 json_string_value(json_object_get(jws, "payload")), json_string_value(json_object_get(jws, "signature"))) < 0)
        out = NULL;
    json_decref(jws);
    json_decref(sig);
    return out;
}

static void random_id(char out[24]) {
    unsigned char r[16];
    randombytes_buf(r, sizeof r);
    sodium_bin2base64(out, 24, r, sizeof r, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

/* RFC 7523 section 2.2: the client's assertion for the token endpoint of issuer. */
static char *client_assertion(gg_oauth_client *c, const char *id) {
    char jti[24];
    random_id(jti);
    json_int_t now = (json_int_t)(gg_wall_ms() / 1000);
    return sign_compact(c->client_key,
                        json_pack("{s:s, s:s}", "alg", json_string_value(json_object_get(c->client_key, "alg")), "typ", "JWT"),
                        json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "iss", id, "sub", id, "aud", c->issuer, "jti", jti, "iat",
                                  now, "exp", now + 60));
}

/* RFC 9449 section 4.2: a proof for one request (htu without query or fragment); token
 * binds it (ath) when given, nonce when the server asked for one. */
static char *dpop_proof(gg_oauth_client *c, const char *method, const char *url, const char *token, const char *nonce) {
    char jti[24], htu[GG_OAUTH_CLIENT_URL_MAX];
    random_id(jti);
    gg_strcopy(htu, sizeof htu, url);
    htu[strcspn(htu, "?#")] = '\0';
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I}", "jti", jti, "htm", method, "htu", htu, "iat",
                               (json_int_t)(gg_wall_ms() / 1000));
    if (claims && nonce && *nonce) json_object_set_new(claims, "nonce", json_string(nonce));
    if (claims && token) {
        unsigned char h[crypto_hash_sha256_BYTES];
        char ath[GG_OAUTH_PKCE_CHALLENGE_LEN + 1];
        crypto_hash_sha256(h, (const unsigned char *)token, strlen(token));
        sodium_bin2base64(ath, sizeof ath, h, sizeof h, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        json_object_set_new(claims, "ath", json_string(ath));
    }
    return sign_compact(c->dpop_key, json_pack("{s:s, s:s, s:O}", "typ", "dpop+jwt", "alg", "ES256", "jwk", c->dpop_pub),
                        claims);
}

/* ---- HTTP (helper thread, blocking, bounded) ------------------------------------------------ */

typedef struct xfer {
    gg_oauth_client *c;
    const char *url;
    gg_strbuf body;
    bool too_big, refused;
    char location[GG_OAUTH_CLIENT_URL_MAX * 2];
    char dpop_nonce[256]; /* the answer's DPoP-Nonce */
    char why[256];
} xfer;

static size_t on_write(char *p, size_t size, size_t n, void *user) {
    xfer *x = user;
    size_t len = size * n;
    if (x->body.len + len > MAX_BODY) {
        x->too_big = true;
        return 0;
    }
    return gg_strbuf_append(&x->body, p, len) ? len : 0;
}

static size_t on_hdr(char *b, size_t size, size_t n, void *user) {
    xfer *x = user;
    size_t len = size * n;
    bool loc = len > 9 && !strncasecmp(b, "location:", 9), nonce = len > 11 && !strncasecmp(b, "dpop-nonce:", 11);
    if (!loc && !nonce) return len;
    size_t skip = loc ? 9 : 11, cap = loc ? sizeof x->location : sizeof x->dpop_nonce;
    char *dst = loc ? x->location : x->dpop_nonce;
    const char *v = b + skip;
    size_t vl = len - skip;
    while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' ')) vl--;
    if (vl < cap) {
        memcpy(dst, v, vl);
        dst[vl] = '\0';
    }
    return len;
}

static curl_socket_t on_socket(void *user, curlsocktype purpose, struct curl_sockaddr *a) {
    (void)purpose;
    xfer *x = user;
    if (x->c->net.connect_ok && !x->c->net.connect_ok(x->c->net.ctx, x->url, &a->addr, x->why, sizeof x->why)) {
        x->refused = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

/* One request: GET (form NULL) or a POST of form (a form unless content_type, a header
 * line, says otherwise); basic_user/basic_pass for HTTP Basic (may be NULL). Returns the
 * status (0 when none came, err set), the body in x->body. */
static long http_ex(gg_oauth_client *c, xfer *x, const char *url, const char *form, const char *content_type,
                    const char *extra, const char *basic_user, const char *basic_pass, bool json_accept, gg_error *err);
static long http(gg_oauth_client *c, xfer *x, const char *url, const char *form, const char *content_type,
                 const char *basic_user, const char *basic_pass, bool json_accept, gg_error *err) {
    return http_ex(c, x, url, form, content_type, NULL, basic_user, basic_pass, json_accept, err);
}

static long http_ex(gg_oauth_client *c, xfer *x, const char *url, const char *form, const char *content_type,
                    const char *extra, const char *basic_user, const char *basic_pass, bool json_accept, gg_error *err) {
    memset(x, 0, sizeof *x);
    x->c = c;
    x->url = url;
    if (c->net.url_ok && !c->net.url_ok(c->net.ctx, url, x->why, sizeof x->why)) {
        gg_error_set(err, "downstream_auth", "%s", x->why);
        return 0;
    }
    CURL *h = curl_easy_init();
    if (!h) return gg_error_set(err, "downstream_auth", "cannot create a curl handle"), 0;
    struct curl_slist *hd = curl_slist_append(NULL, json_accept ? "Accept: application/json" : "Accept: */*");
    if (content_type) hd = curl_slist_append(hd, content_type);
    if (extra) hd = curl_slist_append(hd, extra);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_USERAGENT, "graphgate");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_hdr);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_socket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, x);
    if (form) curl_easy_setopt(h, CURLOPT_POSTFIELDS, form);
    if (basic_user) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, basic_user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, basic_pass ? basic_pass : "");
    }
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    atomic_fetch_add_explicit(&c->fetches, 1, memory_order_relaxed);
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && !x->too_big)) {
        atomic_fetch_add_explicit(&c->failures, 1, memory_order_relaxed);
        if (x->refused) gg_error_set(err, "downstream_auth", "%s: %s", url, x->why[0] ? x->why : "refused by policy");
        else if (x->too_big) gg_error_set(err, "downstream_auth", "%s: answer longer than %u bytes", url, (unsigned)MAX_BODY);
        else gg_error_set(err, "downstream_auth", "%s: %s", url, curl_easy_strerror(rc));
        return 0;
    }
    return status;
}

static json_t *body_json(xfer *x) {
    if (!x->body.len) return NULL;
    json_t *j = json_loadb(x->body.data, x->body.len, 0, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* GET a metadata document: the object, or NULL (not found / not JSON: the next URL). */
static json_t *get_doc(gg_oauth_client *c, const char *url, gg_error *err) {
    xfer x;
    long st = http(c, &x, url, NULL, NULL, NULL, NULL, true, err);
    json_t *j = st == 200 ? body_json(&x) : NULL;
    gg_strbuf_free(&x.body);
    return j;
}

/* ---- discovery ------------------------------------------------------------------------------ */

static const char *meta_str(const json_t *m, const char *k) { return json_string_value(json_object_get(m, k)); }

static bool list_has(const json_t *arr, const char *v) {
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) if (json_is_string(e) && !strcmp(json_string_value(e), v)) return true;
    return false;
}

/* Protected-resource metadata: c->prm, c->resource, and the issuer it names (caller frees). */
static char *discover_resource(gg_oauth_client *c, const char *hint, gg_error *err) {
    char urls[3][GG_OAUTH_CLIENT_URL_MAX];
    int n = 0;
    if (hint && *hint) gg_strcopy(urls[n++], sizeof urls[0], hint);
    else n = gg_oauth_client_prm_urls(c->server_url, urls, 3);
    json_t *prm = NULL;
    for (int i = 0; i < n && !prm && !gg_error_is_set(err); i++) prm = get_doc(c, urls[i], err);
    if (gg_error_is_set(err)) return NULL;
    if (!prm) { /* no metadata (2025-03-26 servers): the server's origin is its authorization server */
        char origin[GG_OAUTH_CLIENT_URL_MAX], path[GG_OAUTH_CLIENT_URL_MAX];
        if (!split_url(c->server_url, origin, sizeof origin, path, sizeof path))
            return gg_error_set(err, "downstream_auth", "the server URL cannot be parsed"), NULL;
        free(c->resource);
        c->resource = strdup(c->server_url);
        return strdup(origin);
    }
    const char *res = meta_str(prm, "resource");
    if (!gg_oauth_client_resource_ok(res, c->server_url)) {
        gg_error_set(err, "downstream_auth",
                     "protected-resource metadata names resource '%.200s', not this server (RFC 9728 section 3.3)",
                     res ? res : "(none)");
        json_decref(prm);
        return NULL;
    }
    const char *as = json_string_value(json_array_get(json_object_get(prm, "authorization_servers"), 0));
    if (!as) {
        json_decref(prm);
        return gg_error_set(err, "downstream_auth", "protected-resource metadata names no authorization server"), NULL;
    }
    char *issuer = strdup(as);
    free(c->resource);
    c->resource = strdup(res);
    json_decref(c->prm);
    c->prm = prm;
    return issuer;
}

/* Authorization-server metadata of issuer into c->as_meta; a new issuer drops what the old
 * one issued (registration, tokens). */
static bool discover_server(gg_oauth_client *c, char *issuer, gg_error *err) {
    pthread_mutex_lock(&c->mu);
    if (c->issuer && strcmp(c->issuer, issuer)) { /* migration (SEP-2352): nothing of the old one is reused */
        forget_registration(c);
        forget_tokens(c);
        json_decref(c->as_meta);
        c->as_meta = NULL;
    }
    free(c->issuer);
    c->issuer = issuer;
    pthread_mutex_unlock(&c->mu);
    if (c->as_meta) return true;
    char urls[3][GG_OAUTH_CLIENT_URL_MAX];
    int n = gg_oauth_client_as_urls(issuer, urls, 3);
    json_t *m = NULL;
    for (int i = 0; i < n && !m && !gg_error_is_set(err); i++) m = get_doc(c, urls[i], err);
    if (gg_error_is_set(err)) return false;
    if (!m) { /* 2025-03-26 fallback: the default endpoints at the server's origin */
        m = json_pack("{s:s, s:s+, s:s+, s:s+}", "issuer", issuer, "authorization_endpoint", issuer, "/authorize",
                      "token_endpoint", issuer, "/token", "registration_endpoint", issuer, "/register");
        if (!m) return gg_error_set(err, "oom", "out of memory"), false;
    } else if (!meta_str(m, "issuer") || strcmp(meta_str(m, "issuer"), issuer)) {
        gg_error_set(err, "downstream_auth", "authorization-server metadata names issuer '%.200s', expected '%.200s' (RFC 8414 section 3.3)",
                     meta_str(m, "issuer") ? meta_str(m, "issuer") : "(none)", issuer);
        json_decref(m);
        return false;
    } else if (!meta_str(m, "token_endpoint")) {
        json_decref(m);
        return gg_error_set(err, "downstream_auth", "authorization-server metadata has no token_endpoint"), false;
    }
    c->as_meta = m;
    return true;
}

/* ---- token requests ------------------------------------------------------------------------- */

static void form_add(gg_strbuf *b, const char *k, const char *v) {
    if (!v) return;
    char *e = curl_easy_escape(NULL, v, 0);
    if (!e) return;
    gg_strbuf_printf(b, "%s%s=%s", b->len ? "&" : "", k, e);
    curl_free(e);
}

/* The scope to ask for (caller frees; NULL = none). */
static char *choose_scope(gg_oauth_client *c, const char *challenge_scope) {
    const char *base = challenge_scope && *challenge_scope ? challenge_scope : c->scope;
    gg_strbuf b = {0};
    if (base) gg_strbuf_puts(&b, base);
    else {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(c->prm, "scopes_supported"), i, e)
            if (json_is_string(e)) gg_strbuf_printf(&b, "%s%s", b.len ? " " : "", json_string_value(e));
    }
    /* a refresh token is worth asking for where the server offers both (SEP-2207) */
    if (c->type == GT_OAUTH && list_has(json_object_get(c->as_meta, "scopes_supported"), "offline_access") &&
        list_has(json_object_get(c->as_meta, "grant_types_supported"), "refresh_token") &&
        !(b.data && strstr(b.data, "offline_access")))
        gg_strbuf_printf(&b, "%s%s", b.len ? " " : "", "offline_access");
    return b.len ? gg_strbuf_take(&b) : (gg_strbuf_free(&b), NULL);
}

/* The union of two space-separated scope lists (caller frees). */
static char *scope_union(const char *a, const char *b) {
    gg_strbuf o = {0};
    if (a) gg_strbuf_puts(&o, a);
    char *copy = b ? strdup(b) : NULL, *save = NULL;
    for (char *t = copy ? strtok_r(copy, " ", &save) : NULL; t; t = strtok_r(NULL, " ", &save)) {
        bool have = false;
        if (o.data) {
            size_t n = strlen(t);
            for (const char *p = strstr(o.data, t); p && !have; p = strstr(p + 1, t))
                have = (p == o.data || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0');
        }
        if (!have) gg_strbuf_printf(&o, "%s%s", o.len ? " " : "", t);
    }
    free(copy);
    return o.len ? gg_strbuf_take(&o) : (gg_strbuf_free(&o), NULL);
}

/* How this client authenticates at the token endpoint. */
static const char *auth_method_of(gg_oauth_client *c, const char *secret) {
    if (c->auth_method) return c->auth_method;
    if (c->client_key) return "private_key_jwt";
    if (c->reg_method) return c->reg_method;
    if (!secret) return "none";
    const json_t *sup = json_object_get(c->as_meta, "token_endpoint_auth_methods_supported");
    if (!sup || list_has(sup, "client_secret_basic")) return "client_secret_basic";
    if (list_has(sup, "client_secret_post")) return "client_secret_post";
    return "client_secret_basic";
}

/* POST a token request (form without client authentication, which is added here) and keep
 * the answer's tokens. With DPoP every attempt carries a fresh proof, and a use_dpop_nonce
 * answer is tried once more with the server's nonce (RFC 9449 section 8). */
static bool token_request(gg_oauth_client *c, gg_strbuf *form, const char *id, const char *secret, gg_error *err) {
    const char *method = c->client_key ? "private_key_jwt" : auth_method_of(c, secret);
    bool basic = !strcmp(method, "client_secret_basic") && secret;
    if (!basic) form_add(form, "client_id", id);
    if (!strcmp(method, "client_secret_post")) form_add(form, "client_secret", secret);
    if (!strcmp(method, "private_key_jwt")) {
        char *a = c->client_key ? client_assertion(c, id) : NULL;
        if (!a) { /* the form may hold a code, refresh token or the caller's token: wiped on every path */
            sodium_memzero(form->data, form->len);
            return gg_error_set(err, "downstream_auth", "cannot sign the client assertion (private_key_jwt)"), false;
        }
        form_add(form, "client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
        form_add(form, "client_assertion", a);
        free(a);
    }
    char *user = NULL, *pass = NULL;
    if (basic) { /* RFC 6749 section 2.3.1: form-urlencoded before the Basic encoding */
        user = curl_easy_escape(NULL, id, 0);
        pass = curl_easy_escape(NULL, secret, 0);
    }
    const char *endpoint = meta_str(c->as_meta, "token_endpoint");
    xfer x;
    long st = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        char *proof = c->dpop_key ? dpop_proof(c, "POST", endpoint, NULL, c->as_nonce) : NULL, *line = NULL;
        if (proof && asprintf(&line, "DPoP: %s", proof) < 0) line = NULL;
        free(proof);
        st = http_ex(c, &x, endpoint, form->data ? form->data : "", NULL, line, user, pass, true, err);
        free(line);
        bool retry = c->dpop_key && st == 400 && x.dpop_nonce[0] && strcmp(x.dpop_nonce, c->as_nonce) && x.body.data &&
                     strstr(x.body.data, "use_dpop_nonce");
        if (x.dpop_nonce[0]) gg_strcopy(c->as_nonce, sizeof c->as_nonce, x.dpop_nonce);
        if (!retry || attempt) break;
        gg_strbuf_free(&x.body);
    }
    if (pass) sodium_memzero(pass, strlen(pass));
    curl_free(user), curl_free(pass);
    sodium_memzero(form->data, form->len);
    json_t *j = st ? body_json(&x) : NULL;
    if (x.body.data) sodium_memzero(x.body.data, x.body.len);
    gg_strbuf_free(&x.body);
    bool ok = false;
    const char *at = meta_str(j, "access_token");
    if (gg_error_is_set(err)) {
    } else if (st != 200 || !at) {
        const char *e = meta_str(j, "error");
        gg_error_set(err, "downstream_auth", "token request refused (HTTP %ld%s%.64s)", st, e ? ": " : "", e ? e : "");
    } else {
        const char *tt = meta_str(j, "token_type");
        pthread_mutex_lock(&c->mu); /* the request path reads the token meanwhile */
        forget_tokens(c);
        c->access = strdup(at);
        c->dpop_token = tt && !strcasecmp(tt, "DPoP");
        if (meta_str(j, "refresh_token")) c->refresh = strdup(meta_str(j, "refresh_token"));
        if (meta_str(j, "scope")) c->granted_scope = strdup(meta_str(j, "scope"));
        json_t *ex = json_object_get(j, "expires_in");
        c->expires_at = json_is_number(ex) ? (double)gg_wall_ms() / 1000.0 + json_number_value(ex) : 0;
        ok = c->access != NULL;
        pthread_mutex_unlock(&c->mu);
        if (!ok) gg_error_set(err, "oom", "out of memory");
    }
    if (j) { /* the tokens are copied: wipe the parsed ones */
        const char *keys[] = {"access_token", "refresh_token", "id_token"};
        for (size_t i = 0; i < 3; i++) {
            const char *v = meta_str(j, keys[i]);
            if (v) sodium_memzero((char *)v, strlen(v));
        }
    }
    json_decref(j);
    return ok;
}

static const char *client_id_of(gg_oauth_client *c) { return c->client_id ? c->client_id : c->reg_id; }
static const char *secret_of(gg_oauth_client *c) { return c->client_id ? c->client_secret : c->reg_secret; }

static bool grant_refresh(gg_oauth_client *c, gg_error *err) {
    gg_strbuf f = {0};
    form_add(&f, "grant_type", "refresh_token");
    form_add(&f, "refresh_token", c->refresh);
    form_add(&f, "resource", c->resource);
    bool ok = token_request(c, &f, client_id_of(c), secret_of(c), err);
    gg_strbuf_free(&f);
    return ok;
}

/* Enterprise-managed authorization (SEP-990): a subject token (the configured ID token, or
 * with subject: caller the calling user's access token) exchanged at the enterprise IdP
 * (RFC 8693) for an identity assertion grant (ID-JAG) audienced to this authorization server
 * and resource; caller frees. A refusal says the IdP's status and `error` code only. */
static char *exchange_id_jag(gg_oauth_client *c, const char *subject, const char *subject_type, const char *scope,
                             gg_error *err) {
    gg_strbuf f = {0};
    form_add(&f, "grant_type", "urn:ietf:params:oauth:grant-type:token-exchange");
    form_add(&f, "requested_token_type", "urn:ietf:params:oauth:token-type:id-jag");
    form_add(&f, "subject_token", subject);
    form_add(&f, "subject_token_type", subject_type);
    form_add(&f, "audience", c->issuer);
    form_add(&f, "resource", c->resource);
    form_add(&f, "scope", scope);
    form_add(&f, "client_id", c->idp_client_id);
    form_add(&f, "client_secret", c->idp_client_secret);
    xfer x;
    long st = http(c, &x, c->idp_token_endpoint, f.data ? f.data : "", NULL, NULL, NULL, true, err);
    if (f.data) sodium_memzero(f.data, f.len);
    gg_strbuf_free(&f);
    json_t *j = st ? body_json(&x) : NULL;
    if (x.body.data) sodium_memzero(x.body.data, x.body.len);
    gg_strbuf_free(&x.body);
    const char *t = meta_str(j, "access_token");
    char *out = st == 200 && t ? strdup(t) : NULL;
    if (!out && !gg_error_is_set(err))
        gg_error_set(err, "downstream_auth", "the identity provider refused the token exchange (HTTP %ld%s%.64s)", st,
                     meta_str(j, "error") ? ": " : "", meta_str(j, "error") ? meta_str(j, "error") : "");
    if (t) sodium_memzero((char *)t, strlen(t));
    json_decref(j);
    return out;
}

static bool grant_machine(gg_oauth_client *c, const char *scope, gg_error *err) {
    gg_strbuf f = {0};
    char *jag = NULL;
    if (c->type == GT_ID_JAG && !(jag = exchange_id_jag(c, c->assertion, TOKEN_TYPE_ID, scope, err))) return false;
    if (c->type == GT_CLIENT_CREDENTIALS) form_add(&f, "grant_type", "client_credentials");
    else {
        form_add(&f, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer");
        form_add(&f, "assertion", jag ? jag : c->assertion);
    }
    wipe_free(jag);
    form_add(&f, "scope", scope);
    form_add(&f, "resource", c->resource);
    bool ok = token_request(c, &f, c->client_id, c->client_secret, err);
    gg_strbuf_free(&f);
    return ok;
}

/* A client at this server: configured, a metadata document URL, or registered now. */
static bool ensure_client(gg_oauth_client *c, const char *redirect, gg_error *err) {
    if (c->client_id || c->reg_id) return true;
    if (c->cimd_url && json_is_true(json_object_get(c->as_meta, "client_id_metadata_document_supported"))) {
        c->reg_id = strdup(c->cimd_url);
        c->reg_method = strdup("none");
        return c->reg_id && c->reg_method;
    }
    const char *reg = meta_str(c->as_meta, "registration_endpoint");
    if (!reg)
        return gg_error_set(err, "downstream_auth",
                            "the authorization server offers no registration and no client_id is configured"),
               false;
    json_t *req = json_pack("{s:s, s:[s], s:[s,s], s:[s], s:s, s:s}", "client_name", "graphgate", "redirect_uris", redirect,
                            "grant_types", "authorization_code", "refresh_token", "response_types", "code",
                            "token_endpoint_auth_method", c->auth_method ? c->auth_method : "client_secret_basic",
                            "application_type", "native");
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) return gg_error_set(err, "oom", "out of memory"), false;
    xfer x;
    long st = http(c, &x, reg, body, "Content-Type: application/json", NULL, NULL, true, err);
    free(body);
    json_t *j = (st == 200 || st == 201) ? body_json(&x) : NULL;
    gg_strbuf_free(&x.body);
    const char *id = meta_str(j, "client_id");
    if (!id) {
        json_decref(j);
        if (!gg_error_is_set(err)) gg_error_set(err, "downstream_auth", "dynamic client registration failed (HTTP %ld)", st);
        return false;
    }
    c->reg_id = strdup(id);
    if (meta_str(j, "client_secret")) c->reg_secret = strdup(meta_str(j, "client_secret"));
    if (meta_str(j, "token_endpoint_auth_method")) c->reg_method = strdup(meta_str(j, "token_endpoint_auth_method"));
    json_decref(j);
    return c->reg_id != NULL;
}

/* One query parameter of a URL (decoded, cut at cap); false when absent. */
static bool query_param(const char *url, const char *name, char *out, size_t cap) {
    const char *q = strchr(url, '?');
    size_t n = strlen(name);
    for (const char *p = q; p && *p; p = strchr(p + 1, '&')) {
        const char *k = p + 1;
        if (!strncmp(k, name, n) && k[n] == '=') {
            const char *v = k + n + 1;
            size_t vl = strcspn(v, "&#");
            int ol = 0;
            char *d = curl_easy_unescape(NULL, v, (int)vl, &ol);
            if (!d) return false;
            gg_strcopy(out, cap, d);
            curl_free(d);
            return true;
        }
    }
    return false;
}

/* The authorization code grant, headless: the authorization URL is fetched and the
 * redirect it answers read (an interactive user comes later, through URL elicitation). */
static bool grant_code(gg_oauth_client *c, const char *scope, gg_error *err) {
    const char *redirect = c->redirect_uri ? c->redirect_uri : DEFAULT_REDIRECT;
    if (!ensure_client(c, redirect, err)) return false;
    const char *authz = meta_str(c->as_meta, "authorization_endpoint");
    if (!authz) return gg_error_set(err, "downstream_auth", "authorization-server metadata has no authorization_endpoint"), false;
    char verifier[GG_OAUTH_PKCE_VERIFIER_LEN + 1], challenge[GG_OAUTH_PKCE_CHALLENGE_LEN + 1], state[24];
    gg_oauth_client_pkce(verifier, challenge);
    unsigned char rnd[12];
    randombytes_buf(rnd, sizeof rnd);
    sodium_bin2base64(state, sizeof state, rnd, sizeof rnd, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    gg_strbuf q = {0};
    form_add(&q, "response_type", "code");
    form_add(&q, "client_id", client_id_of(c));
    form_add(&q, "redirect_uri", redirect);
    form_add(&q, "code_challenge", challenge);
    form_add(&q, "code_challenge_method", "S256");
    form_add(&q, "state", state);
    form_add(&q, "scope", scope);
    form_add(&q, "resource", c->resource);
    gg_strbuf url = {0};
    gg_strbuf_printf(&url, "%s%s%s", authz, strchr(authz, '?') ? "&" : "?", q.data ? q.data : "");
    gg_strbuf_free(&q);
    xfer x = {0};
    long st = url.data ? http(c, &x, url.data, NULL, NULL, NULL, NULL, false, err) : 0;
    gg_strbuf_free(&url);
    gg_strbuf_free(&x.body);
    if (gg_error_is_set(err)) return false;
    if (st < 300 || st > 399 || !x.location[0])
        return gg_error_set(err, "downstream_auth", "the authorization endpoint did not redirect (HTTP %ld): it needs a user", st),
               false;
    char code[1024], got_state[64], iss[GG_OAUTH_CLIENT_URL_MAX], error[64];
    if (query_param(x.location, "error", error, sizeof error))
        return gg_error_set(err, "downstream_auth", "authorization refused: %.64s", error), false;
    bool has_iss = query_param(x.location, "iss", iss, sizeof iss);
    bool advertised = json_is_true(json_object_get(c->as_meta, "authorization_response_iss_parameter_supported"));
    if (!gg_oauth_client_iss_ok(has_iss ? iss : NULL, c->issuer, advertised))
        return gg_error_set(err, "downstream_auth", "the authorization response's iss %s (RFC 9207)",
                            has_iss ? "names another issuer" : "is missing"),
               false;
    if (!query_param(x.location, "state", got_state, sizeof got_state) || strcmp(got_state, state))
        return gg_error_set(err, "downstream_auth", "the authorization response carries another state"), false;
    if (!query_param(x.location, "code", code, sizeof code))
        return gg_error_set(err, "downstream_auth", "the authorization response carries no code"), false;
    gg_strbuf f = {0};
    form_add(&f, "grant_type", "authorization_code");
    form_add(&f, "code", code);
    form_add(&f, "redirect_uri", redirect);
    form_add(&f, "code_verifier", verifier);
    form_add(&f, "resource", c->resource);
    sodium_memzero(code, sizeof code);
    bool ok = token_request(c, &f, client_id_of(c), secret_of(c), err);
    gg_strbuf_free(&f);
    return ok;
}

/* ---- on behalf of the caller (token_exchange, RFC 8693; id_jag with subject: caller) -------- */

/* The held caller's token (a copy, wiped by the caller), or NULL. */
static char *subject_copy(gg_oauth_client *c) {
    pthread_mutex_lock(&c->mu);
    char *t = c->subject ? strdup(c->subject) : NULL;
    pthread_mutex_unlock(&c->mu);
    return t;
}

/* A downstream_auth failure of an exchange for the caller as token_exchange_failed: who
 * refused (refused: the message's prefix of a refusal) and its "(HTTP status: error)" only
 * (those messages carry nothing else: token_request, exchange_id_jag). */
static void exchange_failed(gg_error *err, const char *refused, const char *who) {
    if (strcmp(err->code, "downstream_auth")) return; /* out of memory, ... as they are */
    char why[160];
    const char *m = err->message ? err->message : "", *st = strstr(m, "(HTTP ");
    bool ref = !strncmp(m, refused, strlen(refused)) && st;
    snprintf(why, sizeof why, "%s", ref ? st : m);
    gg_error_clear(err);
    if (ref) gg_error_set(err, "token_exchange_failed", "%s refused the token exchange %s", who, why);
    else gg_error_set(err, "token_exchange_failed", "the token exchange failed: %s", why);
}

/* id_jag with subject: caller (SEP-990 on behalf of the caller): the caller's token exchanged
 * at the enterprise IdP for an ID-JAG naming that user, which this server's authorization
 * server takes as a jwt-bearer assertion from graphgate's configured client. */
static bool grant_id_jag_for(gg_oauth_client *c, const char *subject, const char *scope, gg_error *err) {
    char *jag = exchange_id_jag(c, subject, TOKEN_TYPE_ACCESS, scope, err);
    if (!jag) return exchange_failed(err, "the identity provider refused", "the identity provider"), false;
    gg_strbuf f = {0};
    form_add(&f, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer");
    form_add(&f, "assertion", jag);
    wipe_free(jag);
    form_add(&f, "scope", scope);
    form_add(&f, "resource", c->resource);
    bool ok = token_request(c, &f, c->client_id, c->client_secret, err);
    gg_strbuf_free(&f);
    if (!ok) exchange_failed(err, "token request refused", "the authorization server (ID-JAG grant)");
    return ok;
}

/* The caller's token exchanged at the downstream's authorization server for an access token
 * of this server (`resource`, RFC 8707; `audience` and scope when configured), graphgate
 * authenticating as its configured client; or for id_jag, through the IdP (grant_id_jag_for).
 * A refusal says the server's `error` code only. */
static bool grant_exchange(gg_oauth_client *c, const char *scope, gg_error *err) {
    char *subject = subject_copy(c);
    if (!subject)
        return gg_error_set(err, "principal_required", "no caller's access token to exchange (call with a user's token)"),
               false;
    bool ok;
    if (c->type == GT_ID_JAG) ok = grant_id_jag_for(c, subject, scope, err);
    else {
        gg_strbuf f = {0};
        form_add(&f, "grant_type", "urn:ietf:params:oauth:grant-type:token-exchange");
        form_add(&f, "subject_token", subject);
        form_add(&f, "subject_token_type", TOKEN_TYPE_ACCESS);
        form_add(&f, "requested_token_type", TOKEN_TYPE_ACCESS);
        form_add(&f, "resource", c->resource);
        form_add(&f, "audience", c->audience);
        form_add(&f, "scope", scope);
        ok = token_request(c, &f, c->client_id, c->client_secret, err);
        gg_strbuf_free(&f);
        if (!ok) exchange_failed(err, "token request refused", "the authorization server");
    }
    wipe_free(subject);
    pthread_mutex_lock(&c->mu);
    if (ok) { /* never refreshed: the next exchange brings a caller's token again */
        wipe_free(c->refresh);
        c->refresh = NULL;
        double now = (double)gg_wall_ms() / 1000.0;
        if (!c->expires_at) c->expires_at = now + EXCHANGE_UNKNOWN_TTL_S;
        double life = c->expires_at - now; /* a short-lived token is used for half its life */
        c->use_until = c->expires_at - (life > 2 * EXCHANGE_MARGIN_S ? EXCHANGE_MARGIN_S : life / 2);
        c->exchanged_at = now;
    }
    pthread_mutex_unlock(&c->mu);
    return ok;
}

/* A 403 insufficient_scope of a server acting for the caller: the caller's token exchanged
 * again for the scope asked before plus the challenge's (the authorization server grants
 * what it allows that caller), at most GG_OAUTH_CLIENT_MAX_STEP_UPS times in a row; later
 * exchanges (expiry, refusal) keep asking for the stepped-up scope. */
static void step_up_exchange(gg_oauth_client *c, const gg_oauth_challenge *ch, gg_error *err) {
    if (++c->step_ups > GG_OAUTH_CLIENT_MAX_STEP_UPS) {
        gg_error_set(err, "downstream_auth", "the server still wants more scope after %d step-ups", GG_OAUTH_CLIENT_MAX_STEP_UPS);
        return;
    }
    char *scope = scope_union(c->want_scope ? c->want_scope : c->scope, ch->scope[0] ? ch->scope : NULL);
    pthread_mutex_lock(&c->mu);
    forget_tokens(c);
    pthread_mutex_unlock(&c->mu);
    if (grant_exchange(c, scope, err)) {
        free(c->want_scope);
        c->want_scope = scope;
        scope = NULL;
    }
    free(scope);
}

/* A 401/403 of a server acting for the caller (token_exchange; id_jag with subject: caller).
 * A 401 without an error is a request that went out before the token now held: sent again.
 * A refused token (invalid_token) is dropped and exchanged once more, but not a second time
 * in a row (then the call fails). */
static void resolve_exchange(gg_oauth_client *c, int status, const gg_oauth_challenge *ch, gg_error *err) {
    double now = (double)gg_wall_ms() / 1000.0;
    pthread_mutex_lock(&c->mu);
    bool held = c->access && c->use_until > now;
    bool refused = held && status == 401 && ch->error[0];
    bool again = refused && c->reexchanged && now - c->exchanged_at < EXCHANGE_REFUSED_WINDOW_S;
    if (refused) forget_tokens(c);
    pthread_mutex_unlock(&c->mu);
    if (status == 403 && !strcmp(ch->error, "insufficient_scope")) {
        step_up_exchange(c, ch, err);
        return;
    }
    if (status == 403) {
        gg_error_set(err, "downstream_auth", "the server refused the exchanged token (HTTP 403%s%.64s)", ch->error[0] ? ": " : "",
                     ch->error);
        return;
    }
    if (held && !refused) return;
    if (again) {
        gg_error_set(err, "token_exchange_failed", "the server refused the exchanged token again (HTTP 401%s%.64s)",
                     ch->error[0] ? ": " : "", ch->error);
        return;
    }
    char *issuer = discover_resource(c, ch->resource_metadata, err);
    if (!issuer || !discover_server(c, issuer, err)) return;
    /* the configured scope (or a stepped-up one): the AS decides the rest */
    const char *want = c->want_scope ? c->want_scope : c->scope;
    char *scope = want ? strdup(want) : NULL;
    if (grant_exchange(c, scope, err)) c->reexchanged = refused, c->step_ups = 0;
    free(scope);
}

/* See auth.h. */
void gg_oauth_client_subject(void *impl, const char *token) {
    gg_oauth_client *c = impl;
    if (!c->for_caller) return;
    pthread_mutex_lock(&c->mu);
    if (token) {
        if (!c->subject || strcmp(c->subject, token)) { /* the newest of the principal's tokens */
            char *t = strdup(token);
            if (t) {
                wipe_free(c->subject);
                c->subject = t;
            }
        }
        c->subject_holds++;
    } else if (c->subject_holds > 0 && --c->subject_holds == 0) {
        wipe_free(c->subject);
        c->subject = NULL;
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- resolution --------------------------------------------------------------------------- */

/* per_user: the principal's grant is refreshed here, never made (only the user can consent):
 * a token refreshed goes back to the store; without a refresh token, or when the refresh is
 * refused (revoked, expired), the grant is dropped and the call asks for consent again. */
static bool seed_grant(gg_oauth_client *c, const char *grant, size_t len);

/* The stored grant when it is not the one held (the user consented since, or another replica
 * refreshed it): adopted; true when there was one. */
static bool adopt_stored(gg_oauth_client *c) {
    size_t len = 0;
    char *g = c->store.load ? c->store.load(c->store.user, &len) : NULL;
    if (!g) return false;
    json_t *j = json_loadb(g, len, 0, NULL);
    const char *at = meta_str(j, "access");
    pthread_mutex_lock(&c->mu);
    bool fresh = at && (!c->access || strcmp(at, c->access));
    pthread_mutex_unlock(&c->mu);
    if (at) sodium_memzero((char *)at, strlen(at));
    json_decref(j);
    bool ok = fresh && seed_grant(c, g, len);
    sodium_memzero(g, len);
    free(g);
    return ok;
}

static void resolve_user(gg_oauth_client *c, gg_error *err) {
    if (adopt_stored(c)) return;
    if (c->refresh) {
        gg_error re = GG_ERROR_INIT;
        bool ok = grant_refresh(c, &re);
        gg_error_clear(&re);
        if (ok) {
            char *g = gg_oauth_client_grant(c);
            if (g && c->store.saved) c->store.saved(c->store.user, g, (long long)(c->expires_at * 1000));
            if (g) sodium_memzero(g, strlen(g));
            free(g);
            return;
        }
    }
    pthread_mutex_lock(&c->mu);
    bool had = c->access || c->refresh;
    forget_tokens(c);
    pthread_mutex_unlock(&c->mu);
    if (had && c->store.dropped) c->store.dropped(c->store.user);
    gg_error_set(err, "url_elicitation_required", "the user's consent is needed first");
}

/* Resolve one challenge (helper thread; c->mu not held: this thread alone changes the
 * state while busy, the header reads take the lock). */
static void resolve(gg_oauth_client *c, int status, const char *www, gg_error *err) {
    gg_oauth_challenge ch;
    gg_oauth_client_parse_challenge(www, &ch);
    char *scope = NULL;
    bool step_up = status == 403;
    if (c->for_caller) {
        resolve_exchange(c, status, &ch, err);
        return;
    }
    if (step_up && strcmp(ch.error, "insufficient_scope")) {
        gg_error_set(err, "downstream_auth", "the server refused the request (HTTP 403%s%.64s)", ch.error[0] ? ": " : "", ch.error);
        return;
    }
    if (step_up && ++c->step_ups > GG_OAUTH_CLIENT_MAX_STEP_UPS) {
        gg_error_set(err, "downstream_auth", "the server still wants more scope after %d step-ups", GG_OAUTH_CLIENT_MAX_STEP_UPS);
        return;
    }
    /* a 401 looks at the protected-resource metadata again: its authorization server may
     * have changed (migration), which drops what the old one issued */
    if (status == 401 || !c->as_meta) {
        char *issuer = discover_resource(c, ch.resource_metadata, err);
        if (!issuer) return;
        if (!discover_server(c, issuer, err)) return;
    }
    if (c->per_user) {
        resolve_user(c, err);
        return;
    }
    /* a refresh is enough for a token that expired or was revoked (and for a renewal, status 0) */
    if (!step_up && c->refresh) {
        gg_error re = GG_ERROR_INIT;
        bool ok = grant_refresh(c, &re);
        gg_error_clear(&re);
        if (ok) return;
        pthread_mutex_lock(&c->mu);
        forget_tokens(c);
        pthread_mutex_unlock(&c->mu);
    }
    scope = choose_scope(c, ch.scope[0] ? ch.scope : NULL);
    if (step_up) {
        char *u = scope_union(c->want_scope, scope);
        free(scope);
        scope = u;
    }
    free(c->want_scope);
    c->want_scope = scope ? strdup(scope) : NULL;
    bool ok = c->type == GT_OAUTH ? grant_code(c, scope, err) : grant_machine(c, scope, err);
    if (ok && !step_up) c->step_ups = 0;
    free(scope);
}

/* Under mu: what an admin sees of the last resolution (gg_oauth_client_state). */
static void remember_outcome(gg_oauth_client *c, const gg_error *err) {
    if (!gg_error_is_set(err)) {
        c->last_error_at = 0;
        return;
    }
    snprintf(c->last_error, sizeof c->last_error, "%s", err->message ? err->message : err->code);
    c->last_error_at = (double)gg_wall_ms() / 1000.0;
}

static void *resolver_main(void *arg) {
    gg_oauth_client *c = arg;
    pthread_mutex_lock(&c->mu);
    int status = c->pending_status;
    char *www = c->pending_challenge;
    c->pending_challenge = NULL;
    pthread_mutex_unlock(&c->mu);
    gg_error err = GG_ERROR_INIT;
    resolve(c, status, www, &err);
    free(www);
    if (gg_error_is_set(&err) && !strcmp(err.code, "url_elicitation_required")) {
        gg_log(GG_LOG_INFO, "downstream authorization needs the user's consent", "server", c->name, NULL);
    } else if (gg_error_is_set(&err)) {
        atomic_fetch_add_explicit(&c->failures, 1, memory_order_relaxed);
        gg_log(GG_LOG_WARN, "downstream authorization failed", "server", c->name, "reason", err.message, NULL);
    }
    pthread_mutex_lock(&c->mu);
    remember_outcome(c, &err);
    waiter *w = c->waiting;
    c->waiting = NULL;
    c->busy = false;
    pthread_mutex_unlock(&c->mu);
    while (w) {
        waiter *next = w->next;
        gg_error mine = GG_ERROR_INIT;
        if (gg_error_is_set(&err)) gg_error_set(&mine, err.code, "%s", err.message);
        w->done(w->user, gg_error_is_set(&mine) ? &mine : NULL);
        gg_error_clear(&mine);
        free(w);
        w = next;
    }
    gg_error_clear(&err);
    pthread_mutex_lock(&c->mu);
    c->threads--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Start a resolution (c->mu held, not busy); false when no thread could start. */
static bool start_locked(gg_oauth_client *c, int status, const char *www) {
    free(c->pending_challenge);
    c->pending_challenge = www ? strdup(www) : NULL;
    c->pending_status = status;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    bool ok = pthread_create(&t, &a, resolver_main, c) == 0;
    pthread_attr_destroy(&a);
    if (ok) {
        c->busy = true;
        c->threads++;
    }
    return ok;
}

void gg_oauth_client_challenge(void *impl, const char *url, int status, const char *www, const char *dpop_nonce,
                               gg_oauth_client_done_fn done, void *user) {
    (void)url;
    gg_oauth_client *c = impl;
    if (c->dpop_key && dpop_nonce && *dpop_nonce) { /* RFC 9449 section 9: the next proofs carry it */
        pthread_mutex_lock(&c->mu);
        bool fresh = strcmp(c->rs_nonce, dpop_nonce) != 0;
        gg_strcopy(c->rs_nonce, sizeof c->rs_nonce, dpop_nonce);
        pthread_mutex_unlock(&c->mu);
        if (fresh && www && strstr(www, "use_dpop_nonce")) { /* nothing else to resolve: send it again */
            done(user, NULL);
            return;
        }
    }
    waiter *w = malloc(sizeof *w);
    gg_error e = GG_ERROR_INIT;
    if (!w) {
        gg_error_set(&e, "oom", "out of memory");
        done(user, &e);
        gg_error_clear(&e);
        return;
    }
    w->done = done;
    w->user = user;
    pthread_mutex_lock(&c->mu);
    w->next = c->waiting;
    c->waiting = w;
    bool ok = c->busy || start_locked(c, status, www);
    if (!ok) c->waiting = w->next;
    pthread_mutex_unlock(&c->mu);
    if (ok) return;
    free(w);
    gg_error_set(&e, "downstream_auth", "cannot start a thread to obtain credentials");
    done(user, &e);
    gg_error_clear(&e);
}

bool gg_oauth_client_headers(void *impl, const char *url, const char *method, char *out, size_t cap) {
    gg_oauth_client *c = impl;
    pthread_mutex_lock(&c->mu);
    double now = (double)gg_wall_ms() / 1000.0;
    bool have = c->access && (c->expires_at == 0 || c->expires_at > now);
    if (c->for_caller) /* shortly before its expiry the next call exchanges again */
        have = c->access && c->use_until > now;
    /* renew ahead of the expiry, in the background, when nothing else is being resolved */
    if (have && !c->for_caller && c->expires_at && c->expires_at - now < RENEW_MARGIN_S && !c->busy && now - c->renew_tried > RENEW_RETRY_S) {
        c->renew_tried = now;
        start_locked(c, 0, NULL);
    }
    int n = -1;
    if (have && c->dpop_token && c->dpop_key) { /* RFC 9449 section 7.1: the scheme, and a fresh proof bound to it */
        char *proof = dpop_proof(c, method, url, c->access, c->rs_nonce);
        n = proof ? snprintf(out, cap, "Authorization: DPoP %s\nDPoP: %s", c->access, proof) : -1;
        free(proof);
    } else if (have) n = snprintf(out, cap, "Authorization: Bearer %s", c->access);
    pthread_mutex_unlock(&c->mu);
    if (n < 0 || (size_t)n >= cap) {
        if (cap) sodium_memzero(out, cap);
        return false;
    }
    return true;
}

void gg_oauth_client_destroy(void *impl) { gg_oauth_client_free(impl); }

/* valid: a token not known to be expired; failing: none, and the last try failed; none:
 * no token yet (or expired) and nothing failed since. */
json_t *gg_oauth_client_state(gg_oauth_client *c) {
    pthread_mutex_lock(&c->mu);
    double now = (double)gg_wall_ms() / 1000.0;
    bool valid = c->access && (c->expires_at == 0 || c->expires_at > now);
    json_t *s = json_pack("{s:s, s:b, s:s?, s:I, s:I}", "state",
                          valid ? "valid" : c->last_error_at ? "failing" : "none", "refresh_token",
                          c->refresh != NULL, "issuer", c->issuer, "fetches",
                          (json_int_t)atomic_load_explicit(&c->fetches, memory_order_relaxed), "failures",
                          (json_int_t)atomic_load_explicit(&c->failures, memory_order_relaxed));
    if (s && c->expires_at) json_object_set_new(s, "valid_until_ms", json_integer((json_int_t)(c->expires_at * 1000)));
    if (s && c->last_error_at) {
        json_object_set_new(s, "last_failure", json_string(c->last_error));
        json_object_set_new(s, "last_failure_ms", json_integer((json_int_t)(c->last_error_at * 1000)));
    }
    pthread_mutex_unlock(&c->mu);
    return s;
}

/* ---- per-user grants and consent (the gateway's side: src/gateway/consent.c) -------------- */

void gg_oauth_client_set_store(gg_oauth_client *c, const gg_oauth_client_store *store) {
    if (store) c->store = *store;
}

static const char *or_empty(const char *s) { return s ? s : ""; }

char *gg_oauth_client_grant(gg_oauth_client *c) {
    pthread_mutex_lock(&c->mu);
    json_t *j = c->access ? json_pack("{s:s, s:s?, s:f, s:s?, s:s, s:s, s:s, s:s, s:s}", "access", c->access, "refresh",
                                      c->refresh, "expires_at", c->expires_at, "scope", c->granted_scope, "issuer",
                                      or_empty(c->issuer), "resource", or_empty(c->resource), "token_endpoint",
                                      or_empty(meta_str(c->as_meta, "token_endpoint")), "client_id",
                                      or_empty(client_id_of(c)), "client_secret", or_empty(secret_of(c)))
                          : NULL;
    pthread_mutex_unlock(&c->mu);
    char *out = j ? json_dumps(j, JSON_COMPACT) : NULL;
    static const char *const secret_keys[] = {"access", "refresh", "client_secret"};
    for (size_t i = 0; j && i < 3; i++) {
        const char *v = meta_str(j, secret_keys[i]);
        if (v) sodium_memzero((char *)v, strlen(v));
    }
    json_decref(j);
    return out;
}

/* What an exchange or a refresh needs, from a consent or a stored grant (no resolution may be
 * in flight: a new client, or under mu from the request path). */
static bool seed_exchange(gg_oauth_client *c, const char *token_endpoint, const char *issuer, const char *resource,
                          const char *client_id, const char *client_secret) {
    if (!token_endpoint || !*token_endpoint) return false;
    json_decref(c->as_meta);
    c->as_meta = json_pack("{s:s, s:s}", "token_endpoint", token_endpoint, "issuer", or_empty(issuer));
    free(c->issuer);
    c->issuer = issuer && *issuer ? strdup(issuer) : NULL;
    free(c->resource);
    c->resource = resource && *resource ? strdup(resource) : NULL;
    if (!c->client_id && client_id && *client_id) { /* registered when the user consented */
        forget_registration(c);
        c->reg_id = strdup(client_id);
        c->reg_secret = client_secret && *client_secret ? strdup(client_secret) : NULL;
    }
    return c->as_meta != NULL;
}

/* The grant's tokens and exchange into c (its resolution thread, or nothing resolving). */
static bool seed_grant(gg_oauth_client *c, const char *grant, size_t len) {
    json_t *j = json_loadb(grant, len, 0, NULL);
    const char *at = meta_str(j, "access");
    pthread_mutex_lock(&c->mu);
    bool ok = at && seed_exchange(c, meta_str(j, "token_endpoint"), meta_str(j, "issuer"), meta_str(j, "resource"),
                                              meta_str(j, "client_id"), meta_str(j, "client_secret"));
    if (ok) {
        forget_tokens(c);
        c->access = strdup(at);
        c->refresh = meta_str(j, "refresh") ? strdup(meta_str(j, "refresh")) : NULL;
        c->granted_scope = meta_str(j, "scope") ? strdup(meta_str(j, "scope")) : NULL;
        c->expires_at = json_number_value(json_object_get(j, "expires_at"));
    }
    pthread_mutex_unlock(&c->mu);
    static const char *const secret_keys[] = {"access", "refresh", "client_secret"};
    for (size_t i = 0; j && i < 3; i++) {
        const char *v = meta_str(j, secret_keys[i]);
        if (v) sodium_memzero((char *)v, strlen(v));
    }
    json_decref(j);
    return ok;
}

bool gg_oauth_client_seed(gg_oauth_client *c, const char *grant, size_t len) {
    pthread_mutex_lock(&c->mu);
    bool busy = c->busy;
    pthread_mutex_unlock(&c->mu);
    return !busy && seed_grant(c, grant, len);
}

bool gg_oauth_client_consent_prepare(gg_oauth_client *c, const char *redirect_uri, gg_oauth_consent *cs, char *authz,
                                     size_t authz_cap, char *scope, size_t scope_cap, gg_error *err) {
    char *issuer = discover_resource(c, NULL, err);
    if (!issuer || !discover_server(c, issuer, err) || !ensure_client(c, redirect_uri, err)) return false;
    const char *ae = meta_str(c->as_meta, "authorization_endpoint");
    if (!ae) return gg_error_set(err, "downstream_auth", "authorization-server metadata has no authorization_endpoint"), false;
    const json_t *methods = json_object_get(c->as_meta, "code_challenge_methods_supported");
    if (methods && !list_has(methods, "S256")) /* the spec: refuse a server that cannot do PKCE S256 */
        return gg_error_set(err, "downstream_auth", "the authorization server does not support PKCE S256"), false;
    const char *id = client_id_of(c), *sec = secret_of(c), *te = meta_str(c->as_meta, "token_endpoint");
    if (strlen(te) >= sizeof cs->token_endpoint || strlen(id) >= sizeof cs->client_id ||
        strlen(or_empty(sec)) >= sizeof cs->client_secret || strlen(c->issuer) >= sizeof cs->issuer ||
        strlen(or_empty(c->resource)) >= sizeof cs->resource || strlen(ae) >= authz_cap)
        return gg_error_set(err, "downstream_auth", "the authorization server's endpoints or client are too long"), false;
    strcpy(cs->token_endpoint, te);
    strcpy(cs->client_id, id);
    strcpy(cs->client_secret, or_empty(sec));
    strcpy(cs->issuer, c->issuer);
    strcpy(cs->resource, or_empty(c->resource));
    strcpy(authz, ae);
    char *sc = choose_scope(c, NULL);
    gg_strcopy(scope, scope_cap, or_empty(sc));
    free(sc);
    return true;
}

bool gg_oauth_client_consent_exchange(gg_oauth_client *c, const gg_oauth_consent *cs, const char *code, const char *iss,
                                      const char *redirect_uri, gg_error *err) {
    pthread_mutex_lock(&c->mu);
    bool ok = seed_exchange(c, cs->token_endpoint, cs->issuer, cs->resource, cs->client_id, cs->client_secret);
    pthread_mutex_unlock(&c->mu);
    if (!ok) return gg_error_set(err, "downstream_auth", "the consent names no token endpoint"), false;
    if (iss && strcmp(iss, cs->issuer)) /* RFC 9207: a response from another server is refused */
        return gg_error_set(err, "downstream_auth", "the authorization response's iss names another issuer (RFC 9207)"), false;
    gg_strbuf f = {0};
    form_add(&f, "grant_type", "authorization_code");
    form_add(&f, "code", code);
    form_add(&f, "redirect_uri", redirect_uri);
    form_add(&f, "code_verifier", cs->verifier);
    if (cs->resource[0]) form_add(&f, "resource", cs->resource);
    ok = token_request(c, &f, client_id_of(c), secret_of(c), err);
    gg_strbuf_free(&f);
    return ok;
}
