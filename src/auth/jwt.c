/* jwt.c — JWT access tokens (RFC 7519, RFC 9068) checked for an MCP resource server.
 *
 * What is ours and what is the library's: signatures are verified by libjose (RSA and EC,
 * over OpenSSL) and, for EdDSA (Ed25519, which libjose 11 does not implement), by
 * libsodium's crypto_sign_verify_detached. This file only splits the compact form, decodes
 * base64url, picks the key and checks the claims; it never computes a signature itself.
 *
 * Why the checks are in this order: everything a token's header controls is refused before
 * any key is touched (alg outside the allowed set, `crit`, an oversized or non-canonical
 * encoding), so `alg: none`, an HMAC algorithm keyed with a public key, or a `jku` pointing
 * elsewhere never reaches a verifier. Keys come only from the issuer's JWKS the caller
 * passes in; `jku`, `x5u` and `jwk` in a header are ignored on purpose.
 *
 * Pure: no I/O, no shared state; callable from any thread.
 */
#include <jose/b64.h>
#include <jose/jwk.h>
#include <jose/jws.h>
#include <math.h>
#include <sodium.h>
#include <string.h>
#include <strings.h>

#include "auth/auth.h"

#define MAX_CANDIDATE_KEYS 8

static const struct {
    const char *name;
    unsigned bit;
    const char *kty;
    const char *crv; /* NULL: RSA */
} ALGS[] = {
    {"RS256", GG_JWT_RS256, "RSA", NULL}, {"PS256", GG_JWT_PS256, "RSA", NULL},
    {"ES256", GG_JWT_ES256, "EC", "P-256"}, {"EdDSA", GG_JWT_EDDSA, "OKP", "Ed25519"},
};

unsigned gg_jwt_alg_bit(const char *name) {
    for (size_t i = 0; name && i < sizeof ALGS / sizeof ALGS[0]; i++)
        if (!strcmp(ALGS[i].name, name)) return ALGS[i].bit;
    return 0;
}

static int alg_index(const char *name) {
    for (size_t i = 0; name && i < sizeof ALGS / sizeof ALGS[0]; i++)
        if (!strcmp(ALGS[i].name, name)) return (int)i;
    return -1;
}

static bool b64url_segment(const char *s, size_t n) {
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_'))
            return false;
    }
    return n % 4 != 1; /* a length of 4k+1 encodes no whole byte */
}

/* base64url segment → JSON object, duplicate names refused (two `aud` or `exp` members
 * would let two parsers disagree about what the token says). */
static json_t *segment_object(const char *s, size_t n) {
    size_t cap = n * 3 / 4 + 3;
    unsigned char *buf = malloc(cap);
    if (!buf) return NULL;
    size_t got = jose_b64_dec_buf(s, n, buf, cap);
    json_t *o = NULL;
    if (got != SIZE_MAX && got <= cap) o = json_loadb((const char *)buf, got, JSON_REJECT_DUPLICATES, NULL);
    free(buf);
    if (o && !json_is_object(o)) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

static bool key_fits(const json_t *jwk, int ai) {
    const char *kty = json_string_value(json_object_get(jwk, "kty"));
    if (!kty || strcmp(kty, ALGS[ai].kty)) return false;
    if (!ALGS[ai].crv) {
        /* RFC 7518 3.3: RSA keys of 2048 bits or more (342 base64url characters) */
        const char *n = json_string_value(json_object_get(jwk, "n"));
        if (!n || strlen(n) < 342) return false;
    } else {
        const char *crv = json_string_value(json_object_get(jwk, "crv"));
        if (!crv || strcmp(crv, ALGS[ai].crv)) return false;
    }
    const char *alg = json_string_value(json_object_get(jwk, "alg"));
    if (alg && strcmp(alg, ALGS[ai].name)) return false;
    const char *use = json_string_value(json_object_get(jwk, "use"));
    if (use && strcmp(use, "sig")) return false;
    json_t *ops = json_object_get(jwk, "key_ops");
    if (json_is_array(ops)) {
        size_t i;
        json_t *op;
        bool verify = false;
        json_array_foreach(ops, i, op) verify |= json_is_string(op) && !strcmp(json_string_value(op), "verify");
        if (!verify) return false;
    }
    return true;
}

/* Keys of the set that may verify this token: by kid when the token names one (then
 * exactly that key), else every key of the right type, at most MAX_CANDIDATE_KEYS. */
static size_t pick_keys(const json_t *jwks, const char *kid, int ai, const json_t *out[MAX_CANDIDATE_KEYS],
                        bool *kid_known) {
    json_t *keys = json_object_get(jwks, "keys");
    size_t n = 0, i;
    json_t *k;
    *kid_known = false;
    json_array_foreach(keys, i, k) {
        const char *kk = json_string_value(json_object_get(k, "kid"));
        if (kid && (!kk || strcmp(kk, kid))) continue;
        if (kid) *kid_known = true;
        if (key_fits(k, ai) && n < MAX_CANDIDATE_KEYS) out[n++] = k;
    }
    return n;
}

static bool verify_eddsa(const json_t *jwk, const char *input, size_t input_len, const char *sig, size_t sig_len) {
    unsigned char pk[crypto_sign_PUBLICKEYBYTES], s[crypto_sign_BYTES + 3];
    const char *x = json_string_value(json_object_get(jwk, "x"));
    if (!x || jose_b64_dec_buf(x, strlen(x), pk, sizeof pk) != sizeof pk) return false;
    if (jose_b64_dec_buf(sig, sig_len, s, sizeof s) != crypto_sign_BYTES) return false;
    return crypto_sign_verify_detached(s, (const unsigned char *)input, input_len, pk) == 0;
}

/* libjose verifies the flattened form: {"protected", "payload", "signature"}, taking the
 * algorithm from the protected header and refusing a key whose own alg disagrees. */
static bool verify_jose(const json_t *jwk, const char *p0, size_t n0, const char *p1, size_t n1, const char *p2,
                        size_t n2) {
    json_t *jws = json_pack("{s:s%,s:s%,s:s%}", "protected", p0, n0, "payload", p1, n1, "signature", p2, n2);
    if (!jws) return false;
    bool ok = jose_jws_ver(NULL, jws, NULL, jwk, false);
    json_decref(jws);
    return ok;
}

static bool aud_contains(const json_t *aud, const char *want) {
    if (json_is_string(aud)) return !strcmp(json_string_value(aud), want);
    size_t i;
    json_t *a;
    json_array_foreach(aud, i, a) if (json_is_string(a) && !strcmp(json_string_value(a), want)) return true;
    return false;
}

static bool numeric_date(const json_t *claims, const char *name, bool required, double *out, gg_error *err) {
    json_t *v = json_object_get(claims, name);
    if (!v) {
        if (required) gg_error_set(err, "invalid_token", "the token has no %s claim", name);
        return !required;
    }
    if (!json_is_number(v) || !isfinite(json_number_value(v))) {
        gg_error_set(err, "invalid_token", "the token's %s claim is not a NumericDate", name);
        return false;
    }
    *out = json_number_value(v);
    return true;
}

static bool check_claims(const json_t *claims, const gg_jwt_check *c, gg_error *err) {
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    if (!iss || !c->issuer || strcmp(iss, c->issuer)) {
        gg_error_set(err, "invalid_token", "the token was not issued by this tenant's authorization server");
        return false;
    }
    if (!c->audience || !aud_contains(json_object_get(claims, "aud"), c->audience)) {
        gg_error_set(err, "invalid_token", "the token's audience is not this resource (%s)",
                     c->audience ? c->audience : "");
        return false;
    }
    double exp = 0, nbf = -INFINITY, iat = -INFINITY;
    if (!numeric_date(claims, "exp", true, &exp, err) || !numeric_date(claims, "nbf", false, &nbf, err) ||
        !numeric_date(claims, "iat", false, &iat, err))
        return false;
    if (exp + c->skew_s <= c->now_s) {
        gg_error_set(err, "invalid_token", "the token has expired");
        return false;
    }
    if (nbf - c->skew_s > c->now_s || iat - c->skew_s > c->now_s) {
        gg_error_set(err, "invalid_token", "the token is not valid yet");
        return false;
    }
    return true;
}

static bool typ_acceptable(const json_t *hdr) {
    json_t *typ = json_object_get(hdr, "typ");
    if (!typ) return true;
    const char *t = json_string_value(typ);
    /* RFC 9068 access tokens say at+jwt; many issuers still say JWT. Anything else (a
     * DPoP proof, a logout token, an ID-JAG) is a different kind of token. */
    return t && (!strcasecmp(t, "at+jwt") || !strcasecmp(t, "application/at+jwt") || !strcasecmp(t, "JWT"));
}

gg_jwt_result gg_jwt_verify(const char *token, size_t len, const json_t *jwks, const gg_jwt_check *c,
                            json_t **claims_out, gg_error *err) {
    *claims_out = NULL;
    size_t max = c->max_token_bytes ? c->max_token_bytes : GG_JWT_MAX_BYTES;
    if (len > max) {
        gg_error_set(err, "invalid_token", "the token is longer than %zu bytes", max);
        return GG_JWT_INVALID;
    }
    const char *d1 = memchr(token, '.', len), *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token)) : NULL;
    if (!d1 || !d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token))) {
        gg_error_set(err, "invalid_token", "the token is not a JWT (three base64url parts)");
        return GG_JWT_INVALID;
    }
    size_t n0 = (size_t)(d1 - token), n1 = (size_t)(d2 - d1 - 1), n2 = len - (size_t)(d2 + 1 - token);
    if (!b64url_segment(token, n0) || !b64url_segment(d1 + 1, n1) || !b64url_segment(d2 + 1, n2)) {
        gg_error_set(err, "invalid_token", "the token is not a JWT (three base64url parts)");
        return GG_JWT_INVALID;
    }
    json_t *hdr = segment_object(token, n0);
    if (!hdr) {
        gg_error_set(err, "invalid_token", "the token's header is not a JSON object");
        return GG_JWT_INVALID;
    }
    const char *alg = json_string_value(json_object_get(hdr, "alg"));
    int ai = alg_index(alg);
    gg_jwt_result r = GG_JWT_INVALID;
    if (ai < 0 || !(c->algs & ALGS[ai].bit)) {
        gg_error_set(err, "invalid_token", "the token's algorithm is not allowed");
        goto out;
    }
    if (json_object_get(hdr, "crit") || !typ_acceptable(hdr)) {
        gg_error_set(err, "invalid_token", "the token's header asks for what this server does not do");
        goto out;
    }
    json_t *kidv = json_object_get(hdr, "kid");
    if (kidv && !json_is_string(kidv)) {
        gg_error_set(err, "invalid_token", "the token's kid is not a string");
        goto out;
    }
    const json_t *keys[MAX_CANDIDATE_KEYS];
    bool kid_known;
    size_t nk = pick_keys(jwks, json_string_value(kidv), ai, keys, &kid_known);
    if (kidv && !kid_known) {
        gg_error_set(err, "invalid_token", "the token's key is not in the issuer's key set");
        r = GG_JWT_UNKNOWN_KID;
        goto out;
    }
    bool ok = false;
    for (size_t i = 0; i < nk && !ok; i++)
        ok = ALGS[ai].bit == GG_JWT_EDDSA ? verify_eddsa(keys[i], token, n0 + 1 + n1, d2 + 1, n2)
                                         : verify_jose(keys[i], token, n0, d1 + 1, n1, d2 + 1, n2);
    if (!ok) {
        gg_error_set(err, "invalid_token", "the token's signature does not verify");
        goto out;
    }
    json_t *claims = segment_object(d1 + 1, n1);
    if (!claims) {
        gg_error_set(err, "invalid_token", "the token's claims are not a JSON object");
        goto out;
    }
    if (!check_claims(claims, c, err)) {
        json_decref(claims);
        goto out;
    }
    *claims_out = claims;
    r = GG_JWT_OK;
out:
    json_decref(hdr);
    return r;
}

char *gg_jwt_kid(const char *token, size_t len) {
    const char *d1 = memchr(token, '.', len <= GG_JWT_MAX_BYTES ? len : 0);
    if (!d1 || !b64url_segment(token, (size_t)(d1 - token))) return NULL;
    json_t *hdr = segment_object(token, (size_t)(d1 - token));
    const char *kid = json_string_value(json_object_get(hdr, "kid"));
    char *out = kid ? strdup(kid) : NULL;
    json_decref(hdr);
    return out;
}

char *gg_jwt_unverified_issuer(const char *token, size_t len) {
    const char *d1 = memchr(token, '.', len <= GG_JWT_MAX_BYTES ? len : 0);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token)) : NULL;
    if (!d2 || !b64url_segment(d1 + 1, (size_t)(d2 - d1 - 1))) return NULL;
    json_t *claims = segment_object(d1 + 1, (size_t)(d2 - d1 - 1));
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    char *out = iss ? strdup(iss) : NULL;
    json_decref(claims);
    return out;
}

/* ---- DPoP proofs (RFC 9449) ------------------------------------------------------------ */

/* The RFC 7638 thumbprint (SHA-256, base64url) of a public JWK: libjose's for RSA and EC;
 * for OKP (which libjose does not know) the SHA-256 of its required members in the RFC's
 * canonical order, by libsodium. */
bool gg_jwt_thumbprint(const json_t *jwk, char out[GG_JWK_THUMBPRINT_LEN + 1]) {
    const char *kty = json_string_value(json_object_get(jwk, "kty"));
    json_t *t = NULL;
    if (kty && !strcmp(kty, "OKP")) {
        const char *crv = json_string_value(json_object_get(jwk, "crv")), *x = json_string_value(json_object_get(jwk, "x"));
        if (!crv || !x || strpbrk(crv, "\"\\") || strpbrk(x, "\"\\")) return false;
        char canon[256];
        int n = snprintf(canon, sizeof canon, "{\"crv\":\"%s\",\"kty\":\"OKP\",\"x\":\"%s\"}", crv, x);
        if (n < 0 || (size_t)n >= sizeof canon) return false;
        unsigned char h[crypto_hash_sha256_BYTES];
        crypto_hash_sha256(h, (const unsigned char *)canon, (unsigned long long)n);
        t = jose_b64_enc(h, sizeof h);
    } else {
        t = jose_jwk_thp(NULL, jwk, "S256");
    }
    const char *s = json_string_value(t);
    bool ok = s && strlen(s) == GG_JWK_THUMBPRINT_LEN;
    if (ok) memcpy(out, s, GG_JWK_THUMBPRINT_LEN + 1);
    json_decref(t);
    return ok;
}

/* A proof's key is in its header: a public key of an allowed kind, never a private or
 * symmetric one (a proof keyed with a shared secret proves nothing). */
static bool proof_key_ok(const json_t *jwk, int ai) {
    static const char *const priv[] = {"d", "p", "q", "dp", "dq", "qi", "k", "oth"};
    if (!json_is_object(jwk)) return false;
    for (size_t i = 0; i < sizeof priv / sizeof priv[0]; i++)
        if (json_object_get(jwk, priv[i])) return false;
    return key_fits(jwk, ai);
}

static void b64_sha256(const char *s, size_t n, char out[GG_JWK_THUMBPRINT_LEN + 1]) {
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)s, n);
    sodium_bin2base64(out, GG_JWK_THUMBPRINT_LEN + 1, h, sizeof h, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

bool gg_jwt_dpop_verify(const char *proof, size_t len, const gg_dpop_check *c, gg_dpop_proof *out, gg_error *err) {
    memset(out, 0, sizeof *out);
    const char *d1 = memchr(proof, '.', len <= GG_JWT_MAX_BYTES ? len : 0);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - proof)) : NULL;
    if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - proof))) {
        gg_error_set(err, "invalid_dpop_proof", "the DPoP proof is not a JWT");
        return false;
    }
    size_t n0 = (size_t)(d1 - proof), n1 = (size_t)(d2 - d1 - 1), n2 = len - (size_t)(d2 + 1 - proof);
    if (!b64url_segment(proof, n0) || !b64url_segment(d1 + 1, n1) || !b64url_segment(d2 + 1, n2)) {
        gg_error_set(err, "invalid_dpop_proof", "the DPoP proof is not a JWT");
        return false;
    }
    json_t *hdr = segment_object(proof, n0), *claims = NULL;
    bool ok = false;
    const char *typ = json_string_value(json_object_get(hdr, "typ"));
    int ai = alg_index(json_string_value(json_object_get(hdr, "alg")));
    json_t *jwk = json_object_get(hdr, "jwk");
    if (!hdr || !typ || strcasecmp(typ, "dpop+jwt") || ai < 0 || json_object_get(hdr, "crit") ||
        !proof_key_ok(jwk, ai)) {
        gg_error_set(err, "invalid_dpop_proof", "the DPoP proof's header is not typ dpop+jwt with an allowed alg and a public jwk");
        goto out;
    }
    bool sig = ALGS[ai].bit == GG_JWT_EDDSA ? verify_eddsa(jwk, proof, n0 + 1 + n1, d2 + 1, n2)
                                            : verify_jose(jwk, proof, n0, d1 + 1, n1, d2 + 1, n2);
    if (!sig || !(claims = segment_object(d1 + 1, n1))) {
        gg_error_set(err, "invalid_dpop_proof", "the DPoP proof's signature does not verify");
        goto out;
    }
    const char *jti = json_string_value(json_object_get(claims, "jti"));
    const char *htm = json_string_value(json_object_get(claims, "htm"));
    const char *htu = json_string_value(json_object_get(claims, "htu"));
    const char *ath = json_string_value(json_object_get(claims, "ath"));
    json_t *iat = json_object_get(claims, "iat");
    char want_ath[GG_JWK_THUMBPRINT_LEN + 1];
    b64_sha256(c->token, c->token_len, want_ath);
    if (!jti || !*jti || strlen(jti) > 128) gg_error_set(err, "invalid_dpop_proof", "the DPoP proof has no jti");
    else if (!htm || strcmp(htm, c->method)) gg_error_set(err, "invalid_dpop_proof", "the DPoP proof is for another method");
    else if (!htu || strcmp(htu, c->url)) gg_error_set(err, "invalid_dpop_proof", "the DPoP proof is for another URL");
    else if (!json_is_number(iat) || fabs(json_number_value(iat) - c->now_s) > c->max_age_s)
        gg_error_set(err, "invalid_dpop_proof", "the DPoP proof is too old or from the future");
    else if (!ath || strcmp(ath, want_ath)) gg_error_set(err, "invalid_dpop_proof", "the DPoP proof is for another access token");
    else if (!gg_jwt_thumbprint(jwk, out->jkt)) gg_error_set(err, "invalid_dpop_proof", "the DPoP proof's key has no thumbprint");
    else {
        gg_strcopy(out->jti, sizeof out->jti, jti);
        const char *nonce = json_string_value(json_object_get(claims, "nonce"));
        gg_strcopy(out->nonce, sizeof out->nonce, nonce ? nonce : "");
        out->iat = json_number_value(iat);
        ok = true;
    }
out:
    json_decref(hdr);
    json_decref(claims);
    return ok;
}
