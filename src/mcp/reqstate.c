/* reqstate.c — the requestState of a 2026-07-28 input-required result: the waiting run's
 * saved state (gg_graph_run_save) sealed with XChaCha20-Poly1305 under a key every replica
 * derives from the shared secret. The additional data binds it to where it may be resumed
 * (tenant, graph version, tool, API key — the transport's binding string), the plaintext
 * carries an expiry: a state opened anywhere else, later, or altered by one bit fails.
 * The run itself is not stored server-side; that a state was answered is (its round nonce,
 * see server.c input_required and src/store/rounds.c), so each is answered once. Token:
 * base64url(nonce || ciphertext), at most MCP_REQSTATE_MAX characters.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "mcp/mcp.h"

#define NONCE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG crypto_aead_xchacha20poly1305_ietf_ABYTES

/* See mcp.h. */
char *mcp_reqstate_seal(const uint8_t key[32], const char *binding, json_t *state, int64_t expires) {
    json_t *box = json_pack("{s:O,s:I}", "state", state, "exp", (json_int_t)expires);
    char *plain = box ? json_dumps(box, JSON_COMPACT) : NULL;
    json_decref(box);
    if (!plain) return NULL;
    size_t plen = strlen(plain), clen = NONCE + plen + TAG;
    size_t b64 = sodium_base64_ENCODED_LEN(clen, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    unsigned char *raw = malloc(clen);
    char *out = b64 <= MCP_REQSTATE_MAX + 1 ? malloc(b64) : NULL;
    if (raw && out) {
        randombytes_buf(raw, NONCE);
        unsigned long long n = 0;
        crypto_aead_xchacha20poly1305_ietf_encrypt(raw + NONCE, &n, (unsigned char *)plain, plen,
                                                   (const unsigned char *)binding, strlen(binding), NULL, raw, key);
        sodium_bin2base64(out, b64, raw, NONCE + (size_t)n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    } else {
        free(out);
        out = NULL;
    }
    free(raw);
    sodium_memzero(plain, plen);
    free(plain);
    return out;
}

/* See mcp.h. */
json_t *mcp_reqstate_open(const uint8_t key[32], const char *binding, const char *token, const char **why) {
    size_t tlen = strlen(token), rlen = 0;
    *why = "requestState is too large";
    if (tlen > MCP_REQSTATE_MAX) return NULL;
    unsigned char *raw = malloc(tlen + 1);
    *why = "requestState is not one this server issued (malformed)";
    if (!raw || sodium_base642bin(raw, tlen + 1, token, tlen, NULL, &rlen, NULL,
                                  sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 || rlen < NONCE + TAG) {
        free(raw);
        return NULL;
    }
    unsigned char *plain = malloc(rlen - NONCE - TAG + 1);
    unsigned long long plen = 0;
    json_t *box = NULL;
    *why = "requestState failed its integrity check (altered, or issued for another graph version, tool or key)";
    if (plain && crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &plen, NULL, raw + NONCE, rlen - NONCE, (const unsigned char *)binding,
                                                            strlen(binding), raw, key) == 0) {
        box = json_loadb((const char *)plain, (size_t)plen, 0, NULL);
        sodium_memzero(plain, (size_t)plen);
    }
    free(plain);
    free(raw);
    if (!box) return NULL;
    json_t *state = json_incref(json_object_get(box, "state"));
    json_int_t exp = json_integer_value(json_object_get(box, "exp"));
    json_decref(box);
    if (state && exp < (json_int_t)time(NULL)) {
        *why = "requestState has expired; call the tool again without it";
        json_decref(state);
        return NULL;
    }
    return state;
}
