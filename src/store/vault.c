/* vault.c — the secrets master key and the encryption of tenant secrets (no database here;
 * secrets.c stores what this seals).
 *
 * XChaCha20-Poly1305 (IETF) with a random 24-byte nonce per sealing, and as associated
 * data "tenant\0name": a ciphertext copied to another tenant's row, or renamed, fails to
 * open instead of serving one tenant's value to another. The key id stored with each row is
 * a short hash of the key (never the key), so a server started with another key refuses to
 * start instead of failing every call later. The fingerprint shown by the admin API is a
 * hash keyed by a subkey of the master key: equal values read equal under one key, and
 * nobody without the key can test a guess against it.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

static const char KEY_ID_CTX[] = "graphgate secrets key id v1";
static const char FP_CTX[] = "graphgate secrets fingerprint v1";

/* Bytes of text (trimmed of blanks and newlines: key files end in one) as 32 key bytes:
 * 64 hex digits or base64 (standard or URL-safe, padded or not). */
static bool decode_key(const char *text, unsigned char key[GG_STORE_VAULT_KEY_BYTES]) {
    size_t n = strlen(text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ' || text[n - 1] == '\t')) n--;
    while (n && (*text == ' ' || *text == '\t')) text++, n--;
    size_t got = 0;
    if (n == 2 * GG_STORE_VAULT_KEY_BYTES &&
        sodium_hex2bin(key, GG_STORE_VAULT_KEY_BYTES, text, n, NULL, &got, NULL) == 0 && got == GG_STORE_VAULT_KEY_BYTES)
        return true;
    static const int variants[] = {sodium_base64_VARIANT_ORIGINAL, sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
                                   sodium_base64_VARIANT_URLSAFE, sodium_base64_VARIANT_URLSAFE_NO_PADDING};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        unsigned char buf[GG_STORE_VAULT_KEY_BYTES + 8];
        if (sodium_base642bin(buf, sizeof buf, text, n, NULL, &got, NULL, variants[i]) == 0 &&
            got == GG_STORE_VAULT_KEY_BYTES) {
            memcpy(key, buf, GG_STORE_VAULT_KEY_BYTES);
            sodium_memzero(buf, sizeof buf);
            return true;
        }
        sodium_memzero(buf, sizeof buf);
    }
    return false;
}

/* See store.h. */
bool gg_store_vault_init(gg_store_vault *v, const char *text, gg_error *err) {
    memset(v, 0, sizeof *v);
    if (sodium_init() < 0) return gg_error_set(err, "internal_error", "libsodium failed to initialize"), false;
    if (!text || !decode_key(text, v->key)) {
        sodium_memzero(v->key, sizeof v->key);
        gg_error_set(err, "invalid_config", "the secrets key must be 32 bytes, as 64 hex digits or base64");
        return false;
    }
    unsigned char id[8];
    crypto_generichash(id, sizeof id, (const unsigned char *)KEY_ID_CTX, sizeof KEY_ID_CTX - 1, v->key, sizeof v->key);
    sodium_bin2hex(v->key_id, sizeof v->key_id, id, sizeof id);
    crypto_generichash(v->fp_key, sizeof v->fp_key, (const unsigned char *)FP_CTX, sizeof FP_CTX - 1, v->key,
                       sizeof v->key);
    v->ready = true;
    return true;
}

/* See store.h. */
bool gg_store_vault_load_file(gg_store_vault *v, const char *path, gg_error *err) {
    FILE *f = fopen(path, "r");
    if (!f) return gg_error_set(err, "invalid_config", "cannot read the secrets key file %s", path), false;
    char buf[512];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    buf[n] = '\0';
    bool ok = !more && gg_store_vault_init(v, buf, err);
    sodium_memzero(buf, sizeof buf);
    if (more) gg_error_set(err, "invalid_config", "the secrets key file %s is too long for a key", path);
    else if (!ok) {
        gg_error_clear(err);
        gg_error_set(err, "invalid_config", "the secrets key file %s does not hold 32 bytes (64 hex digits or base64)", path);
    }
    return ok;
}

/* See store.h. */
void gg_store_vault_wipe(gg_store_vault *v) { sodium_memzero(v, sizeof *v); }

/* "tenant\0name" into ad (at most GG_STORE_VAULT_AD_MAX bytes); its length, 0 when too long. */
static size_t make_ad(unsigned char *ad, const char *tenant, const char *name) {
    size_t t = strlen(tenant), n = strlen(name);
    if (t + 1 + n > GG_STORE_VAULT_AD_MAX) return 0;
    memcpy(ad, tenant, t);
    ad[t] = '\0';
    memcpy(ad + t + 1, name, n);
    return t + 1 + n;
}

/* See store.h. */
unsigned char *gg_store_vault_seal(const gg_store_vault *v, const char *tenant, const char *name,
                                   const unsigned char *value, size_t len,
                                   unsigned char nonce[GG_STORE_VAULT_NONCE_BYTES], size_t *out_len, gg_error *err) {
    unsigned char ad[GG_STORE_VAULT_AD_MAX];
    size_t adlen = make_ad(ad, tenant, name);
    if (!v->ready || !adlen) return gg_error_set(err, "invalid_argument", "no secrets key, or the name is too long"), NULL;
    unsigned char *ct = malloc(len + crypto_aead_xchacha20poly1305_ietf_ABYTES);
    if (!ct) return gg_error_set(err, "oom", "out of memory"), NULL;
    randombytes_buf(nonce, GG_STORE_VAULT_NONCE_BYTES);
    unsigned long long n = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(ct, &n, value, len, ad, adlen, NULL, nonce, v->key);
    *out_len = (size_t)n;
    return ct;
}

/* See store.h. */
char *gg_store_vault_open(const gg_store_vault *v, const char *tenant, const char *name,
                          const unsigned char nonce[GG_STORE_VAULT_NONCE_BYTES], const unsigned char *ct, size_t len,
                          size_t *out_len, gg_error *err) {
    unsigned char ad[GG_STORE_VAULT_AD_MAX];
    size_t adlen = make_ad(ad, tenant, name);
    if (!v->ready || !adlen || len < crypto_aead_xchacha20poly1305_ietf_ABYTES) {
        gg_error_set(err, "secret_unreadable", "secret '%s' cannot be decrypted", name);
        return NULL;
    }
    char *pt = malloc(len - crypto_aead_xchacha20poly1305_ietf_ABYTES + 1);
    if (!pt) return gg_error_set(err, "oom", "out of memory"), NULL;
    unsigned long long n = 0;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt((unsigned char *)pt, &n, NULL, ct, len, ad, adlen, nonce, v->key) != 0) {
        free(pt);
        gg_error_set(err, "secret_unreadable", "secret '%s' cannot be decrypted (another key, or a damaged row)", name);
        return NULL;
    }
    pt[n] = '\0';
    if (out_len) *out_len = (size_t)n;
    return pt;
}

/* See store.h. */
void gg_store_vault_fingerprint(const gg_store_vault *v, const char *tenant, const char *name,
                                const unsigned char *value, size_t len, char out[GG_STORE_VAULT_ID_LEN + 1]) {
    unsigned char ad[GG_STORE_VAULT_AD_MAX], h[8];
    size_t adlen = make_ad(ad, tenant, name);
    crypto_generichash_state st;
    crypto_generichash_init(&st, v->fp_key, sizeof v->fp_key, sizeof h);
    crypto_generichash_update(&st, ad, adlen);
    crypto_generichash_update(&st, value, len);
    crypto_generichash_final(&st, h, sizeof h);
    sodium_bin2hex(out, GG_STORE_VAULT_ID_LEN + 1, h, sizeof h);
}

/* See store.h. */
void gg_store_secret_free(char *value, size_t len) {
    if (!value) return;
    sodium_memzero(value, len);
    free(value);
}
