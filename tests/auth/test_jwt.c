/* Unit tests for JWT access-token checks (src/auth/jwt.c): tokens are signed here by the
 * same maintained libraries (libjose for RSA/EC, libsodium for Ed25519) with freshly made
 * keys, then every forgery and claim mistake of the resource-server attack matrix is
 * presented and must be refused. */
#include <check.h>
#include <jose/b64.h>
#include <jose/jwk.h>
#include <jose/jws.h>
#include <jose/openssl.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"

#include "../check_main.h"

#define ISS "https://as.example/t1"
#define AUD "https://gw.example/mcp/acme/demo"
#define NOW 1800000000.0

static json_t *gen_key(const char *tmpl, const char *kid) {
    json_t *k = json_loads(tmpl, 0, NULL);
    ck_assert_ptr_nonnull(k);
    ck_assert(jose_jwk_gen(NULL, k));
    json_object_set_new(k, "kid", json_string(kid));
    return k;
}

/* The public half, as an issuer's JWKS publishes it. */
static json_t *public_of(const json_t *k) {
    json_t *p = json_deep_copy(k);
    ck_assert(jose_jwk_pub(NULL, p));
    return p;
}

static json_t *jwks_of(const json_t *a, const json_t *b) {
    json_t *keys = json_array();
    if (a) json_array_append_new(keys, public_of(a));
    if (b) json_array_append_new(keys, public_of(b));
    return json_pack("{s:o}", "keys", keys);
}

static char *b64(const char *s) {
    json_t *e = jose_b64_enc(s, strlen(s));
    char *out = strdup(json_string_value(e));
    json_decref(e);
    return out;
}

static char *compact3(const char *h, const char *p, const char *s) {
    size_t n = strlen(h) + strlen(p) + strlen(s) + 3;
    char *t = malloc(n);
    snprintf(t, n, "%s.%s.%s", h, p, s);
    return t;
}

/* Sign claims (JSON text) with a libjose key under header hdr (JSON text). */
static char *sign_jose(const json_t *key, const char *hdr, const char *claims) {
    char *p = b64(claims);
    json_t *jws = json_pack("{s:s}", "payload", p);
    json_t *sig = json_pack("{s:o}", "protected", json_loads(hdr, 0, NULL));
    ck_assert(jose_jws_sig(NULL, jws, sig, key));
    char *t = compact3(json_string_value(json_object_get(jws, "protected")), p,
                       json_string_value(json_object_get(jws, "signature")));
    json_decref(jws);
    json_decref(sig);
    free(p);
    return t;
}

/* RS256 by OpenSSL itself, for a key libjose refuses to sign with. */
static char *sign_rs256_openssl(EVP_PKEY *pk, const char *hdr, const char *claims) {
    char *h = b64(hdr), *p = b64(claims), input[4096];
    snprintf(input, sizeof input, "%s.%s", h, p);
    unsigned char sig[512];
    size_t sl = sizeof sig;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    ck_assert(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, pk) == 1);
    ck_assert(EVP_DigestSign(md, sig, &sl, (unsigned char *)input, strlen(input)) == 1);
    EVP_MD_CTX_free(md);
    json_t *sj = jose_b64_enc(sig, sl);
    char *t = compact3(h, p, json_string_value(sj));
    json_decref(sj);
    free(h);
    free(p);
    return t;
}

static unsigned char ed_pk[crypto_sign_PUBLICKEYBYTES], ed_sk[crypto_sign_SECRETKEYBYTES];

static json_t *ed_jwk(const char *kid) {
    json_t *x = jose_b64_enc(ed_pk, sizeof ed_pk);
    return json_pack("{s:s,s:s,s:o,s:s}", "kty", "OKP", "crv", "Ed25519", "x", x, "kid", kid);
}

static char *sign_ed(const char *hdr, const char *claims) {
    char *h = b64(hdr), *p = b64(claims);
    char input[4096];
    snprintf(input, sizeof input, "%s.%s", h, p);
    unsigned char s[crypto_sign_BYTES];
    crypto_sign_detached(s, NULL, (unsigned char *)input, strlen(input), ed_sk);
    json_t *sj = jose_b64_enc(s, sizeof s);
    char *t = compact3(h, p, json_string_value(sj));
    json_decref(sj);
    free(h);
    free(p);
    return t;
}

static char good_claims[512];
static void claims_with(char *buf, size_t n, const char *extra) {
    snprintf(buf, n, "{\"iss\":\"%s\",\"aud\":\"%s\",\"sub\":\"u1\",\"exp\":%.0f,\"iat\":%.0f%s}", ISS, AUD,
             NOW + 300, NOW - 10, extra ? extra : "");
}

static gg_jwt_check check_now(void) {
    gg_jwt_check c = {ISS, AUD, GG_JWT_ALGS_DEFAULT, 60, NOW, 0};
    return c;
}

static gg_jwt_result run(const char *tok, const json_t *jwks, const gg_jwt_check *c, gg_error *err) {
    json_t *claims = NULL;
    gg_error_clear(err);
    gg_jwt_result r = gg_jwt_verify(tok, strlen(tok), jwks, c, &claims, err);
    if (r == GG_JWT_OK) {
        ck_assert_ptr_nonnull(claims);
        ck_assert_str_eq(json_string_value(json_object_get(claims, "sub")), "u1");
        json_decref(claims);
    } else {
        ck_assert_ptr_null(claims);
        ck_assert_str_eq(err->code, "invalid_token");
        if (strlen(tok) > 8) ck_assert_ptr_null(strstr(err->message, tok)); /* never quoted back */
    }
    return r;
}

static json_t *rsa, *rsa2, *ec;

static void setup(void) {
    ck_assert(sodium_init() >= 0);
    rsa = gen_key("{\"alg\":\"RS256\"}", "r1");
    rsa2 = gen_key("{\"kty\":\"RSA\",\"bits\":2048}", "r2");
    ec = gen_key("{\"alg\":\"ES256\"}", "e1");
    crypto_sign_keypair(ed_pk, ed_sk);
    claims_with(good_claims, sizeof good_claims, NULL);
}
static void teardown(void) {
    json_decref(rsa);
    json_decref(rsa2);
    json_decref(ec);
}

START_TEST(each_algorithm_verifies) {
    gg_error err = GG_ERROR_INIT;
    gg_jwt_check c = check_now();
    json_t *jwks = jwks_of(rsa, ec);
    json_array_append_new(json_object_get(jwks, "keys"), ed_jwk("d1"));
    json_array_append_new(json_object_get(jwks, "keys"), public_of(rsa2));
    char *t = sign_jose(rsa, "{\"alg\":\"RS256\",\"kid\":\"r1\",\"typ\":\"at+jwt\"}", good_claims);
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_OK);
    free(t);
    t = sign_jose(rsa2, "{\"alg\":\"PS256\",\"kid\":\"r2\"}", good_claims);
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_OK);
    free(t);
    t = sign_jose(ec, "{\"alg\":\"ES256\",\"kid\":\"e1\"}", good_claims);
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_OK);
    free(t);
    t = sign_ed("{\"alg\":\"EdDSA\",\"kid\":\"d1\"}", good_claims);
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_OK);
    char *kid = gg_jwt_kid(t, strlen(t));
    ck_assert_str_eq(kid, "d1");
    free(kid);
    /* the same token, one payload byte changed */
    char *dot = strchr(t, '.');
    dot[3] = dot[3] == 'A' ? 'B' : 'A';
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_INVALID);
    free(t);
    /* no kid: every key of the right type is tried */
    t = sign_jose(ec, "{\"alg\":\"ES256\"}", good_claims);
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_OK);
    free(t);
    json_decref(jwks);
    gg_error_clear(&err);
}
END_TEST

START_TEST(forged_algorithms_refused) {
    gg_error err = GG_ERROR_INIT;
    gg_jwt_check c = check_now();
    json_t *jwks = jwks_of(rsa, NULL);
    char *h = b64("{\"alg\":\"none\",\"kid\":\"r1\"}"), *p = b64(good_claims);
    char *t = compact3(h, p, "");
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_INVALID);
    free(t);
    t = compact3(h, p, "AAAA");
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_INVALID);
    ck_assert_ptr_nonnull(strstr(err.message, "algorithm"));
    free(t);
    free(h);
    /* HS256 "keyed" with the issuer's public key, as the classic confusion attack does */
    char *pub = json_dumps(json_array_get(json_object_get(jwks, "keys"), 0), JSON_COMPACT);
    h = b64("{\"alg\":\"HS256\",\"kid\":\"r1\"}");
    char input[2048];
    snprintf(input, sizeof input, "%s.%s", h, p);
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, (unsigned char *)pub, strlen(pub));
    crypto_auth_hmacsha256_update(&st, (unsigned char *)input, strlen(input));
    crypto_auth_hmacsha256_final(&st, mac);
    json_t *m = jose_b64_enc(mac, sizeof mac);
    t = compact3(h, p, json_string_value(m));
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_INVALID);
    free(t);
    json_decref(m);
    free(pub);
    free(h);
    free(p);
    /* an algorithm the issuer is not allowed */
    c.algs = GG_JWT_RS256;
    json_t *jwks2 = jwks_of(ec, NULL);
    t = sign_jose(ec, "{\"alg\":\"ES256\",\"kid\":\"e1\"}", good_claims);
    ck_assert_int_eq(run(t, jwks2, &c, &err), GG_JWT_INVALID);
    free(t);
    /* a key that says RS256 does not verify PS256 */
    c = check_now();
    t = sign_jose(rsa2, "{\"alg\":\"PS256\",\"kid\":\"r1\"}", good_claims);
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_INVALID);
    free(t);
    /* crit, and a token of another kind */
    t = sign_jose(rsa, "{\"alg\":\"RS256\",\"kid\":\"r1\",\"crit\":[\"exp\"]}", good_claims);
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_INVALID);
    free(t);
    t = sign_jose(rsa, "{\"alg\":\"RS256\",\"kid\":\"r1\",\"typ\":\"dpop+jwt\"}", good_claims);
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_INVALID);
    free(t);
    json_decref(jwks);
    json_decref(jwks2);
    gg_error_clear(&err);
}
END_TEST

START_TEST(keys_chosen_by_the_issuer_only) {
    gg_error err = GG_ERROR_INIT;
    gg_jwt_check c = check_now();
    json_t *jwks = jwks_of(rsa, NULL);
    /* unknown kid: the caller may refresh its JWKS */
    char *t = sign_jose(rsa2, "{\"alg\":\"RS256\",\"kid\":\"new\"}", good_claims);
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_UNKNOWN_KID);
    free(t);
    /* another key claiming the issuer's kid */
    t = sign_jose(rsa2, "{\"alg\":\"RS256\",\"kid\":\"r1\"}", good_claims);
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_INVALID);
    free(t);
    /* a jwk or jku in the header is not a key source */
    json_t *pub2 = public_of(rsa2);
    char *pj = json_dumps(pub2, JSON_COMPACT), hdr[4096];
    snprintf(hdr, sizeof hdr, "{\"alg\":\"RS256\",\"jku\":\"https://evil.example/jwks\",\"jwk\":%s}", pj);
    t = sign_jose(rsa2, hdr, good_claims);
    ck_assert_int_eq(run(t, jwks, &c, &err), GG_JWT_INVALID);
    free(t);
    free(pj);
    json_decref(pub2);
    /* an RSA key under 2048 bits is not used */
    EVP_PKEY *pk = EVP_RSA_gen(1024); /* libjose will not make or use one this weak */
    ck_assert_ptr_nonnull(pk);
    json_t *weak = jose_openssl_jwk_from_EVP_PKEY(NULL, pk);
    ck_assert_ptr_nonnull(weak);
    json_object_set_new(weak, "kid", json_string("w1"));
    json_t *wj = jwks_of(weak, NULL);
    t = sign_rs256_openssl(pk, "{\"alg\":\"RS256\",\"kid\":\"w1\"}", good_claims);
    ck_assert_int_eq(run(t, wj, &c, &err), GG_JWT_INVALID);
    free(t);
    EVP_PKEY_free(pk);
    json_decref(wj);
    json_decref(weak);
    json_decref(jwks);
    gg_error_clear(&err);
}
END_TEST

START_TEST(claims_checked) {
    gg_error err = GG_ERROR_INIT;
    gg_jwt_check c = check_now();
    json_t *jwks = jwks_of(rsa, NULL);
    const char *H = "{\"alg\":\"RS256\",\"kid\":\"r1\"}";
    char cl[1024];
    struct {
        const char *claims;
        const char *why;
        gg_jwt_result want;
    } cases[] = {
        {"{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"sub\":\"u1\",\"exp\":1799999000}", "expired", GG_JWT_INVALID},
        {"{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"sub\":\"u1\",\"exp\":1799999970}", "expired within skew", GG_JWT_OK},
        {"{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"sub\":\"u1\",\"exp\":1800000900,\"nbf\":1800000600}", "not yet", GG_JWT_INVALID},
        {"{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"sub\":\"u1\",\"exp\":1800000900,\"iat\":1800000600}", "issued in the future", GG_JWT_INVALID},
        {"{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"sub\":\"u1\",\"exp\":1800000900,\"nbf\":1800000030}", "nbf within skew", GG_JWT_OK},
        {"{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"sub\":\"u1\"}", "no exp", GG_JWT_INVALID},
        {"{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"sub\":\"u1\",\"exp\":\"1800000900\"}", "exp as text", GG_JWT_INVALID},
        {"{\"iss\":\"https://as.example/t2\",\"aud\":\"" AUD "\",\"sub\":\"u1\",\"exp\":1800000900}", "other issuer", GG_JWT_INVALID},
        {"{\"iss\":\"" ISS "/\",\"aud\":\"" AUD "\",\"sub\":\"u1\",\"exp\":1800000900}", "issuer plus slash", GG_JWT_INVALID},
        {"{\"aud\":\"" AUD "\",\"sub\":\"u1\",\"exp\":1800000900}", "no issuer", GG_JWT_INVALID},
        {"{\"iss\":\"" ISS "\",\"aud\":\"https://gw.example/mcp/other/demo\",\"sub\":\"u1\",\"exp\":1800000900}", "other tenant's endpoint", GG_JWT_INVALID},
        {"{\"iss\":\"" ISS "\",\"aud\":\"" AUD "/x\",\"sub\":\"u1\",\"exp\":1800000900}", "longer path", GG_JWT_INVALID},
        {"{\"iss\":\"" ISS "\",\"aud\":[\"https://x\",\"" AUD "\"],\"sub\":\"u1\",\"exp\":1800000900}", "aud array", GG_JWT_OK},
        {"{\"iss\":\"" ISS "\",\"sub\":\"u1\",\"exp\":1800000900}", "no aud", GG_JWT_INVALID},
        {"{\"iss\":\"" ISS "\",\"aud\":\"https://x\",\"aud\":\"" AUD "\",\"sub\":\"u1\",\"exp\":1800000900}", "duplicate aud", GG_JWT_INVALID},
        {"[1,2]", "not an object", GG_JWT_INVALID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = sign_jose(rsa, H, cases[i].claims);
        ck_assert_msg(run(t, jwks, &c, &err) == cases[i].want, "%s: %s", cases[i].why, err.message ? err.message : "accepted");
        free(t);
    }
    (void)cl;
    json_decref(jwks);
    gg_error_clear(&err);
}
END_TEST

START_TEST(malformed_and_oversized) {
    gg_error err = GG_ERROR_INIT;
    gg_jwt_check c = check_now();
    json_t *jwks = jwks_of(rsa, NULL);
    char *t = sign_jose(rsa, "{\"alg\":\"RS256\",\"kid\":\"r1\"}", good_claims);
    size_t n = strlen(t);
    const char *bad[] = {"", ".", "..", "a.b", "a.b.c.d", "eyJ.eyJ.", "####.eyJhIjoxfQ.AAAA", "e30.e30.AAAA"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) ck_assert_int_eq(run(bad[i], jwks, &c, &err), GG_JWT_INVALID);
    /* truncated anywhere */
    for (size_t cut = 1; cut < n; cut += 37) {
        char *p = strndup(t, cut);
        ck_assert_int_eq(run(p, jwks, &c, &err), GG_JWT_INVALID);
        free(p);
    }
    /* over the bound: refused before anything is decoded */
    char *big = malloc(GG_JWT_MAX_BYTES + 2);
    memset(big, 'A', GG_JWT_MAX_BYTES + 1);
    big[GG_JWT_MAX_BYTES + 1] = '\0';
    big[10] = '.';
    big[20] = '.';
    ck_assert_int_eq(run(big, jwks, &c, &err), GG_JWT_INVALID);
    ck_assert_ptr_nonnull(strstr(err.message, "longer"));
    free(big);
    /* a claims set padded past the bound by its issuer */
    char padded[GG_JWT_MAX_BYTES + 512], pad[GG_JWT_MAX_BYTES];
    memset(pad, 'x', sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    char extra[GG_JWT_MAX_BYTES + 64];
    snprintf(extra, sizeof extra, ",\"pad\":\"%s\"", pad);
    claims_with(padded, sizeof padded, extra);
    char *tp = sign_jose(rsa, "{\"alg\":\"RS256\",\"kid\":\"r1\"}", padded);
    ck_assert_int_eq(run(tp, jwks, &c, &err), GG_JWT_INVALID);
    free(tp);
    free(t);
    json_decref(jwks);
    gg_error_clear(&err);
}
END_TEST

START_TEST(definition_checked) {
    gg_error err = GG_ERROR_INIT;
    json_t *in = json_loads("{\"issuers\":[{\"issuer\":\"http://127.0.0.1:4000/t1\"}]}", 0, NULL);
    json_t *d = gg_oauth_definition_check(in, &err);
    ck_assert_ptr_nonnull(d);
    const json_t *one = gg_oauth_issuer_find(d, "http://127.0.0.1:4000/t1");
    ck_assert_ptr_nonnull(one);
    ck_assert_int_eq(json_array_size(json_object_get(one, "algorithms")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(one, "clock_skew_s")), 60);
    ck_assert_ptr_null(gg_oauth_issuer_find(d, "http://127.0.0.1:4000/t2"));
    json_t *claims = json_loads("{\"scope\":\"openid  tools:read tools:execute admin graphs:write\"}", 0, NULL);
    ck_assert_uint_eq(gg_oauth_claims_scopes(one, claims), GG_SCOPE_TOOLS_READ | GG_SCOPE_TOOLS_EXECUTE);
    json_decref(claims);
    json_decref(d);
    json_decref(in);
    in = json_loads("{\"issuers\":[{\"issuer\":\"https://as.example\",\"algorithms\":[\"ES256\"],"
                    "\"scope_map\":{\"mcp\":[\"tools:read\",\"tools:execute\"]},\"tenant_claim\":\"org\"}]}",
                    0, NULL);
    d = gg_oauth_definition_check(in, &err);
    ck_assert_ptr_nonnull(d);
    one = gg_oauth_issuer_find(d, "https://as.example");
    claims = json_loads("{\"scp\":[\"mcp\",\"tools:read\"]}", 0, NULL);
    ck_assert_uint_eq(gg_oauth_claims_scopes(one, claims), GG_SCOPE_TOOLS_READ | GG_SCOPE_TOOLS_EXECUTE);
    json_decref(claims);
    json_decref(d);
    json_decref(in);
    /* the console's scope: graphs:write may be mapped (kept only on the console resource),
     * and each resource kind names only its own token scopes */
    in = json_loads("{\"issuers\":[{\"issuer\":\"https://as.example\",\"scope_map\":"
                    "{\"mcp\":[\"tools:read\"],\"console\":[\"graphs:write\"]}}]}", 0, NULL);
    d = gg_oauth_definition_check(in, &err);
    ck_assert_ptr_nonnull(d);
    claims = json_loads("{\"scope\":\"console admin\"}", 0, NULL);
    ck_assert_uint_eq(gg_oauth_claims_scopes(gg_oauth_issuer_find(d, "https://as.example"), claims), GG_SCOPE_GRAPHS_WRITE);
    json_decref(claims);
    char text[64];
    gg_oauth_scopes_text(d, text, sizeof text);
    ck_assert_str_eq(text, "mcp");
    gg_oauth_scopes_text_for(d, GG_SCOPE_GRAPHS_WRITE, text, sizeof text);
    ck_assert_str_eq(text, "console");
    json_decref(d);
    json_decref(in);
    const char *bad[] = {
        "[]", "{}", "{\"issuers\":[]}", "{\"issuers\":[{}]}", "{\"issuers\":[{\"issuer\":\"http://as.example\"}]}",
        "{\"issuers\":[{\"issuer\":\"https://as.example?x=1\"}]}",
        "{\"issuers\":[{\"issuer\":\"https://as.example\",\"algorithms\":[\"none\"]}]}",
        "{\"issuers\":[{\"issuer\":\"https://as.example\",\"algorithms\":[\"HS256\"]}]}",
        "{\"issuers\":[{\"issuer\":\"https://as.example\",\"clock_skew_s\":3600}]}",
        "{\"issuers\":[{\"issuer\":\"https://as.example\",\"scope_map\":{\"x\":[\"admin\"]}}]}",
        "{\"issuers\":[{\"issuer\":\"https://as.example\",\"secret\":\"x\"}]}",
        "{\"issuers\":[{\"issuer\":\"https://as.example\"},{\"issuer\":\"https://as.example\"}]}",
        "{\"issuers\":[{\"issuer\":\"https://as.example\"}],\"extra\":1}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        in = json_loads(bad[i], 0, NULL);
        ck_assert_ptr_nonnull(in);
        gg_error_clear(&err);
        d = gg_oauth_definition_check(in, &err);
        ck_assert_msg(d == NULL, "accepted %s", bad[i]);
        ck_assert_str_eq(err.code, "invalid_argument");
        json_decref(in);
    }
    gg_error_clear(&err);
}
END_TEST

/* A DPoP proof for (htm, htu) over token, signed with key k (libjose) whose public half is in
 * the header; hdr_extra / claims_extra change them. */
static char *make_proof(const json_t *k, const char *alg, const char *htm, const char *htu, const char *token,
                        double iat, const char *hdr_extra_json) {
    unsigned char h[32];
    crypto_hash_sha256(h, (const unsigned char *)token, strlen(token));
    char ath[64];
    sodium_bin2base64(ath, sizeof ath, h, sizeof h, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char claims[512];
    snprintf(claims, sizeof claims, "{\"htm\":\"%s\",\"htu\":\"%s\",\"iat\":%.0f,\"jti\":\"j-%d\",\"ath\":\"%s\"}", htm, htu,
             iat, rand(), ath);
    json_t *pub = public_of(k);
    json_t *hdr = json_pack("{s:s,s:s,s:o}", "alg", alg, "typ", "dpop+jwt", "jwk", pub);
    if (hdr_extra_json) {
        json_t *extra = json_loads(hdr_extra_json, 0, NULL);
        json_object_update(hdr, extra);
        json_decref(extra);
    }
    char *ht = json_dumps(hdr, JSON_COMPACT);
    char *t = sign_jose(k, ht, claims);
    free(ht);
    json_decref(hdr);
    return t;
}

START_TEST(dpop_proofs) {
    gg_error err = GG_ERROR_INIT;
    const char *tok = "the.access.token";
    gg_dpop_check c = {"POST", AUD, tok, strlen(tok), NOW, 60};
    gg_dpop_proof p;
    char *pr = make_proof(ec, "ES256", "POST", AUD, tok, NOW - 5, NULL);
    ck_assert_msg(gg_jwt_dpop_verify(pr, strlen(pr), &c, &p, &err), "%s", err.message ? err.message : "");
    json_t *thp = jose_jwk_thp(NULL, ec, "S256");
    ck_assert_str_eq(p.jkt, json_string_value(thp));
    json_decref(thp);
    ck_assert(strncmp(p.jti, "j-", 2) == 0);
    free(pr);
    struct {
        const char *htm, *htu, *token;
        double iat;
        const char *hdr;
        const char *why;
    } bad[] = {
        {"GET", AUD, NULL, NOW, NULL, "another method"},
        {"POST", AUD "/x", NULL, NOW, NULL, "another URL"},
        {"POST", AUD, "another.token.x", NOW, NULL, "another token"},
        {"POST", AUD, NULL, NOW - 120, NULL, "too old"},
        {"POST", AUD, NULL, NOW + 120, NULL, "from the future"},
        {"POST", AUD, NULL, NOW, "{\"typ\":\"JWT\"}", "not a dpop+jwt"},
        {"POST", AUD, NULL, NOW, "{\"crit\":[\"x\"]}", "crit"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pr = make_proof(ec, "ES256", bad[i].htm, bad[i].htu, bad[i].token ? bad[i].token : tok, bad[i].iat, bad[i].hdr);
        gg_error_clear(&err);
        ck_assert_msg(!gg_jwt_dpop_verify(pr, strlen(pr), &c, &p, &err), "accepted: %s", bad[i].why);
        ck_assert_str_eq(err.code, "invalid_dpop_proof");
        free(pr);
    }
    /* the private key in the header: refused (a proof must name a public key) */
    char *priv = json_dumps(ec, JSON_COMPACT), hdr[2048];
    snprintf(hdr, sizeof hdr, "{\"jwk\":%s}", priv);
    pr = make_proof(ec, "ES256", "POST", AUD, tok, NOW, hdr);
    gg_error_clear(&err);
    ck_assert(!gg_jwt_dpop_verify(pr, strlen(pr), &c, &p, &err));
    free(pr);
    free(priv);
    /* a header key that did not sign it */
    json_t *ec2 = gen_key("{\"alg\":\"ES256\"}", "e2");
    json_t *pub2 = public_of(ec2);
    char *p2 = json_dumps(pub2, JSON_COMPACT);
    snprintf(hdr, sizeof hdr, "{\"jwk\":%s}", p2);
    pr = make_proof(ec, "ES256", "POST", AUD, tok, NOW, hdr);
    gg_error_clear(&err);
    ck_assert(!gg_jwt_dpop_verify(pr, strlen(pr), &c, &p, &err));
    free(pr);
    free(p2);
    json_decref(pub2);
    json_decref(ec2);
    gg_error_clear(&err);
}
END_TEST

/* RFC 8037 appendix A.3: the Ed25519 key's RFC 7638 thumbprint. */
START_TEST(okp_thumbprint) {
    json_t *jwk = json_pack("{s:s,s:s,s:s}", "crv", "Ed25519", "kty", "OKP", "x", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo");
    char out[GG_JWK_THUMBPRINT_LEN + 1];
    ck_assert(gg_jwt_thumbprint(jwk, out));
    ck_assert_str_eq(out, "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    json_decref(jwk);
}
END_TEST

int main(void) {
    Suite *s = suite_create("auth-jwt");
    TCase *tc = tcase_create("jwt");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, each_algorithm_verifies);
    tcase_add_test(tc, forged_algorithms_refused);
    tcase_add_test(tc, keys_chosen_by_the_issuer_only);
    tcase_add_test(tc, claims_checked);
    tcase_add_test(tc, malformed_and_oversized);
    tcase_add_test(tc, definition_checked);
    tcase_add_test(tc, dpop_proofs);
    tcase_add_test(tc, okp_thumbprint);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
