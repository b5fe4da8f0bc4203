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
#include <jansson.h>
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
    char key_id[GG_KEY_ID_LEN + 1]; /* an API key's id; for a token, a hash of issuer + subject */
    char tenant[GG_TENANT_MAX];
    unsigned scopes;
    bool oauth; /* an OAuth access token, not an API key: the fields below are set */
    char subject[96], client_id[96], issuer[160]; /* cut to fit: for display and history */
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

/* ---- JWT access tokens (jwt.c; pure, any thread) --------------------------------------- */

/* Signature algorithms an issuer may be allowed. Never `none`, never an HMAC algorithm:
 * a resource server holds only public keys, so HS256 "keyed" with one is a forgery. */
enum { GG_JWT_RS256 = 1u << 0, GG_JWT_PS256 = 1u << 1, GG_JWT_ES256 = 1u << 2, GG_JWT_EDDSA = 1u << 3 };
#define GG_JWT_ALGS_DEFAULT (GG_JWT_RS256 | GG_JWT_PS256 | GG_JWT_ES256 | GG_JWT_EDDSA)
#define GG_JWT_MAX_BYTES 8192
/* "RS256" → GG_JWT_RS256; 0 for anything unsupported. */
unsigned gg_jwt_alg_bit(const char *name);

typedef struct gg_jwt_check {
    const char *issuer;     /* `iss` must equal it exactly */
    const char *audience;   /* `aud` (string or array) must contain it: RFC 8707's resource */
    unsigned algs;          /* GG_JWT_* allowed */
    double skew_s;          /* tolerated clock difference for exp, nbf, iat */
    double now_s;           /* seconds since the epoch */
    size_t max_token_bytes; /* 0: GG_JWT_MAX_BYTES */
} gg_jwt_check;

typedef enum {
    GG_JWT_OK,
    GG_JWT_INVALID,     /* err "invalid_token" says why, without quoting the token */
    GG_JWT_UNKNOWN_KID, /* the header names a kid the key set lacks: the caller may refetch
                         * the JWKS (rate-limited) and try again */
} gg_jwt_result;

/* Verify a compact JWS access token against the issuer's JWK Set (borrowed) and check its
 * claims. On GG_JWT_OK *claims gets the payload (caller's reference). */
gg_jwt_result gg_jwt_verify(const char *token, size_t len, const json_t *jwks, const gg_jwt_check *c,
                            json_t **claims, gg_error *err);
/* The header's kid (malloc'd) or NULL; no verification. */
char *gg_jwt_kid(const char *token, size_t len);
/* The claims' iss (malloc'd) or NULL, unverified: only to choose whose keys verify it. */
char *gg_jwt_unverified_issuer(const char *token, size_t len);

/* DPoP proofs (RFC 9449 section 4.3), pure: typ dpop+jwt, an allowed asymmetric alg, a
 * public jwk in the header that verifies the signature, htm and htu equal to the request's
 * method and URL (no query), iat within max_age_s of now, ath the SHA-256 of the access
 * token. out gets the key's RFC 7638 thumbprint, the jti (the caller checks replays), the
 * nonce (the caller checks it) and iat. false + "invalid_dpop_proof" saying what. */
#define GG_JWK_THUMBPRINT_LEN 43
typedef struct gg_dpop_check {
    const char *method, *url, *token;
    size_t token_len;
    double now_s, max_age_s;
} gg_dpop_check;
typedef struct gg_dpop_proof {
    char jkt[GG_JWK_THUMBPRINT_LEN + 1];
    char jti[129];
    char nonce[129];
    double iat;
} gg_dpop_proof;
bool gg_jwt_dpop_verify(const char *proof, size_t len, const gg_dpop_check *c, gg_dpop_proof *out, gg_error *err);
/* A public JWK's RFC 7638 thumbprint (SHA-256, base64url); false for a key without one. */
bool gg_jwt_thumbprint(const json_t *jwk, char out[GG_JWK_THUMBPRINT_LEN + 1]);

/* ---- a tenant's OAuth authorization servers (oauth.c; pure, any thread) ---------------- */

/* Check and normalize PUT /admin/tenants/{t}/oauth's body:
 *   {"issuers": [{"issuer": URL, "jwks_uri"?: URL, "algorithms"?: [...],
 *                 "clock_skew_s"?: 0..300, "scope_map"?: {"token scope": ["tools:read", ...]},
 *                 "tenant_claim"?: "claim that must equal the tenant's name"}]}
 * Defaults are written in (all four algorithms, 60 s, graphgate's scope names mapping to
 * themselves). Returns a new definition, or NULL + "invalid_argument" saying what is wrong.
 * A token never gets admin or graphs:write: those stay with API keys. */
json_t *gg_oauth_definition_check(const json_t *in, gg_error *err);
/* The issuer entry of a (normalized) definition whose "issuer" equals iss, or NULL. */
const json_t *gg_oauth_issuer_find(const json_t *definition, const char *iss);
/* graphgate scopes a verified token grants: its `scope` (space-separated) and `scp`
 * (array) values through the issuer's scope_map; never admin (graphs:write is kept here and
 * dropped by gg_auth_http_check_resource everywhere but a tenant's console resource). */
unsigned gg_oauth_claims_scopes(const json_t *issuer_def, const json_t *claims);
/* An issuer or jwks_uri URL: https, or http to a loopback host; no query, fragment or user
 * info. false + "invalid_argument" naming what. */
bool gg_oauth_url_ok(const char *url, const char *what, gg_error *err);
/* The token scopes a client should ask for (scope_map names across issuers, in order,
 * space-separated) into buf; an empty string when none fits. */
void gg_oauth_scopes_text(const json_t *definition, char *buf, size_t n);
/* The same, only the token scopes that map to one of want (gg_scope bits): an MCP
 * endpoint's are the tools scopes (gg_oauth_scopes_text), a console resource's graphs:write. */
void gg_oauth_scopes_text_for(const json_t *definition, unsigned want, char *buf, size_t n);

/* ---- graphgate as an OAuth resource server (issuers.c; thread-safe) --------------------
 * Ownership: gg_oauth borrows the store; one background thread (started by _new, joined by
 * _free) fetches each followed issuer's metadata and JWKS, bounded in time and size, and
 * refreshes them every refresh_s and on an unknown kid (at most once per
 * unknown_kid_interval_s per issuer). Requests never wait on the network: they read what
 * the fetcher published. Verified tokens are remembered by hash (with tenant and resource)
 * until they expire, at most 5 minutes, and forgotten when a definition changes. */
typedef struct gg_oauth gg_oauth;
typedef struct gg_oauth_options {
    double refresh_s;              /* 300 */
    double unknown_kid_interval_s; /* 10 */
    double fetch_timeout_s;        /* 5 */
    size_t max_document_bytes;     /* 256 KiB: metadata and JWKS answers */
    const unsigned char *nonce_key; /* 32 bytes shared by the replicas (DPoP nonces); NULL:
                                     * random per process */
    /* A tenant's secret by name (introspection client secrets, "${secrets.NAME}"): the
     * value malloc'd and NUL-terminated (wiped and freed by the caller), or NULL + err.
     * Called on the fetcher thread only. NULL: introspection has no secrets. */
    char *(*secret)(void *user, const char *tenant, const char *name, gg_error *err);
    void *secret_user;
} gg_oauth_options;
gg_oauth *gg_oauth_new(gg_store *store, const gg_oauth_options *opt, gg_error *err);
void gg_oauth_free(gg_oauth *o);
/* Another replica (or the CLI) may have changed definitions: read the generation now. */
void gg_oauth_changed(gg_oauth *o);
/* This process changed tenant's definition: forget cached ones and tokens now. */
void gg_oauth_tenant_changed(gg_oauth *o, const char *tenant);

/* What a verified token asks of its request beyond itself (RFC 9449): the thumbprint of the
 * key it is bound to (cnf.jkt; "" when not bound), and its issuer's DPoP policy. */
typedef struct gg_oauth_binding {
    char jkt[GG_JWK_THUMBPRINT_LEN + 1];
    bool dpop_required; /* the issuer's tokens must all be DPoP-bound */
    bool dpop_nonce;    /* proofs must carry a nonce this server gave */
} gg_oauth_binding;

typedef enum {
    GG_OAUTH_OK,
    GG_OAUTH_NONE,        /* the tenant has no authorization servers */
    GG_OAUTH_INVALID,     /* err "invalid_token" says why */
    GG_OAUTH_UNAVAILABLE, /* keys not fetched yet, or the store unreadable: try again shortly */
    GG_OAUTH_PENDING,     /* an opaque token not checked yet: gg_oauth_await */
} gg_oauth_result;
/* Verify an access token presented to resource (the endpoint's canonical URL) of tenant;
 * on GG_OAUTH_OK *out is the principal (oauth set; key_id stable per issuer and subject). */
gg_oauth_result gg_oauth_verify(gg_oauth *o, const char *tenant, const char *resource, const char *token,
                                size_t len, gg_principal *out, gg_oauth_binding *b, gg_error *err);
/* Opaque tokens (not a JWT: no dot) are checked by introspection (RFC 7662) at the first
 * issuer of the tenant's definition with "introspection" settings; gg_oauth_verify answers
 * from the answers remembered (active: until the token's exp, at most cache_s; inactive:
 * negative_cache_s; the endpoint failing: 1 s) or GG_OAUTH_PENDING. Whether tenant's
 * definition introspects opaque tokens at all: */
bool gg_oauth_introspects(gg_oauth *o, const char *tenant);
/* After GG_OAUTH_PENDING: have the token introspected (or join the check already under way)
 * and call fn(user) once, on the fetcher thread, when its answer is remembered (or the
 * check ended: then gg_oauth_verify answers UNAVAILABLE for a second), and at gg_oauth_free
 * for a check still open. Returns GG_OAUTH_PENDING when fn will be called; anything else
 * (fn never called): the answer is there now (verify again), or UNAVAILABLE + err when the
 * issuer has its `concurrency` checks under way, its `rate_per_s` spent, or too many
 * requests wait on this token: a flood of invented tokens never becomes a flood of calls. */
typedef void (*gg_oauth_wake_fn)(void *user);
gg_oauth_result gg_oauth_await(gg_oauth *o, const char *tenant, const char *resource, const char *token, size_t len,
                               gg_oauth_wake_fn fn, void *user, gg_error *err);
/* Introspection calls made, those that failed (no answer, not 200, not JSON), and checks
 * refused by the limits. */
void gg_oauth_introspection_metrics(gg_oauth *o, unsigned long *calls, unsigned long *failures,
                                    unsigned long *refused);
/* DPoP: true when this proof (key thumbprint + jti) was seen within the last max age
 * (remembered per process, bounded); else remembers it. */
bool gg_oauth_dpop_replayed(gg_oauth *o, const char *jkt, const char *jti, double iat);
/* DPoP nonces (RFC 9449 section 8): a fresh one into out, and whether one is current (made
 * in this or the previous minute by a process with the same nonce key). */
#define GG_DPOP_NONCE_LEN 43
void gg_oauth_dpop_nonce(gg_oauth *o, char out[GG_DPOP_NONCE_LEN + 1]);
bool gg_oauth_dpop_nonce_ok(gg_oauth *o, const char *nonce);
/* The tenant's definition (new reference), following its issuers from now on; NULL +
 * "not_found" when it has none, or a store error. */
json_t *gg_oauth_definition(gg_oauth *o, const char *tenant, gg_error *err);
/* What is known of one issuer entry: keys, jwks_uri, fetched_at, last_error, fetches. */
json_t *gg_oauth_issuer_status(gg_oauth *o, const json_t *entry);
void gg_oauth_metrics(gg_oauth *o, unsigned long *fetches, unsigned long *failures);

/* ---- MCP endpoints as OAuth protected resources (http_oauth.c) -------------------------
 * The endpoint a request is for: tenant, its canonical URL (the token's audience; NULL when
 * the server has no public URL, then tokens are not taken) and its RFC 9728 metadata URL.
 * All borrowed. The scopes a challenge names come from the tenant's definition. */
typedef struct gg_resource {
    const char *tenant, *url, *metadata_url;
    /* the tenant's console resource (its admin routes, docs/oauth.md): a token keeps the
     * graphs:write its scope_map grants; on every other resource it never has it */
    bool console;
} gg_resource;
/* An API key as gg_auth_http_check takes it, or a bearer JWT verified by o for r (o may be
 * NULL: keys only), or an opaque token introspected. Failures fill res: 401 with a challenge
 * naming r's metadata when its tenant has authorization servers, 503 + Retry-After, 429 +
 * Retry-After. Or false with the request deferred (gg_http_deferred(req): the handler
 * returns GG_HTTP_DEFERRED and touches neither req nor res again): an opaque token is being
 * introspected, and the handler runs again from the start once the answer is in
 * (gg_http_async_redispatch), so it must hold nothing of its own across this call. */
bool gg_auth_http_check_resource(gg_auth *auth, gg_oauth *o, struct gg_http_req *req, struct gg_http_res *res,
                                 const gg_resource *r, gg_principal *out);
/* 403 naming the scope; for a token also the step-up challenge (error="insufficient_scope"). */
void gg_auth_http_insufficient_scope_at(struct gg_http_res *res, gg_oauth *o, const gg_resource *r,
                                        const gg_principal *p, gg_scope need);
/* Set WWW-Authenticate: Bearer with the given parameters (each may be NULL). */
void gg_auth_http_challenge(struct gg_http_res *res, const gg_resource *r, const char *error, const char *desc,
                            const char *scope);

/* ---- graphgate as the OAuth client of a downstream MCP server (oauth_client.c) ----------
 * One per downstream server definition: its tokens (in memory only), discovery and grants;
 * see the file's comment for the flow. Settings (an mcpServers entry's `auth`): type
 * (oauth | client_credentials | jwt_bearer), client_id, client_secret, scope,
 * token_endpoint_auth_method (client_secret_basic | client_secret_post | none),
 * (+ private_key_jwt), client_metadata_url (a client ID metadata document), redirect_uri,
 * assertion (jwt_bearer: the workload's JWT), private_key (PEM, signing private_key_jwt
 * assertions) with signing_algorithm (ES256 | ES384 | RS256 | PS256), dpop (true: DPoP-bound
 * tokens, RFC 9449, nonces included), timeout (ms per request, 100..120000). Errors: "invalid_config" for
 * settings, "downstream_auth" for everything the servers answer or fail to. */
#define GG_OAUTH_CLIENT_URL_MAX 1024
#define GG_OAUTH_CLIENT_MAX_BODY (256u << 10) /* one metadata, registration or token answer */
#define GG_OAUTH_CLIENT_MAX_STEP_UPS 2        /* 403 insufficient_scope re-authorizations in a row */
#define GG_OAUTH_PKCE_VERIFIER_LEN 43
#define GG_OAUTH_PKCE_CHALLENGE_LEN 43
typedef struct gg_oauth_client gg_oauth_client;
/* The caller's egress policy for every request the client makes (both may be NULL): url_ok
 * before a request, connect_ok for each address libcurl connects to; false + why. */
struct sockaddr;
typedef struct gg_oauth_client_net {
    bool (*url_ok)(void *ctx, const char *url, char *why, size_t n);
    bool (*connect_ok)(void *ctx, const char *url, const struct sockaddr *sa, char *why, size_t n);
    void *ctx;
} gg_oauth_client_net;
bool gg_oauth_client_check_settings(const json_t *settings, gg_error *err);
gg_oauth_client *gg_oauth_client_new(const json_t *settings, const char *server_url, const char *name,
                                     const gg_oauth_client_net *net, gg_error *err);
/* Waits for a resolution in flight (bounded by its timeouts), then frees. */
void gg_oauth_client_free(gg_oauth_client *c);
/* The provider calls (impl is the gg_oauth_client), shaped as mcp_auth_provider's: the
 * headers of a request ("Authorization: Bearer ..."; false = no token yet, or expired), and
 * a 401/403 resolved on a helper thread, done(user, err) called once (err NULL = retry). */
typedef void (*gg_oauth_client_done_fn)(void *user, gg_error *err);
bool gg_oauth_client_headers(void *impl, const char *url, const char *method, char *out, size_t cap);
void gg_oauth_client_challenge(void *impl, const char *url, int status, const char *www_authenticate,
                               const char *dpop_nonce, gg_oauth_client_done_fn done, void *user);
void gg_oauth_client_destroy(void *impl);
/* On behalf of the caller (mcp_auth_for_caller: type token_exchange, or id_jag with
 * subject: caller): the caller's access token, held (a copy, the newest) while any call
 * holds it (token: one more hold; NULL: one less, the copy wiped with the last), as the
 * subject of the next exchange (RFC 8693); mcp_auth_provider.subject's shape. Other
 * settings ignore it. */
void gg_oauth_client_subject(void *impl, const char *token);
/* {state: valid|none, valid_until_ms?, refresh_token, issuer?, fetches, failures}: never a token. */
json_t *gg_oauth_client_state(gg_oauth_client *c);
/* Pure parts. The Bearer challenge's parameters (false when it has none). */
typedef struct gg_oauth_challenge {
    bool bearer;
    char error[64], scope[512], resource_metadata[GG_OAUTH_CLIENT_URL_MAX];
} gg_oauth_challenge;
bool gg_oauth_client_parse_challenge(const char *www_authenticate, gg_oauth_challenge *out);
/* Protected-resource metadata URLs of a server URL in the order to try (path-inserted, then
 * root); authorization-server metadata URLs of an issuer (RFC 8414, then OpenID, in the
 * MCP spec's order). Return how many were written (at most max). */
int gg_oauth_client_prm_urls(const char *server_url, char urls[][GG_OAUTH_CLIENT_URL_MAX], int max);
int gg_oauth_client_as_urls(const char *issuer, char urls[][GG_OAUTH_CLIENT_URL_MAX], int max);
/* Whether metadata's resource may name server_url: same origin, its path a prefix of the
 * server's at a segment boundary, no fragment. */
bool gg_oauth_client_resource_ok(const char *resource, const char *server_url);
/* RFC 9207: iss (NULL = absent) against the issuer, by plain string comparison; absent is
 * fine only when the server did not advertise the parameter. */
bool gg_oauth_client_iss_ok(const char *iss, const char *issuer, bool advertised);
/* A fresh PKCE verifier (32 random bytes, base64url) and its S256 challenge. */
void gg_oauth_client_pkce(char verifier[GG_OAUTH_PKCE_VERIFIER_LEN + 1], char challenge[GG_OAUTH_PKCE_CHALLENGE_LEN + 1]);

/* ---- per-user consent for a downstream server (oauth_consent.c) ------------------------
 * What an authorization request's `state` carries to graphgate's callback, sealed under a
 * key all replicas share (XChaCha20-Poly1305): the grant's tenant, principal (key_id) and
 * server, the elicitation id (32 hex), the PKCE verifier, an expiry (unix ms) and what the
 * code's exchange needs. */
#define GG_OAUTH_CONSENT_KEY_BYTES 32
#define GG_OAUTH_CONSENT_STATE_MAX 4096 /* characters of a sealed state */
typedef struct gg_oauth_consent {
    char tenant[64], principal[65], server[101], elicitation_id[33];
    char verifier[GG_OAUTH_PKCE_VERIFIER_LEN + 1];
    long long expires_ms;
    /* where the callback exchanges the code, whichever replica it lands on (set by the
     * caller after _new; "" = none): the token endpoint, the client registered there (its
     * secret for a confidential client), the issuer (RFC 9207) and the resource (RFC 8707) */
    char token_endpoint[512], client_id[256], client_secret[256], issuer[512], resource[512];
    /* which step of the connect flow the state is for (src/gateway/consent.c): 0 the
     * elicitation's URL (resource: the downstream server's URL; client and scope: its
     * configured ones), 1 the user signing in at the tenant's own authorization server, 2 the
     * downstream's authorization */
    int leg;
    char scope[512];
    char next[2048]; /* leg 1: the elicitation's sealed state, to go on with once signed in */
    /* the 2025-11-25 session the elicitation went to (its nonce, hex; "" = none): told
     * notifications/elicitation/complete once the grant is stored; the configured
     * token_endpoint_auth_method of the downstream's exchange ("" = the client's choice) */
    char session[33], auth_method[24];
} gg_oauth_consent;
/* A new consent (random elicitation id, a fresh PKCE verifier; its S256 challenge into
 * challenge); false when a name is empty or too long. */
bool gg_oauth_consent_new(gg_oauth_consent *c, const char *tenant, const char *principal, const char *server,
                          long long expires_ms, char challenge[GG_OAUTH_PKCE_CHALLENGE_LEN + 1]);
/* The sealed state (base64url, malloc'd), or NULL (out of memory, or longer than
 * GG_OAUTH_CONSENT_STATE_MAX). */
char *gg_oauth_consent_seal(const unsigned char key[GG_OAUTH_CONSENT_KEY_BYTES], const gg_oauth_consent *c);
/* Open a state: false + err "invalid_consent" when it is not one sealed under key (forged,
 * changed, truncated) or expired at now_ms; no part of a refused state is kept. */
bool gg_oauth_consent_open(const unsigned char key[GG_OAUTH_CONSENT_KEY_BYTES], const char *state, long long now_ms,
                           gg_oauth_consent *out, gg_error *err);
/* The authorization request (RFC 6749 4.1.1, PKCE S256, RFC 8707 resource; scope and
 * resource left out when NULL; prompt=consent with offline_access), malloc'd; NULL when a
 * required part is missing. */
char *gg_oauth_consent_url(const char *authorization_endpoint, const char *client_id, const char *redirect_uri,
                           const char *scope, const char *resource, const char *challenge, const char *state);
/* The data of a URLElicitationRequiredError (-32042, MCP 2025-11-25): {elicitations: [{mode:
 * "url", elicitationId, url, message}]} (new reference). */
json_t *gg_oauth_consent_elicitation(const char *url, const char *elicitation_id, const char *server);

/* ---- a per-user client (auth.per_user: true, type oauth; oauth_client.c) ----------------
 * Holds one principal's grant: seeded from the store (gg_oauth_client_seed: the grant as
 * gg_oauth_client_grant wrote it), refreshed on a 401 or near its expiry (the new grant
 * handed to store.saved), never obtained here: with no token, or when the refresh fails
 * (revoked), store.dropped is called and the challenge fails with code
 * "url_elicitation_required" (the call asks the user's consent, src/gateway/consent.c). */
typedef struct gg_oauth_client_store {
    /* the stored grant now (malloc'd, *len bytes; NULL: none), read first on every 401: the
     * user may have consented, or another replica refreshed it, since this client started */
    char *(*load)(void *user, size_t *len);
    void (*saved)(void *user, const char *grant, long long expires_ms); /* helper thread */
    void (*dropped)(void *user);
    void *user;
} gg_oauth_client_store;
void gg_oauth_client_set_store(gg_oauth_client *c, const gg_oauth_client_store *store);
bool gg_oauth_client_seed(gg_oauth_client *c, const char *grant, size_t len);
/* The grant (JSON text: tokens, expiry, and the token endpoint, issuer, resource and client a
 * refresh needs; malloc'd, wipe before freeing), or NULL when the client holds no token. */
char *gg_oauth_client_grant(gg_oauth_client *c);
/* Consent, blocking (a helper thread; c new, nothing resolved on it yet): discovery of c's
 * server, a client registered for redirect_uri when none is configured, the exchange's
 * fields of cs filled, the authorization endpoint and scope to ask into authz and scope. */
bool gg_oauth_client_consent_prepare(gg_oauth_client *c, const char *redirect_uri, gg_oauth_consent *cs, char *authz,
                                     size_t authz_cap, char *scope, size_t scope_cap, gg_error *err);
/* The code's exchange (PKCE verifier and exchange fields from cs; iss: the response's, NULL
 * when absent); c then holds the tokens (gg_oauth_client_grant). */
bool gg_oauth_client_consent_exchange(gg_oauth_client *c, const gg_oauth_consent *cs, const char *code, const char *iss,
                                      const char *redirect_uri, gg_error *err);

#endif
