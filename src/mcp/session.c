/* session.c — Mcp-Session-Id tokens and the little state a session has.
 *
 * A token is base64url(payload || mac): payload = format byte, expiry (unix seconds,
 * big endian), a random 16-byte nonce and the negotiated protocol version; the MAC
 * (crypto_auth, HMAC-SHA512-256) covers the payload and the tenant, graph and key id the
 * session belongs to, so a token checked on another endpoint or with another key fails
 * exactly like a forged one. Any replica holding the secret validates tokens alone.
 *
 * The in-memory table keyed by nonce holds what cannot live in the token: revocation (until
 * the token would have expired anyway), the logging/setLevel level, and the calls in
 * flight that notifications/cancelled may stop. It is bounded; expired entries are swept.
 */
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp/mcp.h"

#define TOKEN_FORMAT 1
#define VERSION_LEN 10 /* "YYYY-MM-DD" */
#define PAYLOAD_LEN (1 + 8 + 16 + VERSION_LEN)
#define TABLE_BUCKETS 1024
#define SHARDS 16 /* a mutex per shard: sessions rarely contend with each other */

typedef struct inflight {
    json_t *id; /* reference */
    volatile int *flag;
    struct inflight *next;
} inflight;

typedef struct entry {
    uint8_t nonce[16];
    int64_t expires;
    bool revoked;
    mcp_log_level level;
    inflight *calls;
    struct entry *next;
} entry;

struct mcp_sessions {
    uint8_t key[crypto_auth_KEYBYTES];
    int64_t ttl;
    size_t max_entries; /* per shard: max_entries / SHARDS */
    struct shard {
        pthread_mutex_t mu;
        size_t count;
        entry *buckets[TABLE_BUCKETS / SHARDS];
    } shards[SHARDS];
};

static int64_t now_s(void) { return (int64_t)time(NULL); }

/* Create the session authority. secret may be NULL: a random key is drawn. */
mcp_sessions *mcp_sessions_new(const uint8_t *secret, int64_t ttl_seconds, size_t max_entries) {
    if (sodium_init() < 0) return NULL;
    mcp_sessions *ss = calloc(1, sizeof *ss);
    if (!ss) return NULL;
    if (secret) memcpy(ss->key, secret, sizeof ss->key);
    else crypto_auth_keygen(ss->key);
    ss->ttl = ttl_seconds > 0 ? ttl_seconds : 24 * 3600;
    size_t max = max_entries ? max_entries : 100000;
    ss->max_entries = max / SHARDS ? max / SHARDS : 1;
    for (int i = 0; i < SHARDS; i++) pthread_mutex_init(&ss->shards[i].mu, NULL);
    return ss;
}

static void free_entry(entry *e) {
    for (inflight *c = e->calls, *n; c; c = n) {
        n = c->next;
        json_decref(c->id);
        free(c);
    }
    free(e);
}

/* Free the table and wipe the key. */
void mcp_sessions_free(mcp_sessions *ss) {
    if (!ss) return;
    for (int sh = 0; sh < SHARDS; sh++) {
        for (size_t i = 0; i < TABLE_BUCKETS / SHARDS; i++)
            for (entry *e = ss->shards[sh].buckets[i], *n; e; e = n) {
                n = e->next;
                free_entry(e);
            }
        pthread_mutex_destroy(&ss->shards[sh].mu);
    }
    sodium_memzero(ss->key, sizeof ss->key);
    free(ss);
}

static void compute_mac(const mcp_sessions *ss, const uint8_t *payload, const char *tenant,
                        const char *graph, const char *key_id, uint8_t mac[crypto_auth_BYTES]) {
    crypto_auth_hmacsha512256_state st;
    crypto_auth_hmacsha512256_init(&st, ss->key, sizeof ss->key);
    crypto_auth_hmacsha512256_update(&st, payload, PAYLOAD_LEN);
    const char *parts[3] = {tenant ? tenant : "", graph ? graph : "", key_id ? key_id : ""};
    for (int i = 0; i < 3; i++) /* NUL-separated so ("ab","c") and ("a","bc") differ */
        crypto_auth_hmacsha512256_update(&st, (const uint8_t *)parts[i], strlen(parts[i]) + 1);
    crypto_auth_hmacsha512256_final(&st, mac);
}

static void put_be64(uint8_t *p, int64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)(v & 0xff);
}

static int64_t get_be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}

/* Issue a session token (written to id, at least MCP_SESSION_ID_MAX bytes). */
bool mcp_session_issue(mcp_sessions *ss, const char *tenant, const char *graph,
                       const char *key_id, const char *version, char *id, mcp_session *out) {
    if (!version || strlen(version) != VERSION_LEN) return false;
    uint8_t buf[PAYLOAD_LEN + crypto_auth_BYTES];
    int64_t expires = now_s() + ss->ttl;
    buf[0] = TOKEN_FORMAT;
    put_be64(buf + 1, expires);
    randombytes_buf(buf + 9, 16);
    memcpy(buf + 25, version, VERSION_LEN);
    compute_mac(ss, buf, tenant, graph, key_id, buf + PAYLOAD_LEN);
    sodium_bin2base64(id, MCP_SESSION_ID_MAX, buf, sizeof buf, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    if (out) {
        memset(out, 0, sizeof *out);
        snprintf(out->tenant, sizeof out->tenant, "%s", tenant ? tenant : "");
        snprintf(out->graph, sizeof out->graph, "%s", graph ? graph : "");
        snprintf(out->key_id, sizeof out->key_id, "%s", key_id ? key_id : "");
        memcpy(out->version, version, VERSION_LEN);
        out->expires = expires;
        out->level = MCP_LOG_OFF;
        memcpy(out->nonce, buf + 9, 16);
    }
    return true;
}

/* The nonce is random: its bytes are the hash (shard from one byte, bucket from others). */
static struct shard *shard_of(mcp_sessions *ss, const uint8_t nonce[16]) { return &ss->shards[nonce[15] % SHARDS]; }

static size_t bucket_of(const uint8_t nonce[16]) {
    size_t h;
    memcpy(&h, nonce, sizeof h);
    return h % (TABLE_BUCKETS / SHARDS);
}

/* Caller holds the shard's mu. */
static entry *find_entry(struct shard *sh, const uint8_t nonce[16]) {
    for (entry *e = sh->buckets[bucket_of(nonce)]; e; e = e->next)
        if (memcmp(e->nonce, nonce, 16) == 0) return e;
    return NULL;
}

/* Caller holds mu. Drops entries whose token has expired and that run nothing. */
static void sweep(struct shard *sh) {
    int64_t now = now_s();
    for (size_t i = 0; i < TABLE_BUCKETS / SHARDS; i++)
        for (entry **pp = &sh->buckets[i]; *pp;) {
            entry *e = *pp;
            if (e->expires < now && !e->calls) {
                *pp = e->next;
                free_entry(e);
                sh->count--;
            } else pp = &e->next;
        }
}

/* Caller holds mu. Frees one entry that only remembers a log level (not a revocation, no
 * calls) to make room; false when there is none. */
static bool evict_one(struct shard *sh) {
    for (size_t i = 0; i < TABLE_BUCKETS / SHARDS; i++)
        for (entry **pp = &sh->buckets[i]; *pp; pp = &(*pp)->next)
            if (!(*pp)->revoked && !(*pp)->calls) {
                entry *e = *pp;
                *pp = e->next;
                free_entry(e);
                sh->count--;
                return true;
            }
    return false;
}

/* Caller holds mu. NULL when the shard is full of revocations and running calls. */
static entry *get_or_add(mcp_sessions *ss, struct shard *sh, const mcp_session *s) {
    entry *e = find_entry(sh, s->nonce);
    if (e) return e;
    if (sh->count >= ss->max_entries) sweep(sh);
    if (sh->count >= ss->max_entries && !evict_one(sh)) return NULL;
    if (!(e = calloc(1, sizeof *e))) return NULL;
    memcpy(e->nonce, s->nonce, 16);
    e->expires = s->expires;
    e->level = MCP_LOG_OFF;
    size_t b = bucket_of(s->nonce);
    e->next = sh->buckets[b];
    sh->buckets[b] = e;
    sh->count++;
    return e;
}

/* Validate a token for this endpoint; every failure is "not_found" (HTTP 404). */
bool mcp_session_check(mcp_sessions *ss, const char *id, const char *tenant, const char *graph,
                       const char *key_id, mcp_session *out, gg_error *err) {
    uint8_t buf[PAYLOAD_LEN + crypto_auth_BYTES + 4];
    size_t len = 0;
    uint8_t mac[crypto_auth_BYTES];
    if (!id || strlen(id) >= MCP_SESSION_ID_MAX ||
        sodium_base642bin(buf, sizeof buf, id, strlen(id), NULL, &len, NULL,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        len != PAYLOAD_LEN + crypto_auth_BYTES || buf[0] != TOKEN_FORMAT)
        goto bad;
    compute_mac(ss, buf, tenant, graph, key_id, mac);
    if (sodium_memcmp(mac, buf + PAYLOAD_LEN, sizeof mac) != 0) goto bad;
    int64_t expires = get_be64(buf + 1);
    if (expires < now_s()) goto bad;
    mcp_session s = {0};
    snprintf(s.tenant, sizeof s.tenant, "%s", tenant ? tenant : "");
    snprintf(s.graph, sizeof s.graph, "%s", graph ? graph : "");
    snprintf(s.key_id, sizeof s.key_id, "%s", key_id ? key_id : "");
    memcpy(s.version, buf + 25, VERSION_LEN);
    s.expires = expires;
    memcpy(s.nonce, buf + 9, 16);
    struct shard *sh = shard_of(ss, s.nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = find_entry(sh, s.nonce);
    bool revoked = e && e->revoked;
    s.level = e ? e->level : MCP_LOG_OFF;
    pthread_mutex_unlock(&sh->mu);
    if (revoked) goto bad;
    if (!mcp_version_supported(s.version)) goto bad;
    if (out) *out = s;
    return true;
bad:
    gg_error_set(err, "not_found", "Session not found");
    return false;
}

/* End a session: its token is refused from now on (until it would have expired). */
void mcp_session_revoke(mcp_sessions *ss, const mcp_session *s) {
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = get_or_add(ss, sh, s);
    if (e) {
        e->revoked = true;
        for (inflight *c = e->calls; c; c = c->next) *c->flag = 1; /* the session's runs stop */
    }
    pthread_mutex_unlock(&sh->mu);
}

/* The session's logging/setLevel level; MCP_LOG_OFF until the client sets one. */
mcp_log_level mcp_session_log_level(mcp_sessions *ss, const mcp_session *s) {
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = find_entry(sh, s->nonce);
    mcp_log_level l = e ? e->level : MCP_LOG_OFF;
    pthread_mutex_unlock(&sh->mu);
    return l;
}

/* Remember logging/setLevel for the session. */
void mcp_session_set_log_level(mcp_sessions *ss, const mcp_session *s, mcp_log_level l) {
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = get_or_add(ss, sh, s);
    if (e) e->level = l;
    pthread_mutex_unlock(&sh->mu);
}

/* Request ids compare with their type: 1 and "1" are different requests. */
static bool same_id(json_t *a, json_t *b) {
    if (json_is_string(a) && json_is_string(b)) return strcmp(json_string_value(a), json_string_value(b)) == 0;
    if (json_is_integer(a) && json_is_integer(b)) return json_integer_value(a) == json_integer_value(b);
    return json_is_real(a) && json_is_real(b) && json_real_value(a) == json_real_value(b);
}

/* Remember a running call so notifications/cancelled can set its flag. */
void mcp_session_track_call(mcp_sessions *ss, const mcp_session *s, json_t *request_id,
                            volatile int *cancel_flag) {
    inflight *c = calloc(1, sizeof *c);
    if (!c) return; /* the call still runs; it just cannot be cancelled */
    c->id = json_incref(request_id);
    c->flag = cancel_flag;
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = get_or_add(ss, sh, s);
    if (e) {
        c->next = e->calls;
        e->calls = c;
        c = NULL;
    }
    pthread_mutex_unlock(&sh->mu);
    if (c) {
        json_decref(c->id);
        free(c);
    }
}

/* Forget a call that finished. */
void mcp_session_untrack_call(mcp_sessions *ss, const mcp_session *s, json_t *request_id) {
    inflight *gone = NULL;
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = find_entry(sh, s->nonce);
    for (inflight **pp = e ? &e->calls : NULL; pp && *pp; pp = &(*pp)->next)
        if (same_id((*pp)->id, request_id)) {
            gone = *pp;
            *pp = gone->next;
            break;
        }
    pthread_mutex_unlock(&sh->mu);
    if (gone) {
        json_decref(gone->id);
        free(gone);
    }
}

/* Set the cancel flag of a call in flight; false when no such call runs (ignored). */
bool mcp_session_cancel_call(mcp_sessions *ss, const mcp_session *s, json_t *request_id) {
    bool found = false;
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = find_entry(sh, s->nonce);
    for (inflight *c = e ? e->calls : NULL; c; c = c->next)
        if (same_id(c->id, request_id)) {
            __atomic_store_n(c->flag, 1, __ATOMIC_RELAXED);
            found = true;
        }
    pthread_mutex_unlock(&sh->mu);
    return found;
}
