/* keys.c — the pure parts of auth: names, scopes, key text, hashing, header parsing. */
#include "auth/auth.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const reserved_names[] = {"tools", "nodes", "invoke", "health", "internal", "admin"};

bool gg_auth_valid_name(const char *name, const char *what, gg_error *err) {
    if (!what) what = "name";
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > GG_NAME_MAX) {
        gg_error_set(err, "invalid_name", "%s name must be 1 to %d characters", what, GG_NAME_MAX);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
            gg_error_set(err, "invalid_name", "%s name '%s' may only contain a-z, 0-9 and '-'", what, name);
            return false;
        }
    }
    for (size_t i = 0; i < sizeof reserved_names / sizeof reserved_names[0]; i++) {
        if (strcmp(name, reserved_names[i]) == 0) {
            gg_error_set(err, "invalid_name", "%s name '%s' is reserved (it is a fixed route)", what, name);
            return false;
        }
    }
    return true;
}

/* ---- scopes ------------------------------------------------------------------------------- */

static const struct { gg_scope s; const char *name; } scope_names[] = {
    {GG_SCOPE_TOOLS_READ, "tools:read"},     {GG_SCOPE_TOOLS_EXECUTE, "tools:execute"},
    {GG_SCOPE_HEALTH_CHECK, "health:check"}, {GG_SCOPE_GRAPHS_WRITE, "graphs:write"},
    {GG_SCOPE_ADMIN, "admin"},
};
#define N_SCOPES (sizeof scope_names / sizeof scope_names[0])

const char *gg_scope_name(gg_scope s) {
    for (size_t i = 0; i < N_SCOPES; i++)
        if (scope_names[i].s == s) return scope_names[i].name;
    return "unknown";
}

unsigned gg_scopes_parse(const char *csv, gg_error *err) {
    unsigned mask = 0;
    const char *p = csv ? csv : "";
    bool any = false;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ') e++;
        size_t n = (size_t)(e - p);
        bool found = false;
        for (size_t i = 0; i < N_SCOPES; i++) {
            if (strlen(scope_names[i].name) == n && strncmp(p, scope_names[i].name, n) == 0) {
                mask |= (unsigned)scope_names[i].s;
                found = true;
            }
        }
        if (!found) {
            gg_error_set(err, "invalid_scope",
                         "unknown scope '%.*s' (valid: tools:read, tools:execute, health:check, graphs:write, admin)",
                         (int)(n > 64 ? 64 : n), p);
            return 0;
        }
        any = true;
        p = e;
    }
    if (!any) gg_error_set(err, "invalid_scope", "at least one scope is required");
    return mask;
}

size_t gg_scopes_format(unsigned mask, char *buf, size_t size) {
    size_t n = 0;
    if (size) buf[0] = '\0';
    /* what snprintf("%s%s", sep, name) per scope did, without the formatting machinery
     * (twice on every MCP call) */
    for (size_t i = 0; i < N_SCOPES && size; i++) {
        if (!(mask & (unsigned)scope_names[i].s)) continue;
        if (n && n + 1 < size) buf[n++] = ',';
        else if (n) { n = size - 1; break; }
        size_t len = strlen(scope_names[i].name), room = size - 1 - n;
        memcpy(buf + n, scope_names[i].name, len < room ? len : room);
        n += len < room ? len : room;
        buf[n] = '\0';
        if (len >= room) break; /* full: n is size - 1 */
    }
    return n;
}

/* ---- key text ------------------------------------------------------------------------------ */

/* Character classes of key text, one table lookup per character (this runs on every
 * authenticated request): bit 1 = lowercase hex (ids), bit 2 = base64url (secrets). */
#define HEX 1
#define B64 2
static const unsigned char key_chars[256] = {
    ['0'] = HEX | B64, ['1'] = HEX | B64, ['2'] = HEX | B64, ['3'] = HEX | B64, ['4'] = HEX | B64,
    ['5'] = HEX | B64, ['6'] = HEX | B64, ['7'] = HEX | B64, ['8'] = HEX | B64, ['9'] = HEX | B64,
    ['a'] = HEX | B64, ['b'] = HEX | B64, ['c'] = HEX | B64, ['d'] = HEX | B64, ['e'] = HEX | B64,
    ['f'] = HEX | B64, ['g'] = B64, ['h'] = B64, ['i'] = B64, ['j'] = B64, ['k'] = B64, ['l'] = B64,
    ['m'] = B64, ['n'] = B64, ['o'] = B64, ['p'] = B64, ['q'] = B64, ['r'] = B64, ['s'] = B64,
    ['t'] = B64, ['u'] = B64, ['v'] = B64, ['w'] = B64, ['x'] = B64, ['y'] = B64, ['z'] = B64,
    ['A'] = B64, ['B'] = B64, ['C'] = B64, ['D'] = B64, ['E'] = B64, ['F'] = B64, ['G'] = B64,
    ['H'] = B64, ['I'] = B64, ['J'] = B64, ['K'] = B64, ['L'] = B64, ['M'] = B64, ['N'] = B64,
    ['O'] = B64, ['P'] = B64, ['Q'] = B64, ['R'] = B64, ['S'] = B64, ['T'] = B64, ['U'] = B64,
    ['V'] = B64, ['W'] = B64, ['X'] = B64, ['Y'] = B64, ['Z'] = B64, ['-'] = B64, ['_'] = B64,
};

/* Split and check key text; see auth.h. */
bool gg_auth_parse_key(const char *key, size_t len, char id_out[GG_KEY_ID_LEN + 1],
                       const char **secret, size_t *secret_len) {
    if (!key || len != GG_KEY_TEXT_LEN || memcmp(key, "gg_", 3) != 0 || key[3 + GG_KEY_ID_LEN] != '_')
        return false;
    const unsigned char *k = (const unsigned char *)key;
    unsigned ok = HEX;
    for (size_t i = 0; i < GG_KEY_ID_LEN; i++) ok &= key_chars[k[3 + i]];
    if (!ok) return false;
    ok = B64;
    for (size_t i = 0; i < GG_KEY_SECRET_LEN; i++) ok &= key_chars[k[4 + GG_KEY_ID_LEN + i]];
    if (!ok) return false;
    const char *s = key + 3 + GG_KEY_ID_LEN + 1;
    memcpy(id_out, key + 3, GG_KEY_ID_LEN);
    id_out[GG_KEY_ID_LEN] = '\0';
    *secret = s;
    *secret_len = GG_KEY_SECRET_LEN;
    return true;
}

void gg_auth_hash_secret(const unsigned char *pepper, size_t pepper_len, const char *id,
                         const char *secret, size_t secret_len,
                         unsigned char hash[GG_KEY_HASH_LEN]) {
    crypto_generichash_state st;
    crypto_generichash_init(&st, pepper, pepper_len, GG_KEY_HASH_LEN);
    crypto_generichash_update(&st, (const unsigned char *)id, strlen(id));
    crypto_generichash_update(&st, (const unsigned char *)"_", 1);
    crypto_generichash_update(&st, (const unsigned char *)secret, secret_len);
    crypto_generichash_final(&st, hash, GG_KEY_HASH_LEN);
}

/* ---- headers ------------------------------------------------------------------------------- */

static const char *trim(const char *s, size_t *len) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) n--;
    *len = n;
    return s;
}

const char *gg_auth_key_from_headers(const char *authorization, const char *x_api_key,
                                     size_t *len) {
    size_t n;
    if (authorization) {
        const char *a = trim(authorization, &n);
        if (n >= 6 && strncasecmp(a, "Bearer", 6) == 0 && (n == 6 || a[6] == ' ' || a[6] == '\t')) {
            size_t m;
            const char *t = trim(a + 6, &m);
            *len = m;
            return t;
        }
    }
    if (x_api_key) {
        const char *k = trim(x_api_key, &n);
        *len = n;
        return k;
    }
    *len = 0;
    return NULL;
}

bool gg_auth_allows(const gg_principal *p, const char *tenant, gg_scope need, unsigned *missing) {
    if (missing) *missing = 0;
    if (!p) return false;
    if (p->scopes & GG_SCOPE_ADMIN) return true;
    if (tenant && strcmp(p->tenant, tenant) != 0) return false;
    if ((p->scopes & (unsigned)need) != (unsigned)need) {
        if (missing) *missing = (unsigned)need;
        return false;
    }
    return true;
}
