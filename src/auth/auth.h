/* auth.h — names, API keys, scopes, per-key rate limits and per-tenant execution caps.
 * No HTTP here: callers pass header values in and map results to statuses themselves.
 *
 * Ownership: gg_auth borrows the store for its lifetime and owns its caches; every
 * function copies what it keeps; returned key strings are the caller's (free them with
 * gg_auth_free_secret, which wipes them).
 *
 * Keys look like gg_<id>_<secret>: id is 16 lowercase hex characters (public, the primary
 * key in the store), secret is 43 base64url characters (32 random bytes from libsodium).
 * Only BLAKE2b-256(key = pepper, "<id>_<secret>") is stored. A fast keyed hash rather than
 * crypto_pwhash because the secret has 256 bits of entropy (nothing to brute-force, so a
 * slow hash buys nothing) while every request verifies a key: pwhash would cost tens of
 * milliseconds per request. The pepper (config auth.key_pepper, else a random value kept
 * in the database) means a stolen hash is useless without it. Comparison is constant-time
 * (sodium_memcmp).
 */
#ifndef GG_AUTH_H
#define GG_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "store/store.h"
#include "util/util.h"

/* ---- names ---------------------------------------------------------------------------- */

#define GG_NAME_MAX 63
/* Tenant and graph names: [a-z0-9-], 1..63 characters, not starting or ending with '-',
 * and not one of the fixed route words (tools, nodes, invoke, health, internal, admin).
 * err code "invalid_name" with the reason. */
bool gg_auth_valid_name(const char *name, const char *what /* "tenant", "graph" */,
                        gg_error *err);

/* ---- scopes --------------------------------------------------------------------------- */

typedef enum {
    GG_SCOPE_TOOLS_READ = 1u << 0,    /* tools:read — initialize, tools/list */
    GG_SCOPE_TOOLS_EXECUTE = 1u << 1, /* tools:execute — tools/call */
    GG_SCOPE_HEALTH_CHECK = 1u << 2,  /* health:check — /mcp/health */
    GG_SCOPE_GRAPHS_WRITE = 1u << 3,  /* graphs:write — admin graph routes, own tenant */
    GG_SCOPE_ADMIN = 1u << 4,         /* admin — everything, every tenant */
} gg_scope;
#define GG_SCOPE_ALL 0x1fu

/* "tools:read,tools:execute" (spaces allowed, duplicates fine) → mask; an unknown or
 * empty scope is err "invalid_scope" naming it. */
unsigned gg_scopes_parse(const char *csv, gg_error *err);
/* Canonical comma-separated names in a fixed order; returns the length written. */
size_t gg_scopes_format(unsigned mask, char *buf, size_t size);
const char *gg_scope_name(gg_scope s);
/* admin implies every scope. */
static inline bool gg_scope_allows(unsigned have, gg_scope need) {
    return (have & GG_SCOPE_ADMIN) || (have & (unsigned)need) == (unsigned)need;
}

/* ---- key material (pure) -------------------------------------------------------------- */

#define GG_KEY_ID_LEN 16
#define GG_KEY_SECRET_LEN 43
#define GG_KEY_TEXT_LEN (3 + GG_KEY_ID_LEN + 1 + GG_KEY_SECRET_LEN)

/* The presented key from request headers: "Authorization: Bearer <key>" wins, else
 * "X-API-Key: <key>". Either may be NULL. Returns a pointer into the header with *len set
 * (surrounding spaces trimmed), or NULL when no key was presented. */
const char *gg_auth_key_from_headers(const char *authorization, const char *x_api_key,
                                     size_t *len);
/* Split "gg_<id>_<secret>" (exact lengths and alphabets); id_out gets the id. */
bool gg_auth_parse_key(const char *key, size_t len, char id_out[GG_KEY_ID_LEN + 1],
                       const char **secret, size_t *secret_len);
/* hash = BLAKE2b-256(pepper, id "_" secret). */
void gg_auth_hash_secret(const unsigned char *pepper, size_t pepper_len, const char *id,
                         const char *secret, size_t secret_len,
                         unsigned char hash[GG_KEY_HASH_LEN]);

/* ---- rate limiter (token bucket per key; thread-safe) --------------------------------- */

typedef struct gg_ratelimit gg_ratelimit;
/* rate tokens per second, burst bucket size; rate <= 0 means unlimited. */
gg_ratelimit *gg_ratelimit_new(double rate, int burst);
void gg_ratelimit_free(gg_ratelimit *rl);
/* Take one token for key at now_ms (monotonic). 0 = allowed; otherwise the whole seconds
 * (>= 1) until a token is available — the Retry-After value. */
int gg_ratelimit_take(gg_ratelimit *rl, const char *key, double now_ms);
/* New rate/burst from now on (configuration reload); buckets keep their tokens. */
void gg_ratelimit_set(gg_ratelimit *rl, double rate, int burst);

/* ---- per-tenant concurrent executions (thread-safe) ----------------------------------- */

typedef struct gg_tenant_slots gg_tenant_slots;
gg_tenant_slots *gg_tenant_slots_new(int max_per_tenant /* 0 = no cap */);
void gg_tenant_slots_free(gg_tenant_slots *t);
/* true and counted when under the cap; pair every true with gg_tenant_slots_release. */
bool gg_tenant_slots_acquire(gg_tenant_slots *t, const char *tenant);
void gg_tenant_slots_release(gg_tenant_slots *t, const char *tenant);
int gg_tenant_slots_in_use(gg_tenant_slots *t, const char *tenant);
/* A new cap from now on (configuration reload); calls running beyond it finish. */
void gg_tenant_slots_set(gg_tenant_slots *t, int max_per_tenant);

/* ---- the authenticator ------------------------------------------------------------------ */

typedef struct gg_auth gg_auth;

typedef struct gg_auth_options {
    const char *pepper;          /* config auth.key_pepper; NULL = the database's own */
    long long cache_ttl_ms;      /* re-read a cached key after this long; 0 = 30s */
    double rate;                 /* per-key requests/s; 0 = unlimited */
    int burst;                   /* bucket size; 0 = max(1, 2 x rate) */
    int tenant_max_concurrent;   /* 0 = no cap */
    gg_history *history;         /* where last-used updates go; NULL = not recorded */
} gg_auth_options;

gg_auth *gg_auth_new(gg_store *s, const gg_auth_options *o, gg_error *err);
void gg_auth_free(gg_auth *a);
/* Let last-used updates flow through the history writer once it runs. */
void gg_auth_set_history(gg_auth *a, gg_history *h);
/* Apply new rate limits and tenant cap (options' meaning) from now on: SIGHUP. */
void gg_auth_set_limits(gg_auth *a, double rate, int burst, int tenant_max_concurrent);

typedef struct gg_principal {
    char key_id[GG_KEY_ID_LEN + 1];
    char tenant[GG_TENANT_MAX];
    unsigned scopes;
} gg_principal;

typedef enum {
    GG_AUTH_OK = 0,
    GG_AUTH_MISSING,   /* no key presented */
    GG_AUTH_INVALID,   /* malformed, unknown id or wrong secret */
    GG_AUTH_REVOKED,
    GG_AUTH_ERROR      /* store unreachable: answer 503, not 401 */
} gg_auth_status;
const char *gg_auth_status_message(gg_auth_status st);

/* ---- as HTTP answers (http_auth.c), one for every route that takes a key ----
 * gg_auth_http_check verifies the key of req (Authorization: Bearer or X-API-Key) and
 * takes one from its rate limit; on failure it fills res (503 + Retry-After when the store
 * cannot be read, 401 + WWW-Authenticate, 429 + Retry-After) and returns false. */
struct gg_http_req;
struct gg_http_res;
bool gg_auth_http_check(gg_auth *auth, struct gg_http_req *req, struct gg_http_res *res, gg_principal *out);
/* 403 naming the scope the route needs. */
void gg_auth_http_insufficient_scope(struct gg_http_res *res, gg_scope need);

/* Verify a presented key (key may be NULL = missing). Hot path: a cache hit costs one
 * BLAKE2b of ~60 bytes and a hash-table lookup; a miss reads the store once. */
gg_auth_status gg_auth_verify(gg_auth *a, const char *key, size_t len, gg_principal *out);

/* Create a key for tenant ("not_found" if no such tenant). *key_out receives the full key
 * text (the only time it exists; free with gg_auth_free_secret), id_out its id. */
bool gg_auth_create_key(gg_auth *a, const char *tenant, unsigned scopes, const char *name,
                        char **key_out, char id_out[GG_KEY_ID_LEN + 1], gg_error *err);
void gg_auth_free_secret(char *key);
/* Revoke (tenant NULL = any, admin) and drop it from the cache at once. */
bool gg_auth_revoke_key(gg_auth *a, const char *id, const char *tenant, gg_error *err);
/* Forget every cached key (e.g. after deleting a tenant). */
void gg_auth_invalidate_all(gg_auth *a);
/* Read the store's key generation now (not at the next once-a-second check) and forget
 * every cached key if it moved: the gateway calls it when a change notification arrives. */
void gg_auth_check_changes(gg_auth *a);

/* Per-key rate limit: 0 = go on, else Retry-After seconds. */
int gg_auth_rate_take(gg_auth *a, const gg_principal *p);
/* Per-tenant execution slots (pair acquire/release). */
bool gg_auth_exec_acquire(gg_auth *a, const char *tenant);
void gg_auth_exec_release(gg_auth *a, const char *tenant);
/* Slots the tenant holds now (its calls running or waiting for a worker). */
int gg_auth_exec_in_use(gg_auth *a, const char *tenant);

/* May principal p act on tenant's resources needing scope `need`? (admin: any tenant; else
 * its own tenant and the scope.) Returns the missing scope via *missing (0 = tenant
 * mismatch) when false. */
bool gg_auth_allows(const gg_principal *p, const char *tenant, gg_scope need, unsigned *missing);

#endif
