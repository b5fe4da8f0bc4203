/* oauth_consent.c — the pure parts of per-user consent for a downstream OAuth server (issue
 * 27, "per user"): when a graph called by principal P needs server S and holds no grant of
 * P for S, the call answers a URL-mode elicitation (MCP 2025-11-25, URLElicitationRequiredError
 * -32042) whose URL is the downstream authorization server's authorization request; the
 * user consents there and the authorization server redirects to graphgate's callback, which
 * exchanges the code and stores the grant (store: gg_store_user_grant_put).
 *
 * Nothing is kept between the elicitation and the callback: the request's `state` carries it,
 * sealed (XChaCha20-Poly1305 under a key every replica shares, random nonce, a fixed
 * context as associated data): the tenant, principal and server the grant is for, the
 * elicitation id, the PKCE verifier, an expiry, and the token endpoint, client and resource
 * of the exchange (a client registered dynamically by one replica is unknown to another). So the callback may land on any replica,
 * nobody can forge a state or move a grant to another tenant, principal or server by editing
 * one, and the verifier, readable by graphgate alone, still proves the code's requester.
 */
#include "auth/auth.h"

#include <curl/curl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char STATE_AD[] = "graphgate consent state v1";
#define B64URL sodium_base64_VARIANT_URLSAFE_NO_PADDING
#define NONCE_BYTES crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_BYTES crypto_aead_xchacha20poly1305_ietf_ABYTES

/* See auth.h. */
bool gg_oauth_consent_new(gg_oauth_consent *c, const char *tenant, const char *principal, const char *server,
                          long long expires_ms, char challenge[GG_OAUTH_PKCE_CHALLENGE_LEN + 1]) {
    memset(c, 0, sizeof *c);
    if (!tenant || !principal || !server || strlen(tenant) >= sizeof c->tenant || strlen(principal) >= sizeof c->principal ||
        strlen(server) >= sizeof c->server || !*tenant || !*principal || !*server)
        return false;
    strcpy(c->tenant, tenant);
    strcpy(c->principal, principal);
    strcpy(c->server, server);
    unsigned char id[16];
    randombytes_buf(id, sizeof id);
    sodium_bin2hex(c->elicitation_id, sizeof c->elicitation_id, id, sizeof id);
    gg_oauth_client_pkce(c->verifier, challenge);
    c->expires_ms = expires_ms;
    return true;
}

/* The state's secrets (the PKCE verifier, a client secret) wiped from its JSON before it is freed. */
static void wipe_secrets(json_t *j) {
    static const char *const keys[] = {"v", "cs"};
    for (size_t i = 0; j && i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = json_string_value(json_object_get(j, keys[i]));
        if (v) sodium_memzero((char *)v, strlen(v));
    }
}

/* See auth.h. */
char *gg_oauth_consent_seal(const unsigned char key[GG_OAUTH_CONSENT_KEY_BYTES], const gg_oauth_consent *c) {
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "t", c->tenant, "p",
                          c->principal, "s", c->server, "e", c->elicitation_id, "v", c->verifier, "x",
                          (json_int_t)c->expires_ms, "te", c->token_endpoint, "ci", c->client_id, "cs", c->client_secret,
                          "is", c->issuer, "r", c->resource, "k", c->leg, "sc", c->scope);
    if (j && c->next[0]) json_object_set_new(j, "n", json_string(c->next));
    if (j && c->session[0]) json_object_set_new(j, "ss", json_string(c->session));
    if (j && c->auth_method[0]) json_object_set_new(j, "am", json_string(c->auth_method));
    char *pt = j ? json_dumps(j, JSON_COMPACT) : NULL;
    wipe_secrets(j);
    json_decref(j);
    if (!pt) return NULL;
    size_t n = strlen(pt), blen = NONCE_BYTES + n + TAG_BYTES;
    unsigned char *bin = malloc(blen);
    char *out = bin ? malloc(sodium_base64_ENCODED_LEN(blen, B64URL)) : NULL;
    if (out) {
        unsigned long long clen = 0;
        randombytes_buf(bin, NONCE_BYTES);
        crypto_aead_xchacha20poly1305_ietf_encrypt(bin + NONCE_BYTES, &clen, (const unsigned char *)pt, n, STATE_AD,
                                                   sizeof STATE_AD - 1, NULL, bin, key);
        sodium_bin2base64(out, sodium_base64_ENCODED_LEN(blen, B64URL), bin, NONCE_BYTES + (size_t)clen, B64URL);
        if (strlen(out) > GG_OAUTH_CONSENT_STATE_MAX) { /* the callback would refuse it */
            free(out);
            out = NULL;
        }
    }
    sodium_memzero(pt, n);
    free(pt);
    free(bin);
    return out;
}

/* A string member of the opened state into out (cap bytes); false when absent, too long, or
 * empty unless may_be_empty. */
static bool take_ex(const json_t *j, const char *k, char *out, size_t cap, bool may_be_empty) {
    const char *v = json_string_value(json_object_get(j, k));
    if (!v || strlen(v) >= cap || (!*v && !may_be_empty)) return false;
    strcpy(out, v);
    return true;
}
static bool take(const json_t *j, const char *k, char *out, size_t cap) { return take_ex(j, k, out, cap, false); }
static bool take_opt(const json_t *j, const char *k, char *out, size_t cap) { return take_ex(j, k, out, cap, true); }

/* See auth.h. */
bool gg_oauth_consent_open(const unsigned char key[GG_OAUTH_CONSENT_KEY_BYTES], const char *state, long long now_ms,
                           gg_oauth_consent *out, gg_error *err) {
    memset(out, 0, sizeof *out);
    size_t slen = state ? strlen(state) : 0, n = 0;
    if (slen == 0 || slen > GG_OAUTH_CONSENT_STATE_MAX)
        return gg_error_set(err, "invalid_consent", "the consent request's state is missing or too long"), false;
    unsigned char *bin = malloc(slen), *pt = malloc(slen + 1);
    unsigned long long plen = 0;
    bool ok = bin && pt && sodium_base642bin(bin, slen, state, slen, NULL, &n, NULL, B64URL) == 0 &&
              n > NONCE_BYTES + TAG_BYTES &&
              crypto_aead_xchacha20poly1305_ietf_decrypt(pt, &plen, NULL, bin + NONCE_BYTES, n - NONCE_BYTES, STATE_AD,
                                                         sizeof STATE_AD - 1, bin, key) == 0;
    json_t *j = ok ? json_loadb((const char *)pt, (size_t)plen, 0, NULL) : NULL;
    if (pt) sodium_memzero(pt, slen + 1);
    free(pt);
    free(bin);
    ok = j && take(j, "t", out->tenant, sizeof out->tenant) && take(j, "p", out->principal, sizeof out->principal) &&
         take(j, "s", out->server, sizeof out->server) &&
         take(j, "e", out->elicitation_id, sizeof out->elicitation_id) &&
         take(j, "v", out->verifier, sizeof out->verifier) && json_is_integer(json_object_get(j, "x")) &&
         take_opt(j, "te", out->token_endpoint, sizeof out->token_endpoint) &&
         take_opt(j, "ci", out->client_id, sizeof out->client_id) &&
         take_opt(j, "cs", out->client_secret, sizeof out->client_secret) &&
         take_opt(j, "is", out->issuer, sizeof out->issuer) && take_opt(j, "r", out->resource, sizeof out->resource) &&
         take_opt(j, "sc", out->scope, sizeof out->scope) && json_is_integer(json_object_get(j, "k")) &&
         (!json_object_get(j, "n") || take(j, "n", out->next, sizeof out->next)) &&
         (!json_object_get(j, "ss") || take(j, "ss", out->session, sizeof out->session)) &&
         (!json_object_get(j, "am") || take(j, "am", out->auth_method, sizeof out->auth_method));
    if (ok) out->expires_ms = (long long)json_integer_value(json_object_get(j, "x"));
    if (ok) out->leg = (int)json_integer_value(json_object_get(j, "k"));
    wipe_secrets(j);
    json_decref(j);
    if (!ok) {
        sodium_memzero(out, sizeof *out);
        return gg_error_set(err, "invalid_consent", "the consent request's state is not one graphgate made"), false;
    }
    if (now_ms > out->expires_ms) {
        sodium_memzero(out, sizeof *out);
        return gg_error_set(err, "invalid_consent", "the consent request expired: call the tool again for a new one"), false;
    }
    return true;
}

static void add_param(gg_strbuf *b, const char *k, const char *v) {
    if (!v || !*v) return;
    char *e = curl_easy_escape(NULL, v, 0);
    if (!e) return;
    gg_strbuf_printf(b, "&%s=%s", k, e);
    curl_free(e);
}

/* See auth.h. */
char *gg_oauth_consent_url(const char *authorization_endpoint, const char *client_id, const char *redirect_uri,
                           const char *scope, const char *resource, const char *challenge, const char *state) {
    if (!authorization_endpoint || !client_id || !redirect_uri || !challenge || !state) return NULL;
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_printf(&b, "%s%sresponse_type=code", authorization_endpoint, strchr(authorization_endpoint, '?') ? "&" : "?");
    add_param(&b, "client_id", client_id);
    add_param(&b, "redirect_uri", redirect_uri);
    add_param(&b, "code_challenge", challenge);
    add_param(&b, "code_challenge_method", "S256");
    add_param(&b, "state", state);
    add_param(&b, "scope", scope);
    add_param(&b, "resource", resource);
    /* OpenID Connect Core 11: offline_access is honoured only when the user is asked */
    if (scope && (!strncmp(scope, "offline_access", 14) || strstr(scope, " offline_access")))
        add_param(&b, "prompt", "consent");
    return gg_strbuf_take(&b);
}

/* See auth.h. */
json_t *gg_oauth_consent_elicitation(const char *url, const char *elicitation_id, const char *server) {
    char msg[256];
    snprintf(msg, sizeof msg, "Authorization is required: sign in to '%.100s' and allow graphgate to use it for you, "
                              "then call the tool again.", server ? server : "");
    return json_pack("{s:[{s:s, s:s, s:s, s:s}]}", "elicitations", "mode", "url", "elicitationId", elicitation_id, "url",
                     url, "message", msg);
}
