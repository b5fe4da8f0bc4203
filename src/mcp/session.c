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
 *
 * Every request of a session presents the same token, and decoding it plus the HMAC cost
 * about 1.7 us, so tokens that verified are remembered in a bounded set-associative cache
 * (the "verified cache") keyed by the exact token text: a hit needs the same text (compared
 * in constant time), the same tenant, graph and key id the MAC was checked for, and a token
 * expiry still in the future (the expiry is the token's own, so a cached entry never
 * outlives it). The cache is split per CPU, so concurrent requests of one session do not
 * contend. What the nonce table says (not revoked, log level) is cached too, stamped with
 * the table's epoch, which every revocation, level change and eviction bumps after making
 * it: a hit with the current stamp needs no table lookup, any other re-reads the table, so
 * a DELETE takes effect on the very next request. The HMAC key's inner and outer pad states
 * are computed once, so a miss costs two SHA-512 blocks fewer.
 *
 * Per-owner bound (mcp_sessions_set_owner_max): the sessions this process issued are listed
 * per owner (the endpoint's tenant, or "key:<id>" on a mount, none on the internal
 * listener) in issue order, which is expiry order (one TTL for all). An owner holds at most
 * max live sessions, and at most OWNER_REVOKED_FACTOR x max deleted ones whose tokens have
 * not expired yet (their revocations must be remembered until then); past either, a new
 * session is refused, so one tenant can neither hold every session nor fill the table with
 * revocations that other tenants' DELETEs then find no room for.
 *
 * Stale sessions (mcp_sessions_set_idle): clients that never DELETE must not hold the bound
 * until their tokens expire. Each owner's live sessions that nothing holds (no GET stream,
 * no call in flight: mcp_session_busy) form an LRU list; a request moves its session to the
 * front (O(1), at most once per second per CPU: the verified cache remembers the second it
 * last touched), the tail is forgotten when idle too long or, at the bound, to admit a new
 * session. A forgotten session needs no revocation entry: sessions issued for an owner carry
 * this process's random mark in their nonce, and one so marked that the index lacks is
 * refused (another replica's sessions are not marked with it and pass as before). Eviction
 * bumps the epoch, so cached confirmations are re-checked.
 */
#include <pthread.h>
#include <sched.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp/mcp.h"

#define TOKEN_FORMAT 1
#define VERSION_LEN 10 /* "YYYY-MM-DD" */
#define PAYLOAD_LEN (1 + 8 + 16 + VERSION_LEN)
#define TABLE_BUCKETS 1024
#define SHARDS 16 /* a mutex per shard: sessions rarely contend with each other */
/* A token is always base64url (no padding) of PAYLOAD_LEN + MAC bytes. */
#define TOKEN_BYTES (PAYLOAD_LEN + crypto_auth_BYTES)
#define TOKEN_TEXT_LEN ((TOKEN_BYTES / 3) * 4 + (TOKEN_BYTES % 3 ? TOKEN_BYTES % 3 + 1 : 0))
#define VC_SHARDS 8   /* verified cache: one shard per CPU (sched_getcpu), each with */
#define VC_SETS 64    /* sets x ways entries (8 x 256 entries, about 700 KiB in all) */
#define VC_WAYS 4
#define BIND_MAX 64   /* tenant, graph, key id as in mcp_session */

#define OWNER_BUCKETS 64
#define OWNER_REVOKED_FACTOR 4
#define OWNER_MAX (BIND_MAX + 4) /* "key:" + a key id */

/* Nonce bytes 8..13 of a session issued for an owner are the issuing process's random mark
 * (the rest stays random; the hashes here and in streams.c read bytes 0..7 and 15), so this
 * process can tell a session it forgot (evicted, idle) from another replica's. */
#define ISSUER_AT 8
#define ISSUER_LEN 6

/* One session issued here: in the index by nonce, in its owner's issue list (all of them,
 * oldest first: expiry order) and, while live and held by nothing, in its LRU list. */
typedef struct osess {
    uint8_t nonce[16];
    int64_t expires, last_used;
    int busy; /* GET streams open and calls in flight (mcp_session_busy) */
    bool revoked, in_lru;
    struct owner *owner;
    struct osess *hnext, *iprev, *inext, *lprev, *lnext;
} osess;

/* An owner's sessions. */
typedef struct owner {
    char name[OWNER_MAX];
    osess *ihead, *itail; /* issue order, oldest first */
    osess *lhead, *ltail; /* live and not held: most recently used first */
    size_t live, revoked;
    struct owner *next;
} owner;

typedef struct inflight {
    json_t *id; /* reference */
    atomic_int *flag;
    struct inflight *next;
} inflight;

typedef struct entry {
    uint8_t nonce[16];
    int64_t expires;
    bool revoked;
    mcp_log_level level;
    inflight *calls;
    json_t *subs; /* resources/subscribe URIs (array of strings, at most MAX_SUBS) or NULL */
    int client_caps;        /* MCP_CLIENT_CAPS_* from initialize; 0 = unknown */
    struct creq_slot *reqs; /* requests sent to the client, waiting for its answer */
    int nreqs;
    struct entry *next;
} entry;

typedef struct creq_slot {
    char id[64];
    void (*deliver)(void *u, json_t *result, json_t *error);
    void (*release)(void *u);
    void *u;
    struct creq_slot *next;
} creq_slot;

#define MAX_CLIENT_REQUESTS 16 /* per session */

#define MAX_SUBS 64 /* per session: a client cannot grow a session without bound */

/* One verified token: what its MAC was checked for and what it says. */
typedef struct vc_entry {
    uint64_t hash;               /* siphash of the text under vc_key; 0 = empty slot */
    char token[TOKEN_TEXT_LEN];  /* exact text, not NUL-terminated */
    char tenant[BIND_MAX], graph[BIND_MAX], key_id[BIND_MAX];
    char version[VERSION_LEN + 1];
    int64_t expires;
    uint8_t nonce[16];
    uint32_t age;                /* insertion stamp: the oldest way is replaced */
    uint64_t epoch;              /* state epoch at which "not revoked, this level" held */
    int64_t touched;             /* second of the last owner_touch through this entry */
    mcp_log_level level;
} vc_entry;

/* A CPU's part of the verified cache: its own lock and counters, so requests on different
 * CPUs never write the same cache lines (one session used by many connections at once is
 * the common case, and the benchmark's). */
typedef struct vc_shard {
    pthread_mutex_t mu;
    uint32_t clock;                /* insertion stamps */
    unsigned long hits, misses;    /* for tests and curiosity */
    vc_entry e[VC_SETS][VC_WAYS];
    char pad[64];                  /* keep the next shard's lock off this shard's lines */
} vc_shard;

struct mcp_sessions {
    uint8_t key[crypto_auth_KEYBYTES];
    crypto_auth_hmacsha512256_state mac0; /* HMAC state after absorbing the key */
    int64_t ttl;
    size_t max_entries; /* per shard: max_entries / SHARDS */
    struct shard {
        pthread_mutex_t mu;
        size_t count;
        entry *buckets[TABLE_BUCKETS / SHARDS];
    } shards[SHARDS];
    uint8_t vc_key[crypto_shorthash_KEYBYTES]; /* random: set choice is not predictable */
    /* Bumped after every change of what a check reads from the nonce table (revocation,
     * log level, eviction): a cached entry stamped with the current epoch needs no table
     * lookup; any other entry is re-checked against the table (and re-stamped). */
    _Atomic uint64_t epoch;
    pthread_mutex_t omu;            /* guards the owner lists */
    size_t owner_max;               /* live sessions per owner; 0 = no bound */
    owner *owners[OWNER_BUCKETS];
    osess **idx;                    /* every owner's sessions by nonce (idx_cap a power of 2) */
    size_t idx_cap, idx_n;
    uint8_t issuer[ISSUER_LEN];     /* this process's mark in its sessions' nonces */
    int64_t idle_s;                 /* mcp_sessions_set_idle: 0 = sessions are never idle */
    bool evict;                     /* at the bound, forget the LRU idle session */
    atomic_bool track;              /* either: requests touch the owner's LRU list */
    unsigned long long owner_refused, evicted, idle_expired;
    vc_shard vc[VC_SHARDS];
};

static int64_t now_s(void) { return (int64_t)time(NULL); }

/* Create the session authority. secret may be NULL: a random key is drawn. */
mcp_sessions *mcp_sessions_new(const uint8_t *secret, int64_t ttl_seconds, size_t max_entries) {
    if (sodium_init() < 0) return NULL;
    mcp_sessions *ss = calloc(1, sizeof *ss);
    if (!ss) return NULL;
    if (secret) memcpy(ss->key, secret, sizeof ss->key);
    else crypto_auth_keygen(ss->key);
    crypto_auth_hmacsha512256_init(&ss->mac0, ss->key, sizeof ss->key);
    crypto_shorthash_keygen(ss->vc_key);
    for (int i = 0; i < VC_SHARDS; i++) pthread_mutex_init(&ss->vc[i].mu, NULL);
    atomic_init(&ss->epoch, 1);
    ss->ttl = ttl_seconds > 0 ? ttl_seconds : 24 * 3600;
    size_t max = max_entries ? max_entries : 100000;
    ss->max_entries = max / SHARDS ? max / SHARDS : 1;
    for (int i = 0; i < SHARDS; i++) pthread_mutex_init(&ss->shards[i].mu, NULL);
    pthread_mutex_init(&ss->omu, NULL);
    randombytes_buf(ss->issuer, sizeof ss->issuer);
    atomic_init(&ss->track, false);
    return ss;
}

static void free_entry(entry *e) {
    for (inflight *c = e->calls, *n; c; c = n) {
        n = c->next;
        json_decref(c->id);
        free(c);
    }
    json_decref(e->subs);
    for (creq_slot *q = e->reqs, *n; q; q = n) { /* their own deadline finishes them */
        n = q->next;
        q->release(q->u);
        free(q);
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
    for (int i = 0; i < VC_SHARDS; i++) pthread_mutex_destroy(&ss->vc[i].mu);
    for (int b = 0; b < OWNER_BUCKETS; b++)
        for (owner *o = ss->owners[b], *n; o; o = n) {
            n = o->next;
            free(o);
        }
    for (size_t i = 0; i < ss->idx_cap; i++)
        for (osess *r = ss->idx[i], *n; r; r = n) {
            n = r->hnext;
            free(r);
        }
    free(ss->idx);
    pthread_mutex_destroy(&ss->omu);
    sodium_memzero(ss->key, sizeof ss->key);
    sodium_memzero(&ss->mac0, sizeof ss->mac0);
    sodium_memzero(ss->vc, sizeof ss->vc);
    free(ss);
}

static void compute_mac(const mcp_sessions *ss, const uint8_t *payload, const char *tenant,
                        const char *graph, const char *key_id, uint8_t mac[crypto_auth_BYTES]) {
    crypto_auth_hmacsha512256_state st = ss->mac0; /* == init(key), two blocks cheaper */
    crypto_auth_hmacsha512256_update(&st, payload, PAYLOAD_LEN);
    const char *parts[3] = {tenant ? tenant : "", graph ? graph : "", key_id ? key_id : ""};
    for (int i = 0; i < 3; i++) /* NUL-separated so ("ab","c") and ("a","bc") differ */
        crypto_auth_hmacsha512256_update(&st, (const uint8_t *)parts[i], strlen(parts[i]) + 1);
    crypto_auth_hmacsha512256_final(&st, mac);
    sodium_memzero(&st, sizeof st);
}

static void put_be64(uint8_t *p, int64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)(v & 0xff);
}

static int64_t get_be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}

/* ---- the verified cache ------------------------------------------------------------------ */

/* Cache only what fits: longer bindings (never valid names) always take the full path. */
static bool vc_bindable(const char *tenant, const char *graph, const char *key_id) {
    return (!tenant || strnlen(tenant, BIND_MAX) < BIND_MAX) && (!graph || strnlen(graph, BIND_MAX) < BIND_MAX) &&
           (!key_id || strnlen(key_id, BIND_MAX) < BIND_MAX);
}

static bool same_field(const char *field, const char *s) { return strcmp(field, s ? s : "") == 0; }

/* The set index: a keyed hash of the token's last 24 characters (MAC bytes, random in a
 * genuine token; the key keeps anyone from aiming tokens at one set). Equality is decided
 * by token_eq over the whole text, never by this hash. */
static uint64_t vc_hash(const mcp_sessions *ss, const char *token) {
    uint64_t h;
    crypto_shorthash((unsigned char *)&h, (const unsigned char *)token + TOKEN_TEXT_LEN - 24, 24, ss->vc_key);
    return h ? h : 1; /* 0 marks an empty slot */
}

/* Constant-time equality of two token texts: libsodium's fixed-size verifiers over the
 * first 64 and the last 32 characters (overlapping; both always run). ~7 ns where
 * sodium_memcmp over 90 bytes takes ~60. */
_Static_assert(TOKEN_TEXT_LEN > 64 && TOKEN_TEXT_LEN <= 96, "token_eq covers the text with 64 + 32 bytes");
static bool token_eq(const char *a, const char *b) {
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    int d = crypto_verify_64(x, y) | crypto_verify_32(x + TOKEN_TEXT_LEN - 32, y + TOKEN_TEXT_LEN - 32);
    return d == 0;
}

/* The calling CPU's shard (any shard is correct; this one is just not shared). */
static vc_shard *vc_here(mcp_sessions *ss) {
    int cpu = sched_getcpu();
    return &ss->vc[cpu > 0 ? (unsigned)cpu % VC_SHARDS : 0];
}

static void bump_epoch(mcp_sessions *ss) { atomic_fetch_add_explicit(&ss->epoch, 1, memory_order_release); }

/* A verified entry for exactly this token text and binding whose token has not expired:
 * fills the token's part of *out (version, expiry, nonce, cached level) and says whether
 * the entry is stamped with epoch, and (*fresh) whether a request through it touched the
 * session's owner list this second already (then this one need not: at most one touch
 * per session, CPU and second). The token text is compared in constant time. */
static bool vc_lookup(mcp_sessions *ss, const char *token, uint64_t h, const char *tenant, const char *graph,
                      const char *key_id, int64_t now, uint64_t epoch, mcp_session *out, bool *current,
                      bool *fresh) {
    vc_shard *sh = vc_here(ss);
    size_t set = (size_t)(h % VC_SETS);
    bool hit = false;
    pthread_mutex_lock(&sh->mu);
    for (int w = 0; w < VC_WAYS; w++) {
        vc_entry *e = &sh->e[set][w];
        if (e->hash != h || !token_eq(e->token, token)) continue;
        if (e->expires < now) { /* the token's own expiry: drop it, the full check refuses */
            sodium_memzero(e, sizeof *e);
            break;
        }
        if (same_field(e->tenant, tenant) && same_field(e->graph, graph) && same_field(e->key_id, key_id)) {
            memcpy(out->version, e->version, VERSION_LEN);
            out->expires = e->expires;
            memcpy(out->nonce, e->nonce, 16);
            out->level = e->level;
            *current = e->epoch == epoch;
            *fresh = e->touched == now;
            e->touched = now;
            hit = true;
        }
        break;
    }
    if (hit) sh->hits++;
    else sh->misses++;
    pthread_mutex_unlock(&sh->mu);
    return hit;
}

/* Remember a token whose MAC verified for this binding and that the nonce table showed
 * not revoked, with this level, at epoch (replacing the same token or the oldest way);
 * touched: the second its owner list was last touched through it (0: never). */
static void vc_insert(mcp_sessions *ss, const char *token, uint64_t h, const char *tenant, const char *graph,
                      const char *key_id, const mcp_session *s, uint64_t epoch, int64_t touched) {
    if (!vc_bindable(tenant, graph, key_id)) return;
    vc_entry n;
    memset(&n, 0, sizeof n);
    n.hash = h;
    memcpy(n.token, token, TOKEN_TEXT_LEN);
    gg_strcopy(n.tenant, sizeof n.tenant, tenant);
    gg_strcopy(n.graph, sizeof n.graph, graph);
    gg_strcopy(n.key_id, sizeof n.key_id, key_id);
    memcpy(n.version, s->version, VERSION_LEN);
    n.expires = s->expires;
    memcpy(n.nonce, s->nonce, 16);
    n.epoch = epoch;
    n.touched = touched;
    n.level = s->level;
    vc_shard *sh = vc_here(ss);
    size_t set = (size_t)(h % VC_SETS);
    pthread_mutex_lock(&sh->mu);
    int victim = 0;
    for (int w = 0; w < VC_WAYS; w++) {
        vc_entry *e = &sh->e[set][w];
        if (e->hash == h && token_eq(e->token, token)) { victim = w; break; }
        if (!e->hash) { victim = w; break; }
        if ((int32_t)(e->age - sh->e[set][victim].age) < 0) victim = w;
    }
    n.age = ++sh->clock;
    sh->e[set][victim] = n;
    pthread_mutex_unlock(&sh->mu);
    sodium_memzero(&n, sizeof n);
}

/* Drop this CPU's entry for the token: its owner list no longer holds the session (the
 * other CPUs' entries touch it, or are stale, before they answer again). */
static void vc_forget(mcp_sessions *ss, const char *token, uint64_t h) {
    vc_shard *sh = vc_here(ss);
    pthread_mutex_lock(&sh->mu);
    for (int w = 0; w < VC_WAYS; w++) {
        vc_entry *e = &sh->e[h % VC_SETS][w];
        if (e->hash == h && token_eq(e->token, token)) sodium_memzero(e, sizeof *e);
    }
    pthread_mutex_unlock(&sh->mu);
}

/* ---- sessions per owner ------------------------------------------------------------------ */

/* Whose bound a session counts in: the endpoint's tenant, else (a mount) the key's id as
 * "key:<id>"; false for neither (the internal listener: the operator's, unbounded). */
static bool owner_name(const char *tenant, const char *key_id, char out[OWNER_MAX]) {
    if (tenant && *tenant) gg_strcopy(out, OWNER_MAX, tenant);
    else if (key_id && *key_id) {
        memcpy(out, "key:", 4);
        gg_strcopy(out + 4, OWNER_MAX - 4, key_id);
    } else return false;
    return true;
}

static size_t owner_bucket(const char *name) {
    size_t h = 5381;
    for (; *name; name++) h = h * 33 + (unsigned char)*name;
    return h % OWNER_BUCKETS;
}

/* Caller holds omu. create: add the owner when missing (NULL on OOM). */
static owner *find_owner(mcp_sessions *ss, const char *name, bool create) {
    owner **pp = &ss->owners[owner_bucket(name)];
    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->name, name) == 0) return *pp;
    if (!create || !(*pp = calloc(1, sizeof **pp))) return NULL;
    gg_strcopy((*pp)->name, OWNER_MAX, name);
    return *pp;
}

/* A session this process issued for an owner: its nonce carries the process's mark. */
static bool issued_here(const mcp_sessions *ss, const uint8_t nonce[16]) {
    return memcmp(nonce + ISSUER_AT, ss->issuer, ISSUER_LEN) == 0;
}

/* The index by nonce (caller holds omu): the nonce's first bytes are random, so they are
 * the hash. */
static size_t idx_slot(const mcp_sessions *ss, const uint8_t nonce[16]) {
    size_t h;
    memcpy(&h, nonce, sizeof h);
    return h & (ss->idx_cap - 1);
}

static osess *idx_find(mcp_sessions *ss, const uint8_t nonce[16]) {
    if (!ss->idx_cap) return NULL;
    for (osess *r = ss->idx[idx_slot(ss, nonce)]; r; r = r->hnext)
        if (memcmp(r->nonce, nonce, 16) == 0) return r;
    return NULL;
}

/* Add r, doubling the buckets past one record per bucket (false on OOM). */
static bool idx_add(mcp_sessions *ss, osess *r) {
    if (ss->idx_n >= ss->idx_cap) {
        size_t cap = ss->idx_cap ? ss->idx_cap * 2 : 256;
        osess **nb = calloc(cap, sizeof *nb);
        if (!nb) return false;
        size_t old = ss->idx_cap;
        osess **ob = ss->idx;
        ss->idx = nb;
        ss->idx_cap = cap;
        for (size_t i = 0; i < old; i++)
            for (osess *x = ob[i], *n; x; x = n) {
                n = x->hnext;
                size_t b = idx_slot(ss, x->nonce);
                x->hnext = nb[b];
                nb[b] = x;
            }
        free(ob);
    }
    size_t b = idx_slot(ss, r->nonce);
    r->hnext = ss->idx[b];
    ss->idx[b] = r;
    ss->idx_n++;
    return true;
}

static void idx_del(mcp_sessions *ss, osess *r) {
    for (osess **pp = &ss->idx[idx_slot(ss, r->nonce)]; *pp; pp = &(*pp)->hnext)
        if (*pp == r) {
            *pp = r->hnext;
            ss->idx_n--;
            return;
        }
}

/* The LRU list holds the owner's live sessions that nothing holds, most recent first. */
static void lru_unlink(osess *r) {
    owner *o = r->owner;
    if (!r->in_lru) return;
    if (r->lprev) r->lprev->lnext = r->lnext;
    else o->lhead = r->lnext;
    if (r->lnext) r->lnext->lprev = r->lprev;
    else o->ltail = r->lprev;
    r->lprev = r->lnext = NULL;
    r->in_lru = false;
}

static void lru_push(osess *r) {
    owner *o = r->owner;
    r->lprev = NULL;
    r->lnext = o->lhead;
    if (o->lhead) o->lhead->lprev = r;
    else o->ltail = r;
    o->lhead = r;
    r->in_lru = true;
}

/* Forget a session: out of the index, the issue list and the LRU list, uncounted. */
static void osess_drop(mcp_sessions *ss, osess *r) {
    owner *o = r->owner;
    lru_unlink(r);
    if (r->iprev) r->iprev->inext = r->inext;
    else o->ihead = r->inext;
    if (r->inext) r->inext->iprev = r->iprev;
    else o->itail = r->iprev;
    if (r->revoked) o->revoked--;
    else o->live--;
    idx_del(ss, r);
    free(r);
}

/* Unused for longer than the idle time (whole seconds: at least idle_s, under idle_s + 1). */
static bool osess_idle(const mcp_sessions *ss, const osess *r, int64_t now) {
    return ss->idle_s > 0 && r->in_lru && now - r->last_used > ss->idle_s;
}

/* Caller holds omu. Forget the owner's sessions whose tokens expired (the issue list is in
 * expiry order: one TTL for all) and those idle too long (the LRU list's tail is the
 * longest unused): each step pops an end of a list, so this costs O(1) per session ever. */
static void owner_expire(mcp_sessions *ss, owner *o, int64_t now) {
    while (o->ihead && o->ihead->expires < now) osess_drop(ss, o->ihead);
    while (o->ltail && osess_idle(ss, o->ltail, now)) {
        osess_drop(ss, o->ltail);
        ss->idle_expired++;
    }
}

/* Caller holds omu. Room for one more session of o, else false (counted); *evicted when
 * the least recently used idle session was forgotten to make it. */
static bool owner_admit(mcp_sessions *ss, owner *o, const uint8_t nonce[16], int64_t expires, bool *evicted) {
    int64_t now = now_s();
    owner_expire(ss, o, now);
    bool full = ss->owner_max && o->live >= ss->owner_max;
    if (ss->owner_max && (o->revoked >= OWNER_REVOKED_FACTOR * ss->owner_max || (full && !(ss->evict && o->ltail)))) {
        ss->owner_refused++;
        return false;
    }
    osess *r = calloc(1, sizeof *r);
    if (r) memcpy(r->nonce, nonce, 16);
    if (!r || !idx_add(ss, r)) {
        free(r);
        return false;
    }
    if (full) { /* every client that never said goodbye must not lock the others out */
        osess_drop(ss, o->ltail);
        ss->evicted++;
        *evicted = true;
    }
    r->expires = expires;
    r->last_used = now;
    r->owner = o;
    r->iprev = o->itail;
    if (o->itail) o->itail->inext = r;
    else o->ihead = r;
    o->itail = r;
    lru_push(r);
    o->live++;
    return true;
}

/* At most max live sessions per owner from now on (0 = no bound). */
void mcp_sessions_set_owner_max(mcp_sessions *ss, size_t max) {
    pthread_mutex_lock(&ss->omu);
    ss->owner_max = max;
    pthread_mutex_unlock(&ss->omu);
}

/* See mcp.h. */
void mcp_sessions_set_idle(mcp_sessions *ss, int64_t idle_seconds, bool evict_lru) {
    pthread_mutex_lock(&ss->omu);
    ss->idle_s = idle_seconds > 0 ? idle_seconds : 0;
    ss->evict = evict_lru;
    atomic_store_explicit(&ss->track, ss->idle_s > 0 || evict_lru, memory_order_relaxed);
    pthread_mutex_unlock(&ss->omu);
}

void mcp_sessions_forgotten(mcp_sessions *ss, unsigned long long *evicted, unsigned long long *idle) {
    pthread_mutex_lock(&ss->omu);
    if (evicted) *evicted = ss->evicted;
    if (idle) *idle = ss->idle_expired;
    pthread_mutex_unlock(&ss->omu);
}

/* Live and deleted-but-unexpired sessions this process issued for tenant's endpoints. */
void mcp_sessions_owner_usage(mcp_sessions *ss, const char *tenant, size_t *live, size_t *revoked,
                              unsigned long long *refused_all) {
    pthread_mutex_lock(&ss->omu);
    owner *o = tenant && *tenant ? find_owner(ss, tenant, false) : NULL;
    if (o) owner_expire(ss, o, now_s());
    if (live) *live = o ? o->live : 0;
    if (revoked) *revoked = o ? o->revoked : 0;
    if (refused_all) *refused_all = ss->owner_refused;
    pthread_mutex_unlock(&ss->omu);
}

/* A deleted session stops counting as live and starts counting as revoked. */
static void owner_revoke(mcp_sessions *ss, const mcp_session *s) {
    pthread_mutex_lock(&ss->omu);
    osess *r = idx_find(ss, s->nonce);
    if (r && !r->revoked) {
        lru_unlink(r);
        r->revoked = true;
        r->owner->live--;
        r->owner->revoked++;
    }
    pthread_mutex_unlock(&ss->omu);
}

/* See mcp.h. A held session leaves the LRU list (neither idle nor evictable) and comes
 * back at its head, as just used, when the last holder lets go. */
void mcp_session_busy(mcp_sessions *ss, const uint8_t nonce[16], int delta) {
    if (!ss || !issued_here(ss, nonce)) return;
    pthread_mutex_lock(&ss->omu);
    osess *r = idx_find(ss, nonce);
    if (r && delta > 0) {
        r->busy++;
        lru_unlink(r);
    } else if (r && r->busy > 0) {
        r->last_used = now_s();
        if (--r->busy == 0 && !r->revoked) lru_push(r);
    }
    pthread_mutex_unlock(&ss->omu);
}

/* A request on the session (O(1)): it becomes the owner's most recently used. false when
 * this process issued it for an owner and no longer holds it (evicted at the bound, idle
 * too long, expired): the token is then refused like a deleted one. */
static bool owner_touch(mcp_sessions *ss, const mcp_session *s, int64_t now) {
    char name[OWNER_MAX];
    if (!atomic_load_explicit(&ss->track, memory_order_relaxed) || !issued_here(ss, s->nonce) ||
        !owner_name(s->tenant, s->key_id, name))
        return true; /* another replica's session, or the operator's: not counted here */
    pthread_mutex_lock(&ss->omu);
    osess *r = idx_find(ss, s->nonce);
    bool ok = r != NULL;
    if (r && osess_idle(ss, r, now)) {
        osess_drop(ss, r);
        ss->idle_expired++;
        ok = false;
    } else if (r && !r->revoked) { /* a revoked one: the nonce table refuses it */
        r->last_used = now;
        if (r->in_lru) {
            lru_unlink(r);
            lru_push(r);
        }
    }
    pthread_mutex_unlock(&ss->omu);
    return ok;
}

/* Issue a session token (written to id, at least MCP_SESSION_ID_MAX bytes); false when the
 * owner holds its bound of sessions (mcp_sessions_set_owner_max) or memory ran out. */
bool mcp_session_issue(mcp_sessions *ss, const char *tenant, const char *graph,
                       const char *key_id, const char *version, char *id, mcp_session *out) {
    if (!version || strlen(version) != VERSION_LEN) return false;
    uint8_t buf[PAYLOAD_LEN + crypto_auth_BYTES];
    int64_t expires = now_s() + ss->ttl;
    buf[0] = TOKEN_FORMAT;
    put_be64(buf + 1, expires);
    randombytes_buf(buf + 9, 16);
    char oname[OWNER_MAX];
    if (owner_name(tenant, key_id, oname)) {
        memcpy(buf + 9 + ISSUER_AT, ss->issuer, ISSUER_LEN);
        bool evicted = false;
        pthread_mutex_lock(&ss->omu);
        owner *o = find_owner(ss, oname, true);
        bool admitted = o && owner_admit(ss, o, buf + 9, expires, &evicted);
        pthread_mutex_unlock(&ss->omu);
        if (evicted) bump_epoch(ss); /* its cached confirmations must be checked again */
        if (!admitted) return false;
    }
    memcpy(buf + 25, version, VERSION_LEN);
    compute_mac(ss, buf, tenant, graph, key_id, buf + PAYLOAD_LEN);
    sodium_bin2base64(id, MCP_SESSION_ID_MAX, buf, sizeof buf, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    if (strlen(id) == TOKEN_TEXT_LEN) { /* a new nonce: not revoked, no level yet */
        mcp_session fresh;
        memset(&fresh, 0, sizeof fresh);
        memcpy(fresh.version, version, VERSION_LEN);
        fresh.expires = expires;
        memcpy(fresh.nonce, buf + 9, 16);
        fresh.level = MCP_LOG_OFF;
        vc_insert(ss, id, vc_hash(ss, id), tenant, graph, key_id, &fresh,
                  atomic_load_explicit(&ss->epoch, memory_order_acquire), 0); /* first use touches */
    }
    if (out) {
        memset(out, 0, sizeof *out);
        gg_strcopy(out->tenant, sizeof out->tenant, tenant);
        gg_strcopy(out->graph, sizeof out->graph, graph);
        gg_strcopy(out->key_id, sizeof out->key_id, key_id);
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
    if (sh->count >= ss->max_entries) {
        if (!evict_one(sh)) return NULL;
        bump_epoch(ss); /* a session's level went back to off */
    }
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
    size_t len = 0, idlen = id ? strnlen(id, MCP_SESSION_ID_MAX) : 0;
    uint8_t mac[crypto_auth_BYTES];
    int64_t now = now_s();
    mcp_session s;
    memset(&s, 0, sizeof s);
    bool cacheable = idlen == TOKEN_TEXT_LEN && vc_bindable(tenant, graph, key_id), current = false, fresh = false;
    /* read before the table: a change made after this read bumps past it */
    uint64_t epoch = atomic_load_explicit(&ss->epoch, memory_order_acquire);
    uint64_t h = cacheable ? vc_hash(ss, id) : 0;
    if (cacheable && vc_lookup(ss, id, h, tenant, graph, key_id, now, epoch, &s, &current, &fresh)) {
        if (current) { /* nothing in the nonce table changed since it was confirmed */
            gg_strcopy(s.tenant, sizeof s.tenant, tenant);
            gg_strcopy(s.graph, sizeof s.graph, graph);
            gg_strcopy(s.key_id, sizeof s.key_id, key_id);
            if (!fresh && !owner_touch(ss, &s, now)) {
                vc_forget(ss, id, h);
                goto bad;
            }
            if (out) *out = s;
            return true;
        }
    } else {
        if (!id || idlen >= MCP_SESSION_ID_MAX ||
            sodium_base642bin(buf, sizeof buf, id, idlen, NULL, &len, NULL,
                              sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
            len != PAYLOAD_LEN + crypto_auth_BYTES || buf[0] != TOKEN_FORMAT)
            goto bad;
        compute_mac(ss, buf, tenant, graph, key_id, mac);
        if (crypto_verify_32(mac, buf + PAYLOAD_LEN) != 0) goto bad;
        s.expires = get_be64(buf + 1);
        if (s.expires < now) goto bad;
        memcpy(s.version, buf + 25, VERSION_LEN);
        memcpy(s.nonce, buf + 9, 16);
    }
    gg_strcopy(s.tenant, sizeof s.tenant, tenant);
    gg_strcopy(s.graph, sizeof s.graph, graph);
    gg_strcopy(s.key_id, sizeof s.key_id, key_id);
    struct shard *sh = shard_of(ss, s.nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = find_entry(sh, s.nonce);
    bool revoked = e && e->revoked;
    s.level = e ? e->level : MCP_LOG_OFF;
    pthread_mutex_unlock(&sh->mu);
    if (revoked) goto bad;
    if (!mcp_version_supported(s.version)) goto bad;
    if (!owner_touch(ss, &s, now)) goto bad; /* evicted or idle: forgotten here */
    if (cacheable) vc_insert(ss, id, h, tenant, graph, key_id, &s, epoch, now); /* (re-)stamp */
    if (out) *out = s;
    return true;
bad:
    gg_error_set(err, "not_found", "Session not found");
    return false;
}

/* End a session: its token is refused from now on (until it would have expired). */
void mcp_session_revoke(mcp_sessions *ss, const mcp_session *s) {
    owner_revoke(ss, s);
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = get_or_add(ss, sh, s);
    if (e) {
        e->revoked = true;
        for (inflight *c = e->calls; c; c = c->next) *c->flag = 1; /* the session's runs stop */
    }
    pthread_mutex_unlock(&sh->mu);
    bump_epoch(ss); /* after the change: every cached confirmation is now stale */
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
    bump_epoch(ss);
}

/* resources/subscribe (on) or unsubscribe (!on) for the session. false when the session
 * already holds MAX_SUBS subscriptions (or memory ran out). */
bool mcp_session_subscribe(mcp_sessions *ss, const mcp_session *s, const char *uri, bool on) {
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = get_or_add(ss, sh, s);
    bool ok = e != NULL;
    size_t i, found = (size_t)-1;
    json_t *u;
    if (e) json_array_foreach(e->subs, i, u) if (!strcmp(json_string_value(u), uri)) found = i;
    if (e && !on && found != (size_t)-1) json_array_remove(e->subs, found);
    if (e && on && found == (size_t)-1) {
        if (!e->subs) e->subs = json_array();
        ok = json_array_size(e->subs) < MAX_SUBS && json_array_append_new(e->subs, json_string(uri)) == 0;
    }
    pthread_mutex_unlock(&sh->mu);
    return ok;
}

/* Remove the slot with this id from the session's list (under the shard lock); NULL if none. */
static creq_slot *take_request(entry *e, const char *id) {
    for (creq_slot **pp = e ? &e->reqs : NULL; pp && *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->id, id)) {
            creq_slot *q = *pp;
            *pp = q->next;
            e->nreqs--;
            return q;
        }
    return NULL;
}

/* What the client declared at initialize (MCP_CLIENT_CAPS_*), remembered for the session. */
void mcp_session_set_client_caps(mcp_sessions *ss, const mcp_session *s, int caps) {
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = get_or_add(ss, sh, s);
    if (e) e->client_caps = caps;
    pthread_mutex_unlock(&sh->mu);
}

int mcp_session_client_caps(mcp_sessions *ss, const mcp_session *s) {
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = find_entry(sh, s->nonce);
    int caps = e ? e->client_caps : 0;
    pthread_mutex_unlock(&sh->mu);
    return caps;
}

bool mcp_session_track_request(mcp_sessions *ss, const mcp_session *s, const char *id,
                               void (*deliver)(void *u, json_t *result, json_t *error), void (*release)(void *u),
                               void *u) {
    creq_slot *q = calloc(1, sizeof *q);
    if (!q || strlen(id) >= sizeof q->id) {
        free(q);
        return false;
    }
    snprintf(q->id, sizeof q->id, "%s", id);
    q->deliver = deliver;
    q->release = release;
    q->u = u;
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = get_or_add(ss, sh, s);
    bool ok = e && e->nreqs < MAX_CLIENT_REQUESTS;
    if (ok) {
        q->next = e->reqs;
        e->reqs = q;
        e->nreqs++;
    }
    pthread_mutex_unlock(&sh->mu);
    if (!ok) free(q);
    return ok;
}

void mcp_session_untrack_request(mcp_sessions *ss, const mcp_session *s, const char *id) {
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    creq_slot *q = take_request(find_entry(sh, s->nonce), id);
    pthread_mutex_unlock(&sh->mu);
    if (q) q->release(q->u);
    free(q);
}

bool mcp_session_deliver(mcp_sessions *ss, const mcp_session *s, json_t *id, json_t *result, json_t *error) {
    if (!json_is_string(id)) return false; /* this server's ids are strings */
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    creq_slot *q = take_request(find_entry(sh, s->nonce), json_string_value(id));
    pthread_mutex_unlock(&sh->mu);
    if (!q) return false;
    q->deliver(q->u, result, error);
    q->release(q->u);
    free(q);
    return true;
}

/* The session's subscribed URIs (new array; empty when none). */
json_t *mcp_session_subscriptions(mcp_sessions *ss, const mcp_session *s) {
    struct shard *sh = shard_of(ss, s->nonce);
    pthread_mutex_lock(&sh->mu);
    entry *e = find_entry(sh, s->nonce);
    json_t *out = e && e->subs ? gg_json_clone(e->subs) : json_array();
    pthread_mutex_unlock(&sh->mu);
    return out;
}

/* Request ids compare with their type: 1 and "1" are different requests. */
static bool same_id(json_t *a, json_t *b) {
    if (json_is_string(a) && json_is_string(b)) return strcmp(json_string_value(a), json_string_value(b)) == 0;
    if (json_is_integer(a) && json_is_integer(b)) return json_integer_value(a) == json_integer_value(b);
    return json_is_real(a) && json_is_real(b) && json_real_value(a) == json_real_value(b);
}

/* Remember a running call so notifications/cancelled can set its flag. */
void mcp_session_track_call(mcp_sessions *ss, const mcp_session *s, json_t *request_id,
                            atomic_int *cancel_flag) {
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
    } else mcp_session_busy(ss, s->nonce, +1); /* a call in flight holds its session */
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
        mcp_session_busy(ss, s->nonce, -1);
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
            atomic_store_explicit(c->flag, 1, memory_order_relaxed);
            found = true;
        }
    pthread_mutex_unlock(&sh->mu);
    return found;
}
