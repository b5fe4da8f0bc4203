/* auth.c — the authenticator: key creation and revocation, and verification through an
 * in-memory cache (key id → {hash, tenant, scopes, revoked}) so the request path does not
 * touch SQLite. The cache notices changes made by other processes (the CLI revoking a key
 * while serve runs) through the store's key generation counter, read at most once per
 * second, and re-reads any entry older than cache_ttl.
 *
 * A cache entry also remembers the presented key text that last matched its stored hash,
 * as a keyed SipHash-128 tag (random key per gg_auth, so neither the secret nor anything
 * usable without that key sits in memory): a request presenting the same text is checked
 * by comparing 16 bytes in constant time instead of recomputing BLAKE2b (~0.3 us). The
 * tag lives in the entry, so revocation, invalidation and expiry of the entry drop it. */
#include "auth/auth.h"

#include <pthread.h>
#include <stdint.h>
#include <sched.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#define CACHE_BUCKETS 1024
#define CACHE_MAX_ENTRIES 100000
#define NEGATIVE_TTL_MS 2000.0
#define GEN_CHECK_MS 1000.0
#define TOUCH_EVERY_MS 60000.0

_Static_assert(crypto_shorthash_siphashx24_BYTES == 16, "tags are compared with crypto_verify_16");

typedef struct cache_entry {
    struct cache_entry *next;
    char id[GG_KEY_ID_LEN + 1];
    bool exists, revoked;
    unsigned char hash[GG_KEY_HASH_LEN];
    char tenant[GG_TENANT_MAX];
    unsigned scopes;
    double loaded_ms;      /* monotonic */
    _Atomic long long touched_ms; /* last last-used report (monotonic ms) */
    bool tagged;           /* tag holds the text that last matched hash */
    unsigned char tag[crypto_shorthash_siphashx24_BYTES];
} cache_entry;

/* The per-CPU front of the cache: the last keys that verified on this CPU, each valid only
 * while the cache epoch is the one it was filled at. Every removal, replacement or clear
 * in the cache bumps the epoch after making the change, so revocation, invalidation and
 * reloads reach the front at once; a request served here takes one uncontended lock instead
 * of the shared read lock (whose counter every request on every CPU writes). */
#define FRONT_SHARDS 8
#define FRONT_SLOTS 64
typedef struct front_entry {
    char id[GG_KEY_ID_LEN + 1];     /* "" = empty */
    unsigned char tag[crypto_shorthash_siphashx24_BYTES];
    char tenant[GG_TENANT_MAX];
    unsigned scopes;
    uint64_t epoch;
    double loaded_ms;               /* the cache entry's: its TTL still applies */
    double touched_ms;              /* after TOUCH_EVERY_MS the slow path reports last use */
} front_entry;
typedef struct front_shard {
    pthread_mutex_t mu;
    front_entry e[FRONT_SLOTS];
    char pad[64];
} front_shard;

struct gg_auth {
    gg_store *store;
    unsigned char pepper[32];
    unsigned char tag_key[crypto_shorthash_siphashx24_KEYBYTES]; /* random, never stored */
    double cache_ttl_ms;
    gg_ratelimit *rate;
    gg_tenant_slots *slots;
    _Atomic(gg_history *) history;
    pthread_rwlock_t lock;           /* guards the cache */
    cache_entry *buckets[CACHE_BUCKETS];
    size_t n_entries;
    pthread_mutex_t gen_lock;        /* guards generation */
    _Atomic long long gen_checked_ms; /* monotonic ms (read without the lock) */
    long long generation;
    _Atomic uint64_t epoch;          /* see front_entry */
    front_shard front[FRONT_SHARDS];
};

static size_t bucket_of(const char *id) { return (size_t)(gg_hash_str(id) % CACHE_BUCKETS); }

static void bump_epoch(gg_auth *a) { atomic_fetch_add_explicit(&a->epoch, 1, memory_order_release); }

static void cache_clear_locked(gg_auth *a) {
    for (size_t i = 0; i < CACHE_BUCKETS; i++) {
        cache_entry *e = a->buckets[i];
        while (e) { cache_entry *n = e->next; sodium_memzero(e, sizeof *e); free(e); e = n; }
        a->buckets[i] = NULL;
    }
    a->n_entries = 0;
    bump_epoch(a);
}

static front_shard *front_here(gg_auth *a) {
    int cpu = sched_getcpu();
    return &a->front[cpu > 0 ? (unsigned)cpu % FRONT_SHARDS : 0];
}

/* The fast path: this CPU's front has id with this tag, filled at the current epoch, its
 * cache entry within TTL and last use reported recently. Fills out. */
static bool front_verified(gg_auth *a, const char *id, const unsigned char *tag, double now, uint64_t epoch,
                           gg_principal *out) {
    front_shard *sh = front_here(a);
    front_entry *e = &sh->e[bucket_of(id) % FRONT_SLOTS];
    bool ok = false;
    pthread_mutex_lock(&sh->mu);
    if (e->epoch == epoch && strcmp(e->id, id) == 0 && crypto_verify_16(e->tag, tag) == 0 &&
        now - e->loaded_ms < a->cache_ttl_ms && now - e->touched_ms < TOUCH_EVERY_MS) {
        ok = true;
        if (out) {
            memcpy(out->key_id, id, sizeof out->key_id);
            memcpy(out->tenant, e->tenant, sizeof out->tenant);
            out->scopes = e->scopes;
        }
    }
    pthread_mutex_unlock(&sh->mu);
    return ok;
}

/* Remember a verification made through the cache at epoch (read before the cache was). */
static void front_fill(gg_auth *a, const char *id, const unsigned char *tag, const gg_principal *p,
                       double loaded_ms, double now, uint64_t epoch) {
    front_shard *sh = front_here(a);
    front_entry *e = &sh->e[bucket_of(id) % FRONT_SLOTS];
    pthread_mutex_lock(&sh->mu);
    memcpy(e->id, id, sizeof e->id);
    memcpy(e->tag, tag, sizeof e->tag);
    memcpy(e->tenant, p->tenant, sizeof e->tenant);
    e->scopes = p->scopes;
    e->epoch = epoch;
    e->loaded_ms = loaded_ms;
    e->touched_ms = now;
    pthread_mutex_unlock(&sh->mu);
}

gg_auth *gg_auth_new(gg_store *s, const gg_auth_options *o, gg_error *err) {
    if (sodium_init() < 0) { gg_error_set(err, "auth", "libsodium failed to initialise"); return NULL; }
    gg_auth_options none = {0};
    if (!o) o = &none;
    gg_auth *a = calloc(1, sizeof *a);
    if (!a) { gg_error_set(err, "oom", "out of memory"); return NULL; }
    a->store = s;
    a->cache_ttl_ms = o->cache_ttl_ms > 0 ? (double)o->cache_ttl_ms : 30000.0;
    if (o->pepper && *o->pepper) {
        /* Normalise any configured pepper to a 32-byte BLAKE2b key. */
        crypto_generichash(a->pepper, sizeof a->pepper, (const unsigned char *)o->pepper, strlen(o->pepper), NULL, 0);
    } else if (!gg_store_setting_get_or_create_random(s, "key_pepper", a->pepper, sizeof a->pepper, err)) {
        free(a);
        return NULL;
    }
    a->rate = gg_ratelimit_new(o->rate, o->burst);
    a->slots = gg_tenant_slots_new(o->tenant_max_concurrent);
    if (!a->rate || !a->slots) {
        gg_ratelimit_free(a->rate);
        gg_tenant_slots_free(a->slots);
        free(a);
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    randombytes_buf(a->tag_key, sizeof a->tag_key);
    atomic_store(&a->history, o->history);
    pthread_rwlock_init(&a->lock, NULL);
    atomic_init(&a->epoch, 1);
    for (int i = 0; i < FRONT_SHARDS; i++) pthread_mutex_init(&a->front[i].mu, NULL);
    pthread_mutex_init(&a->gen_lock, NULL);
    a->generation = gg_store_generation_get(s, GG_GEN_KEYS, NULL);
    a->gen_checked_ms = (long long)gg_now_ms();
    return a;
}

void gg_auth_free(gg_auth *a) {
    if (!a) return;
    pthread_rwlock_wrlock(&a->lock);
    cache_clear_locked(a);
    pthread_rwlock_unlock(&a->lock);
    pthread_rwlock_destroy(&a->lock);
    for (int i = 0; i < FRONT_SHARDS; i++) pthread_mutex_destroy(&a->front[i].mu);
    sodium_memzero(a->front, sizeof a->front);
    pthread_mutex_destroy(&a->gen_lock);
    gg_ratelimit_free(a->rate);
    gg_tenant_slots_free(a->slots);
    sodium_memzero(a->pepper, sizeof a->pepper);
    sodium_memzero(a->tag_key, sizeof a->tag_key);
    free(a);
}

void gg_auth_set_history(gg_auth *a, gg_history *h) { atomic_store(&a->history, h); }

void gg_auth_invalidate_all(gg_auth *a) {
    pthread_rwlock_wrlock(&a->lock);
    cache_clear_locked(a);
    pthread_rwlock_unlock(&a->lock);
}

static void invalidate_one(gg_auth *a, const char *id) {
    pthread_rwlock_wrlock(&a->lock);
    cache_entry **p = &a->buckets[bucket_of(id)];
    while (*p) {
        if (strcmp((*p)->id, id) == 0) {
            cache_entry *e = *p;
            *p = e->next;
            sodium_memzero(e, sizeof *e);
            free(e);
            a->n_entries--;
            bump_epoch(a);
            break;
        }
        p = &(*p)->next;
    }
    pthread_rwlock_unlock(&a->lock);
}

/* Drop the cache when another process changed keys (one cheap read per second at most;
 * only one thread does it, the others carry on). */
/* Caller holds gen_lock. */
static void read_generation(gg_auth *a, double now) {
    atomic_store_explicit(&a->gen_checked_ms, (long long)now, memory_order_relaxed);
    long long g = gg_store_generation_get(a->store, GG_GEN_KEYS, NULL);
    if (g >= 0 && g != a->generation) {
        a->generation = g;
        gg_auth_invalidate_all(a);
    }
}

static void check_generation(gg_auth *a, double now) {
    long long last = atomic_load_explicit(&a->gen_checked_ms, memory_order_relaxed);
    if (now - (double)last < GEN_CHECK_MS) return;
    if (pthread_mutex_trylock(&a->gen_lock) != 0) return;
    if (now - (double)atomic_load_explicit(&a->gen_checked_ms, memory_order_relaxed) >= GEN_CHECK_MS) read_generation(a, now);
    pthread_mutex_unlock(&a->gen_lock);
}

/* See auth.h. */
void gg_auth_check_changes(gg_auth *a) {
    pthread_mutex_lock(&a->gen_lock);
    read_generation(a, gg_now_ms());
    pthread_mutex_unlock(&a->gen_lock);
}

/* Report last use at most once a minute per key: true when this request should (the CAS
 * makes exactly one of several concurrent requests win). Caller holds the lock. */
static bool touch_due(cache_entry *e, double now) {
    long long now_ll = (long long)now;
    long long last = atomic_load_explicit(&e->touched_ms, memory_order_relaxed);
    if (last != 0 && now_ll - last < (long long)TOUCH_EVERY_MS) return false;
    return atomic_compare_exchange_strong_explicit(&e->touched_ms, &last, now_ll, memory_order_relaxed, memory_order_relaxed);
}

/* The fast path: id's entry is fresh, exists, is not revoked and its tag equals the tag of
 * the presented text. Fills out and *touch; false means "take the full path". */
static bool cache_verified(gg_auth *a, const char *id, const unsigned char *tag, double now,
                           gg_principal *out, bool *touch, double *loaded_ms) {
    bool ok = false;
    pthread_rwlock_rdlock(&a->lock);
    for (cache_entry *e = a->buckets[bucket_of(id)]; e; e = e->next) {
        if (strcmp(e->id, id) != 0) continue;
        if (e->exists && !e->revoked && e->tagged && now - e->loaded_ms < a->cache_ttl_ms &&
            crypto_verify_16(e->tag, tag) == 0) { /* constant time, ~2 ns */
            ok = true;
            memcpy(out->key_id, id, sizeof out->key_id);
            memcpy(out->tenant, e->tenant, sizeof out->tenant);
            out->scopes = e->scopes;
            *loaded_ms = e->loaded_ms;
            *touch = touch_due(e, now);
        }
        break;
    }
    pthread_rwlock_unlock(&a->lock);
    return ok;
}

/* Remember that the text with this tag matched id's entry loaded at loaded_ms (not if the
 * entry was reloaded or dropped meanwhile). */
static void cache_tag(gg_auth *a, const char *id, double loaded_ms, const unsigned char *tag) {
    pthread_rwlock_wrlock(&a->lock);
    for (cache_entry *e = a->buckets[bucket_of(id)]; e; e = e->next) {
        if (strcmp(e->id, id) != 0) continue;
        if (e->loaded_ms == loaded_ms && e->exists && !e->revoked) {
            memcpy(e->tag, tag, sizeof e->tag);
            e->tagged = true;
        }
        break;
    }
    pthread_rwlock_unlock(&a->lock);
}

/* Copy of the cached entry for id when fresh; false when absent or stale. */
static bool cache_lookup(gg_auth *a, const char *id, double now, cache_entry *out) {
    bool hit = false;
    pthread_rwlock_rdlock(&a->lock);
    for (cache_entry *e = a->buckets[bucket_of(id)]; e; e = e->next) {
        if (strcmp(e->id, id) != 0) continue;
        double ttl = e->exists ? a->cache_ttl_ms : NEGATIVE_TTL_MS;
        if (now - e->loaded_ms < ttl) {
            /* not a struct copy: touched_ms is written atomically by other readers */
            memcpy(out, e, offsetof(cache_entry, touched_ms));
            out->touched_ms = atomic_load_explicit(&e->touched_ms, memory_order_relaxed);
            out->tagged = e->tagged;
            memcpy(out->tag, e->tag, sizeof out->tag);
            hit = true;
        }
        break;
    }
    pthread_rwlock_unlock(&a->lock);
    return hit;
}

static void cache_put(gg_auth *a, const cache_entry *src) {
    cache_entry *n = malloc(sizeof *n);
    if (!n) return; /* not cached: the next request reads the store again */
    *n = *src;
    pthread_rwlock_wrlock(&a->lock);
    if (a->n_entries >= CACHE_MAX_ENTRIES) cache_clear_locked(a);
    cache_entry **p = &a->buckets[bucket_of(src->id)];
    for (; *p; p = &(*p)->next) {
        if (strcmp((*p)->id, src->id) == 0) {
            cache_entry *old = *p;
            n->touched_ms = old->touched_ms;
            n->next = old->next;
            *p = n;
            free(old);
            bump_epoch(a); /* the front may hold what the old entry said */
            pthread_rwlock_unlock(&a->lock);
            return;
        }
    }
    n->next = NULL;
    *p = n;
    a->n_entries++;
    pthread_rwlock_unlock(&a->lock);
}

/* Read id from the store into e. false only when the store failed. */
static bool load_entry(gg_auth *a, const char *id, double now, cache_entry *e) {
    memset(e, 0, sizeof *e);
    snprintf(e->id, sizeof e->id, "%s", id);
    e->loaded_ms = now;
    gg_key_row row;
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_key_get(a->store, id, &row, &err)) {
        bool missing = strcmp(err.code, "not_found") == 0;
        if (!missing) gg_log(GG_LOG_ERROR, "key lookup failed", "error", err.message, NULL);
        gg_error_clear(&err);
        return missing;
    }
    e->exists = true;
    e->revoked = row.revoked;
    memcpy(e->hash, row.hash, sizeof e->hash);
    snprintf(e->tenant, sizeof e->tenant, "%s", row.tenant);
    e->scopes = gg_scopes_parse(row.scopes, &err);
    gg_error_clear(&err); /* unknown stored scopes grant nothing */
    sodium_memzero(&row, sizeof row);
    return true;
}

/* Report last use through the history writer, at most once a minute per key. The check
 * runs under the read lock with an atomic compare-and-swap, so the hot path never takes
 * the write lock. */
static void maybe_touch(gg_auth *a, const char *id, double now) {
    if (!atomic_load(&a->history)) return;
    bool due = false;
    pthread_rwlock_rdlock(&a->lock);
    for (cache_entry *e = a->buckets[bucket_of(id)]; e; e = e->next) {
        if (strcmp(e->id, id) == 0) {
            due = touch_due(e, now);
            break;
        }
    }
    pthread_rwlock_unlock(&a->lock);
    gg_history *h = atomic_load(&a->history);
    if (due && h) gg_history_touch_key(h, id, gg_wall_ms());
}

/* An API key's principal carries no token fields. */
static inline void not_oauth(gg_principal *p) {
    p->oauth = false;
    p->subject[0] = p->client_id[0] = p->issuer[0] = '\0';
}

gg_auth_status gg_auth_verify(gg_auth *a, const char *key, size_t len, gg_principal *out) {
    if (out) not_oauth(out);
    if (!key) return GG_AUTH_MISSING;
    char id[GG_KEY_ID_LEN + 1];
    const char *secret;
    size_t secret_len;
    if (!gg_auth_parse_key(key, len, id, &secret, &secret_len)) return GG_AUTH_INVALID;
    double now = gg_now_ms();
    check_generation(a, now);
    unsigned char tag[crypto_shorthash_siphashx24_BYTES];
    crypto_shorthash_siphashx24(tag, (const unsigned char *)key, len, a->tag_key);
    /* read before the cache: a change made after this read bumps past it */
    uint64_t epoch = atomic_load_explicit(&a->epoch, memory_order_acquire);
    if (front_verified(a, id, tag, now, epoch, out)) return GG_AUTH_OK;
    bool touch = false;
    gg_principal p;
    double loaded_ms = 0;
    if (cache_verified(a, id, tag, now, &p, &touch, &loaded_ms)) {
        gg_history *h = atomic_load(&a->history);
        if (touch && h) gg_history_touch_key(h, id, gg_wall_ms());
        front_fill(a, id, tag, &p, loaded_ms, now, epoch);
        not_oauth(&p);
        if (out) *out = p;
        return GG_AUTH_OK;
    }
    unsigned char hash[GG_KEY_HASH_LEN];
    gg_auth_hash_secret(a->pepper, sizeof a->pepper, id, secret, secret_len, hash);
    cache_entry e;
    bool cached = cache_lookup(a, id, now, &e);
    if (!cached) {
        if (!load_entry(a, id, now, &e)) return GG_AUTH_ERROR;
        cache_put(a, &e);
    }
    gg_auth_status st = GG_AUTH_OK;
    if (!e.exists || sodium_memcmp(e.hash, hash, sizeof hash) != 0) st = GG_AUTH_INVALID;
    else if (e.revoked) st = GG_AUTH_REVOKED;
    if (st == GG_AUTH_OK && out) {
        memcpy(out->key_id, id, sizeof out->key_id);
        memcpy(out->tenant, e.tenant, sizeof out->tenant);
        out->scopes = e.scopes;
    }
    if (st == GG_AUTH_OK) {
        cache_tag(a, id, e.loaded_ms, tag);
        memcpy(p.key_id, id, sizeof p.key_id);
        memcpy(p.tenant, e.tenant, sizeof p.tenant);
        p.scopes = e.scopes;
        front_fill(a, id, tag, &p, e.loaded_ms, now, epoch);
    }
    sodium_memzero(&e, sizeof e);
    sodium_memzero(hash, sizeof hash);
    if (st == GG_AUTH_OK) maybe_touch(a, id, now);
    return st;
}

const char *gg_auth_status_message(gg_auth_status st) {
    switch (st) {
    case GG_AUTH_OK: return "ok";
    case GG_AUTH_MISSING: return "an API key is required (Authorization: Bearer <key> or X-API-Key)";
    case GG_AUTH_INVALID: return "invalid API key";
    case GG_AUTH_REVOKED: return "API key revoked";
    default: return "authentication is temporarily unavailable";
    }
}

bool gg_auth_create_key(gg_auth *a, const char *tenant, unsigned scopes, const char *name,
                        char **key_out, char id_out[GG_KEY_ID_LEN + 1], gg_error *err) {
    if (!scopes || (scopes & ~GG_SCOPE_ALL)) { gg_error_set(err, "invalid_scope", "at least one valid scope is required"); return false; }
    if (name && strlen(name) > 200) { gg_error_set(err, "invalid", "key name is longer than 200 characters"); return false; }
    char scopes_text[160];
    gg_scopes_format(scopes, scopes_text, sizeof scopes_text);
    for (int attempt = 0; attempt < 3; attempt++) {
        unsigned char idb[GG_KEY_ID_LEN / 2], sec[32];
        randombytes_buf(idb, sizeof idb);
        randombytes_buf(sec, sizeof sec);
        char id[GG_KEY_ID_LEN + 1], secret[GG_KEY_SECRET_LEN + 2];
        sodium_bin2hex(id, sizeof id, idb, sizeof idb);
        sodium_bin2base64(secret, sizeof secret, sec, sizeof sec, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        sodium_memzero(sec, sizeof sec);
        unsigned char hash[GG_KEY_HASH_LEN];
        gg_auth_hash_secret(a->pepper, sizeof a->pepper, id, secret, GG_KEY_SECRET_LEN, hash);
        gg_error e2 = GG_ERROR_INIT;
        if (gg_store_key_insert(a->store, id, tenant, name, hash, scopes_text, &e2)) {
            char *text = sodium_malloc(GG_KEY_TEXT_LEN + 1);
            if (!text) { sodium_memzero(secret, sizeof secret); gg_error_set(err, "oom", "out of memory"); return false; }
            memcpy(text, "gg_", 3);
            memcpy(text + 3, id, GG_KEY_ID_LEN);
            text[3 + GG_KEY_ID_LEN] = '_';
            memcpy(text + 4 + GG_KEY_ID_LEN, secret, GG_KEY_SECRET_LEN);
            text[GG_KEY_TEXT_LEN] = '\0';
            sodium_memzero(secret, sizeof secret);
            *key_out = text;
            memcpy(id_out, id, GG_KEY_ID_LEN + 1);
            invalidate_one(a, id); /* drop a negative entry for this id, if any */
            return true;
        }
        sodium_memzero(secret, sizeof secret);
        if (strcmp(e2.code, "conflict") != 0) { gg_error_move(err, &e2); return false; }
        gg_error_clear(&e2); /* id collision: try another */
    }
    gg_error_set(err, "db", "could not allocate a key id");
    return false;
}

void gg_auth_free_secret(char *key) {
    if (key) sodium_free(key); /* sodium_free wipes the memory */
}

bool gg_auth_revoke_key(gg_auth *a, const char *id, const char *tenant, gg_error *err) {
    bool ok = gg_store_key_revoke(a->store, id, tenant, err);
    if (ok) invalidate_one(a, id);
    return ok;
}

void gg_auth_set_limits(gg_auth *a, double rate, int burst, int tenant_max_concurrent) {
    gg_ratelimit_set(a->rate, rate, burst);
    gg_tenant_slots_set(a->slots, tenant_max_concurrent);
}

int gg_auth_rate_take(gg_auth *a, const gg_principal *p) {
    return gg_ratelimit_take(a->rate, p ? p->key_id : NULL, gg_now_ms());
}

bool gg_auth_exec_acquire(gg_auth *a, const char *tenant) { return gg_tenant_slots_acquire(a->slots, tenant); }
void gg_auth_exec_release(gg_auth *a, const char *tenant) { gg_tenant_slots_release(a->slots, tenant); }
int gg_auth_exec_in_use(gg_auth *a, const char *tenant) { return gg_tenant_slots_in_use(a->slots, tenant); }
