/* Unit tests for the pure parts of the downstream OAuth client (src/auth/oauth_client.c):
 * WWW-Authenticate parsing, the metadata URLs in the MCP spec's order, the resource and
 * RFC 9207 iss checks, PKCE S256, the settings a graph's `auth:` may hold, and per-user
 * consent's sealed state, authorization URL and elicitation (src/auth/oauth_consent.c). The flows
 * themselves run against real servers: the conformance suite's client leg and
 * tests/auth/oauth_downstream.sh. */
#include <check.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "mcp/mcp.h"

#include "../check_main.h"

START_TEST(challenge_parsed) {
    gg_oauth_challenge ch;
    ck_assert(gg_oauth_client_parse_challenge(
        "Bearer error=\"insufficient_scope\", scope=\"files:read files:write\", "
        "resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"",
        &ch));
    ck_assert_str_eq(ch.error, "insufficient_scope");
    ck_assert_str_eq(ch.scope, "files:read files:write");
    ck_assert_str_eq(ch.resource_metadata, "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
    /* another scheme's parameters are not the Bearer challenge's; tokens unquoted; case */
    ck_assert(gg_oauth_client_parse_challenge("DPoP algs=\"ES256\", scope=\"dpop-only\", bearer Scope=a, error=invalid_token", &ch));
    ck_assert_str_eq(ch.scope, "a");
    ck_assert_str_eq(ch.error, "invalid_token");
    /* a quoted-pair, and a token68 scheme before */
    ck_assert(gg_oauth_client_parse_challenge("Basic YWxhZGRpbjpvcGVu==, Bearer scope=\"x\\\"y\"", &ch));
    ck_assert_str_eq(ch.scope, "x\"y");
    /* no Bearer at all, nothing, garbage */
    ck_assert(!gg_oauth_client_parse_challenge("Basic realm=\"x\"", &ch));
    ck_assert_str_eq(ch.scope, "");
    ck_assert(!gg_oauth_client_parse_challenge(NULL, &ch));
    ck_assert(gg_oauth_client_parse_challenge("Bearer", &ch));
    ck_assert(!gg_oauth_client_parse_challenge("=,,\"", &ch));
    /* a value longer than its field is cut, never overflows */
    char big[5000] = "Bearer scope=\"";
    memset(big + strlen(big), 'a', 4000);
    strcat(big, "\"");
    ck_assert(gg_oauth_client_parse_challenge(big, &ch));
    ck_assert_uint_eq(strlen(ch.scope), sizeof ch.scope - 1);
}
END_TEST

START_TEST(metadata_urls_in_order) {
    char u[3][GG_OAUTH_CLIENT_URL_MAX];
    ck_assert_int_eq(gg_oauth_client_prm_urls("https://mcp.example.com/public/mcp/", u, 3), 2);
    ck_assert_str_eq(u[0], "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp");
    ck_assert_str_eq(u[1], "https://mcp.example.com/.well-known/oauth-protected-resource");
    ck_assert_int_eq(gg_oauth_client_prm_urls("http://localhost:8080", u, 3), 1);
    ck_assert_str_eq(u[0], "http://localhost:8080/.well-known/oauth-protected-resource");
    ck_assert_int_eq(gg_oauth_client_as_urls("https://auth.example.com/tenant1", u, 3), 3);
    ck_assert_str_eq(u[0], "https://auth.example.com/.well-known/oauth-authorization-server/tenant1");
    ck_assert_str_eq(u[1], "https://auth.example.com/.well-known/openid-configuration/tenant1");
    ck_assert_str_eq(u[2], "https://auth.example.com/tenant1/.well-known/openid-configuration");
    ck_assert_int_eq(gg_oauth_client_as_urls("https://auth.example.com", u, 3), 2);
    ck_assert_str_eq(u[0], "https://auth.example.com/.well-known/oauth-authorization-server");
    ck_assert_str_eq(u[1], "https://auth.example.com/.well-known/openid-configuration");
    ck_assert_int_eq(gg_oauth_client_as_urls("ftp://auth.example.com", u, 3), 0);
    ck_assert_int_eq(gg_oauth_client_prm_urls("not a url", u, 3), 0);
}
END_TEST

START_TEST(resource_and_iss_checked) {
    const char *srv = "https://mcp.example.com/public/mcp";
    ck_assert(gg_oauth_client_resource_ok("https://mcp.example.com/public/mcp", srv));
    ck_assert(gg_oauth_client_resource_ok("https://mcp.example.com", srv));
    ck_assert(gg_oauth_client_resource_ok("https://MCP.example.com/public", srv));
    ck_assert(!gg_oauth_client_resource_ok("https://evil.example.com/public/mcp", srv));
    ck_assert(!gg_oauth_client_resource_ok("https://mcp.example.com/pub", srv)); /* not at a segment boundary */
    ck_assert(!gg_oauth_client_resource_ok("http://mcp.example.com/public/mcp", srv));
    ck_assert(!gg_oauth_client_resource_ok("https://mcp.example.com:8443/public/mcp", srv));
    ck_assert(!gg_oauth_client_resource_ok("https://mcp.example.com/public/mcp#x", srv));
    ck_assert(!gg_oauth_client_resource_ok("https://mcp.example.com/public/mcp/more", srv));
    ck_assert(!gg_oauth_client_resource_ok(NULL, srv));
    /* RFC 9207 */
    ck_assert(gg_oauth_client_iss_ok("https://as.example", "https://as.example", true));
    ck_assert(gg_oauth_client_iss_ok(NULL, "https://as.example", false));
    ck_assert(!gg_oauth_client_iss_ok(NULL, "https://as.example", true));
    ck_assert(!gg_oauth_client_iss_ok("https://as.example/", "https://as.example", true)); /* no normalization */
    ck_assert(!gg_oauth_client_iss_ok("https://evil.example", "https://as.example", false));
}
END_TEST

START_TEST(pkce_s256) {
    char v[GG_OAUTH_PKCE_VERIFIER_LEN + 1], c[GG_OAUTH_PKCE_CHALLENGE_LEN + 1];
    char v2[GG_OAUTH_PKCE_VERIFIER_LEN + 1], c2[GG_OAUTH_PKCE_CHALLENGE_LEN + 1];
    gg_oauth_client_pkce(v, c);
    gg_oauth_client_pkce(v2, c2);
    ck_assert_uint_eq(strlen(v), 43);
    ck_assert_str_ne(v, v2);
    for (const char *p = v; *p; p++) ck_assert(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", *p));
    /* the challenge is BASE64URL(SHA256(verifier)), recomputed here */
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)v, strlen(v));
    char want[GG_OAUTH_PKCE_CHALLENGE_LEN + 1];
    sodium_bin2base64(want, sizeof want, h, sizeof h, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    ck_assert_str_eq(c, want);
}
END_TEST

START_TEST(settings_checked) {
    gg_error e = GG_ERROR_INIT;
    json_t *s = json_pack("{s:s, s:s, s:s}", "type", "client_credentials", "client_id", "a", "client_secret", "b");
    ck_assert(gg_oauth_client_check_settings(s, &e));
    json_object_set_new(s, "token_endpoint_auth_method", json_string("private_key_jwt_typo"));
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    ck_assert_str_eq(e.code, "invalid_config");
    gg_error_clear(&e);
    json_object_del(s, "token_endpoint_auth_method");
    json_object_set_new(s, "colour", json_string("red"));
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    ck_assert(strstr(e.message, "colour"));
    gg_error_clear(&e);
    json_object_del(s, "colour");
    json_object_del(s, "client_id");
    ck_assert(!gg_oauth_client_check_settings(s, &e)); /* client_credentials needs a client */
    gg_error_clear(&e);
    json_decref(s);
    s = json_pack("{s:s}", "type", "jwt_bearer");
    ck_assert(!gg_oauth_client_check_settings(s, &e)); /* and jwt_bearer its assertion */
    gg_error_clear(&e);
    json_decref(s);
    s = json_pack("{s:s, s:s, s:s}", "type", "client_credentials", "client_id", "a", "token_endpoint_auth_method",
                  "private_key_jwt");
    ck_assert(!gg_oauth_client_check_settings(s, &e)); /* private_key_jwt needs its key */
    gg_error_clear(&e);
    json_object_set_new(s, "private_key", json_string("not a pem"));
    ck_assert(gg_oauth_client_check_settings(s, &e));
    ck_assert_ptr_null(gg_oauth_client_new(s, "https://mcp.example.com/mcp", "x", NULL, &e)); /* unreadable key */
    ck_assert_str_eq(e.code, "invalid_config");
    gg_error_clear(&e);
    json_decref(s);
    s = json_pack("{s:s, s:s}", "type", "id_jag", "client_id", "a");
    ck_assert(!gg_oauth_client_check_settings(s, &e)); /* id_jag needs its identity provider */
    gg_error_clear(&e);
    json_decref(s);
    s = json_pack("{s:s, s:s}", "type", "oauth", "dpop", "yes");
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    gg_error_clear(&e);
    json_decref(s);
    s = json_pack("{s:s, s:i}", "type", "oauth", "timeout", 5);
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    gg_error_clear(&e);
    json_decref(s);
    /* token_exchange: a client of its own, no assertion (the caller's token is the subject),
     * no per_user; audience is its setting only */
    s = json_pack("{s:s, s:s, s:s}", "type", "token_exchange", "client_id", "a", "audience", "urn:x");
    ck_assert(gg_oauth_client_check_settings(s, &e));
    json_object_set_new(s, "assertion", json_string("eyJ.a.b"));
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    gg_error_clear(&e);
    json_object_del(s, "assertion");
    json_object_set_new(s, "per_user", json_true());
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    gg_error_clear(&e);
    json_object_del(s, "per_user");
    json_object_del(s, "client_id");
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    gg_error_clear(&e);
    json_decref(s);
    s = json_pack("{s:s, s:s, s:s}", "type", "client_credentials", "client_id", "a", "audience", "urn:x");
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    ck_assert(strstr(e.message, "audience"));
    gg_error_clear(&e);
    json_decref(s);
    s = json_pack("{s:s, s:s, s:i}", "type", "token_exchange", "client_id", "a", "audience", 7);
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    gg_error_clear(&e);
    json_decref(s);
    /* id_jag with subject: caller (SEP-990 for the caller): no assertion, its IdP and client
     * still needed; subject is id_jag's only, and only "caller" */
    s = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "id_jag", "subject", "caller", "idp_token_endpoint",
                  "https://idp.example.com/token", "idp_client_id", "i", "client_id", "a");
    ck_assert(gg_oauth_client_check_settings(s, &e));
    ck_assert(mcp_auth_for_caller(s));
    json_object_set_new(s, "assertion", json_string("eyJ.a.b"));
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    ck_assert(strstr(e.message, "assertion"));
    gg_error_clear(&e);
    json_object_del(s, "assertion");
    json_object_set_new(s, "subject", json_string("user"));
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    ck_assert(!mcp_auth_for_caller(s));
    gg_error_clear(&e);
    json_object_del(s, "subject");
    ck_assert(!gg_oauth_client_check_settings(s, &e)); /* without a subject: the assertion again */
    ck_assert(!mcp_auth_for_caller(s));
    gg_error_clear(&e);
    json_decref(s);
    s = json_pack("{s:s, s:s, s:s}", "type", "client_credentials", "client_id", "a", "subject", "caller");
    ck_assert(!gg_oauth_client_check_settings(s, &e));
    ck_assert(!mcp_auth_for_caller(s));
    gg_error_clear(&e);
    json_decref(s);
    s = json_pack("{s:s, s:s}", "type", "token_exchange", "client_id", "a");
    ck_assert(mcp_auth_for_caller(s));
    json_decref(s);
    ck_assert(!mcp_auth_for_caller(NULL));
    /* a client is made without any network; the secret never shows in its state */
    s = json_pack("{s:s, s:s, s:s}", "type", "client_credentials", "client_id", "id1", "client_secret", "s3cr3t-value");
    gg_oauth_client *c = gg_oauth_client_new(s, "https://mcp.example.com/mcp", "x", NULL, &e);
    ck_assert_ptr_nonnull(c);
    char hdr[256];
    ck_assert(!gg_oauth_client_headers(c, "https://mcp.example.com/mcp", "POST", hdr, sizeof hdr)); /* no token yet */
    json_t *st = gg_oauth_client_state(c);
    char *dump = json_dumps(st, 0);
    ck_assert(!strstr(dump, "s3cr3t"));
    ck_assert_str_eq(json_string_value(json_object_get(st, "state")), "none");
    free(dump);
    json_decref(st);
    gg_oauth_client_free(c);
    json_decref(s);
}
END_TEST

/* Per-user consent (src/auth/oauth_consent.c): the sealed state round-trips and binds its
 * tenant, principal, server and verifier; a changed byte, another key, a truncation or an
 * expiry is refused; the authorization URL and the -32042 data have the spec's shape. */
START_TEST(consent_state_sealed) {
    unsigned char key[GG_OAUTH_CONSENT_KEY_BYTES], other[GG_OAUTH_CONSENT_KEY_BYTES];
    randombytes_buf(key, sizeof key);
    randombytes_buf(other, sizeof other);
    gg_oauth_consent c, got;
    char ch[GG_OAUTH_PKCE_CHALLENGE_LEN + 1];
    ck_assert(gg_oauth_consent_new(&c, "acme", "0123456789abcdef", "docs", 2000000000000LL, ch));
    ck_assert(!gg_oauth_consent_new(&got, "acme", "", "docs", 1, ch));
    ck_assert_uint_eq(strlen(c.elicitation_id), 32);
    strcpy(c.token_endpoint, "https://as.example/token");
    strcpy(c.client_id, "client-1");
    strcpy(c.client_secret, "client-secret-0123456789");
    strcpy(c.resource, "https://mcp.example/mcp");
    c.leg = 1; /* the connect flow's step, the downstream's configured scope, the state to go on with */
    strcpy(c.scope, "read write");
    memset(c.next, 'n', 1500);
    strcpy(c.session, "00112233445566778899aabbccddeeff"); /* told when the grant is stored */
    strcpy(c.auth_method, "client_secret_post");              /* the exchange's, as configured */
    char *st = gg_oauth_consent_seal(key, &c);
    ck_assert_ptr_nonnull(st);
    ck_assert(strstr(st, c.verifier) == NULL && strstr(st, "acme") == NULL && strstr(st, "client-secret") == NULL);
    for (const char *p = st; *p; p++) ck_assert(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", *p));
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_oauth_consent_open(key, st, 1000, &got, &err));
    ck_assert_str_eq(got.tenant, "acme");
    ck_assert_str_eq(got.principal, "0123456789abcdef");
    ck_assert_str_eq(got.server, "docs");
    ck_assert_str_eq(got.elicitation_id, c.elicitation_id);
    ck_assert_str_eq(got.verifier, c.verifier);
    ck_assert_int_eq(got.expires_ms, 2000000000000LL);
    ck_assert_str_eq(got.token_endpoint, "https://as.example/token");
    ck_assert_str_eq(got.client_id, "client-1");
    ck_assert_str_eq(got.client_secret, "client-secret-0123456789");
    ck_assert_str_eq(got.issuer, "");
    ck_assert_str_eq(got.resource, "https://mcp.example/mcp");
    ck_assert_int_eq(got.leg, 1);
    ck_assert_str_eq(got.scope, "read write");
    ck_assert_uint_eq(strlen(got.next), 1500);
    ck_assert_str_eq(got.session, "00112233445566778899aabbccddeeff");
    ck_assert_str_eq(got.auth_method, "client_secret_post");
    /* the verifier's S256 challenge is the one the URL carries */
    unsigned char h[crypto_hash_sha256_BYTES];
    char want[GG_OAUTH_PKCE_CHALLENGE_LEN + 1];
    crypto_hash_sha256(h, (const unsigned char *)got.verifier, strlen(got.verifier));
    sodium_bin2base64(want, sizeof want, h, sizeof h, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    ck_assert_str_eq(ch, want);
    /* refused: another key, expired, every changed character, truncated, empty */
    ck_assert(!gg_oauth_consent_open(other, st, 1000, &got, &err));
    ck_assert_str_eq(err.code, "invalid_consent");
    ck_assert(got.tenant[0] == '\0' && got.verifier[0] == '\0');
    gg_error_clear(&err);
    ck_assert(!gg_oauth_consent_open(key, st, 2000000000001LL, &got, &err));
    ck_assert(strstr(err.message, "expired") != NULL);
    gg_error_clear(&err);
    size_t n = strlen(st);
    for (size_t i = 0; i < n; i++) {
        char o = st[i];
        st[i] = o == 'A' ? 'B' : 'A';
        ck_assert(!gg_oauth_consent_open(key, st, 1000, &got, &err));
        gg_error_clear(&err);
        st[i] = o;
    }
    st[n - 3] = '\0';
    ck_assert(!gg_oauth_consent_open(key, st, 1000, &got, &err));
    gg_error_clear(&err);
    ck_assert(!gg_oauth_consent_open(key, "", 1000, &got, &err));
    gg_error_clear(&err);
    free(st);
    /* two consents never share an elicitation id or a verifier */
    gg_oauth_consent c2;
    ck_assert(gg_oauth_consent_new(&c2, "acme", "0123456789abcdef", "docs", 2000000000000LL, ch));
    ck_assert_str_ne(c.elicitation_id, c2.elicitation_id);
    ck_assert_str_ne(c.verifier, c2.verifier);
}
END_TEST

START_TEST(consent_url_and_elicitation) {
    char *u = gg_oauth_consent_url("https://as.example/authorize", "client 1", "https://gg.example/oauth/callback",
                                   "read offline_access", "https://mcp.example/mcp", "CHAL", "ST-1");
    ck_assert_str_eq(u, "https://as.example/authorize?response_type=code&client_id=client%201&redirect_uri=https%3A%2F%2F"
                        "gg.example%2Foauth%2Fcallback&code_challenge=CHAL&code_challenge_method=S256&state=ST-1&scope=read"
                        "%20offline_access&resource=https%3A%2F%2Fmcp.example%2Fmcp&prompt=consent");
    free(u);
    u = gg_oauth_consent_url("https://as.example/auth?x=1", "c", "https://gg/cb", NULL, NULL, "C", "S");
    ck_assert_str_eq(u, "https://as.example/auth?x=1&response_type=code&client_id=c&redirect_uri=https%3A%2F%2Fgg%2Fcb"
                        "&code_challenge=C&code_challenge_method=S256&state=S");
    free(u);
    ck_assert_ptr_null(gg_oauth_consent_url("https://as/a", "c", "https://gg/cb", NULL, NULL, NULL, "S"));
    json_t *d = gg_oauth_consent_elicitation("https://as/a?x", "00ff", "docs");
    json_t *e = json_array_get(json_object_get(d, "elicitations"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(e, "mode")), "url");
    ck_assert_str_eq(json_string_value(json_object_get(e, "elicitationId")), "00ff");
    ck_assert_str_eq(json_string_value(json_object_get(e, "url")), "https://as/a?x");
    ck_assert(strstr(json_string_value(json_object_get(e, "message")), "'docs'") != NULL);
    json_decref(d);
}
END_TEST

int main(void) {
    if (sodium_init() < 0) return 1;
    Suite *s = suite_create("auth-oauth-client");
    TCase *tc = tcase_create("pure");
    tcase_add_test(tc, challenge_parsed);
    tcase_add_test(tc, metadata_urls_in_order);
    tcase_add_test(tc, resource_and_iss_checked);
    tcase_add_test(tc, pkce_s256);
    tcase_add_test(tc, settings_checked);
    tcase_add_test(tc, consent_state_sealed);
    tcase_add_test(tc, consent_url_and_elicitation);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
