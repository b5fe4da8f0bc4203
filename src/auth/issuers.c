/* issuers.c — graphgate as an OAuth resource server at run time: tenants' authorization
 * servers, their keys fetched and refreshed in the background, and access tokens verified
 * (with a cache of verified tokens by hash).
 *
 * Why the keys are fetched by one background thread and never by a request: an issuer's
 * metadata or JWKS endpoint is a server on the network that may be slow, dead or hostile;
 * a request thread only reads what the fetcher published. A token whose kid is unknown asks
 * for a refetch (at most one per issuer per `unknown_kid_interval_s`, so a flood of invented
 * kids costs one fetch) and is answered at once. All fetches run concurrently in one curl
 * multi handle, each bounded in time and size, so one tenant's dead endpoint delays no other
 * tenant's fetch. The same thread and multi handle introspect opaque tokens (RFC 7662): a
 * request with a token not seen yet is deferred and run again once the answer is
 * remembered (gg_oauth_await, gg_http_async_redispatch), never holding a thread; checks are
 * bounded per issuer in concurrency and rate, so invented tokens cannot flood the issuer.
 *
 * Replicas: every replica fetches on its own and reads definitions from the store; the
 * fetcher thread reads the oauth generation once a second (and at once when the gateway's
 * watch hears a change), so a removed issuer stops being accepted within about a second.
 */
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"

#define MAX_TENANTS 4096       /* definitions cached; past it the cache starts over */
#define TENANT_SLOTS (2 * MAX_TENANTS) /* open addressing at most half full: short probes */
#define MAX_ISSUER_STATES 1024 /* distinct (issuer, jwks_uri) pairs followed */
#define MAX_KEYS 64            /* keys in one JWKS */
#define TOKEN_SLOTS 4096       /* verified tokens remembered (direct-mapped by hash) */
#define TOKEN_CACHE_MAX_S 300.0

typedef struct issuer_state {
    char *issuer, *jwks_uri_cfg; /* identity: the pair */
    char *jwks_uri;              /* from the configuration or the metadata */
    json_t *jwks;                /* published; immutable once published (readers incref) */
    double fetched_at, next_fetch_at, kid_fetch_at; /* wall seconds */
    double backoff_s;
    bool wanted, fetching;
    char last_error[200];
    unsigned fetches;
    char *introspection_uri;          /* from the metadata (under mu) */
    unsigned intro_open;              /* checks queued or under way (under intro_mu) */
    double intro_budget, intro_at;    /* calls left in the rate bucket, and when (intro_mu) */
} issuer_state;

typedef struct tenant_def {
    char name[GG_TENANT_MAX];
    json_t *def; /* normalized definition, or NULL: the tenant has none */
} tenant_def;

typedef struct token_slot {
    unsigned char hash[32];
    double until; /* wall seconds; 0 = empty */
    unsigned long epoch;
    gg_principal p;
    gg_oauth_binding b;
} token_slot;

/* DPoP proofs seen (RFC 9449 section 11.1): 4-way buckets by a hash of key thumbprint and
 * jti; an entry lives as long as a proof's iat is acceptable. */
#define PROOF_BUCKETS 16384
#define PROOF_WAYS 4
#define PROOF_MAX_AGE_S 60.0
/* Principals to note in the store (who called), handed to the fetcher thread so a request
 * never writes; bounded: past it a note waits for the token's next verification. */
#define NOTE_QUEUE 256
typedef struct principal_note {
    gg_principal p;
} principal_note;

/* Introspection (RFC 7662). Answers are remembered direct-mapped by the token's hash (with
 * tenant and resource), like verified JWTs; checks wait in a bounded list and run on the
 * fetcher thread's curl multi handle beside the key fetches. */
#define INTRO_SLOTS 4096
#define INTRO_MAX 256     /* checks queued or under way, all tenants */
#define INTRO_WAITERS 16  /* requests waiting on one check */
#define INTRO_KIND 0x1d7  /* tags an intro_check among the multi handle's transfers */
#define INTRO_FAIL_CACHE_S 1.0

typedef struct intro_result {
    unsigned char hash[32];
    double until;
    unsigned long epoch;
    gg_oauth_result st; /* OK, INVALID or UNAVAILABLE */
    gg_principal p;
    gg_oauth_binding b;
    char msg[128];
} intro_result;

typedef struct intro_check {
    int kind; /* INTRO_KIND; a fetch's is 0 */
    unsigned char hash[32];
    char tenant[GG_TENANT_MAX];
    char *token, *resource;
    json_t *entry; /* the issuer entry whose settings apply */
    issuer_state *s;
    unsigned long epoch;
    bool started;
    struct {
        gg_oauth_wake_fn fn;
        void *user;
    } w[INTRO_WAITERS];
    size_t nw;
    CURL *h;
    struct curl_slist *hdrs;
    gg_strbuf body;
    bool too_big;
} intro_check;

typedef struct proof_slot {
    unsigned char id[16];
    double until;
} proof_slot;

struct gg_oauth {
    gg_store *store;
    gg_oauth_options opt;
    pthread_mutex_t mu; /* guards tenants, issuers and their fields */
    tenant_def *tenants; /* TENANT_SLOTS, by gg_hash_str of the name; name "" = free */
    size_t ntenants;
    issuer_state *issuers[MAX_ISSUER_STATES];
    size_t nissuers;
    long long generation;
    pthread_cond_t wake;
    bool stop, poke;
    pthread_t thread;
    bool started;
    _Atomic unsigned long epoch; /* bumped when definitions change: cached tokens expire */
    pthread_mutex_t tok_mu;
    token_slot *tokens;
    pthread_mutex_t proof_mu;
    proof_slot *proofs;
    principal_note notes[NOTE_QUEUE]; /* guarded by mu */
    size_t nnotes;
    principal_note batch[NOTE_QUEUE]; /* the fetcher thread's: notes being written */
    unsigned char nonce_key[32];
    _Atomic unsigned long fetch_count, fetch_failures;
    CURLM *multi;             /* the fetcher thread's; others only curl_multi_wakeup it */
    bool intro_wanted;        /* a check was queued (under mu: the fetcher's wake) */
    pthread_mutex_t intro_mu; /* guards results, checks and the issuers' intro_* fields */
    intro_result *results;
    intro_check *checks[INTRO_MAX];
    size_t nchecks;
    _Atomic unsigned long intro_calls, intro_failures, intro_refused;
};

static double wall_s(void) { return (double)gg_wall_ms() / 1000.0; }

/* ---- definitions --------------------------------------------------------------------- */

/* The tenant's definition (new reference, NULL when it has none); reads the store once per
 * tenant and generation. false + err when the store cannot be read. */
/* The tenant's slot: its entry, or the free one where it goes (caller holds mu). */
static tenant_def *tenant_slot_locked(gg_oauth *o, const char *tenant) {
    size_t i = (size_t)gg_hash_str(tenant) & (TENANT_SLOTS - 1);
    while (o->tenants[i].name[0] && strcmp(o->tenants[i].name, tenant) != 0) i = (i + 1) & (TENANT_SLOTS - 1);
    return &o->tenants[i];
}

static void forget_tenants_locked(gg_oauth *o) {
    for (size_t i = 0; i < TENANT_SLOTS && o->ntenants; i++)
        if (o->tenants[i].name[0]) {
            json_decref(o->tenants[i].def);
            o->tenants[i] = (tenant_def){0};
            o->ntenants--;
        }
}

static bool tenant_definition(gg_oauth *o, const char *tenant, json_t **out, gg_error *err) {
    *out = NULL;
    if (!tenant[0] || strlen(tenant) >= GG_TENANT_MAX) return true; /* no such tenant: none */
    pthread_mutex_lock(&o->mu);
    tenant_def *hit = tenant_slot_locked(o, tenant);
    if (hit->name[0]) {
        *out = json_incref(hit->def);
        pthread_mutex_unlock(&o->mu);
        return true;
    }
    pthread_mutex_unlock(&o->mu);
    gg_error e = GG_ERROR_INIT;
    json_t *row = gg_store_oauth_get(o->store, tenant, &e);
    if (!row && strcmp(e.code, "not_found") != 0) {
        *err = e;
        return false;
    }
    gg_error_clear(&e);
    json_t *def = row ? json_incref(json_object_get(row, "definition")) : NULL;
    json_decref(row);
    pthread_mutex_lock(&o->mu);
    if (o->ntenants == MAX_TENANTS) forget_tenants_locked(o); /* bounded: start over rather than grow */
    tenant_def *t = tenant_slot_locked(o, tenant);
    if (!t->name[0]) { /* (another thread may have cached it meanwhile) */
        gg_strcopy(t->name, sizeof t->name, tenant);
        t->def = json_incref(def);
        o->ntenants++;
    }
    pthread_mutex_unlock(&o->mu);
    *out = def;
    return true;
}

static void forget_definitions(gg_oauth *o) {
    pthread_mutex_lock(&o->mu);
    forget_tenants_locked(o);
    pthread_mutex_unlock(&o->mu);
    atomic_fetch_add(&o->epoch, 1);
}

/* ---- issuer states --------------------------------------------------------------------- */

static issuer_state *issuer_find_locked(gg_oauth *o, const char *iss, const char *jwks_cfg) {
    for (size_t i = 0; i < o->nissuers; i++) {
        issuer_state *s = o->issuers[i];
        bool same_cfg = (!s->jwks_uri_cfg && !jwks_cfg) || (s->jwks_uri_cfg && jwks_cfg && !strcmp(s->jwks_uri_cfg, jwks_cfg));
        if (!strcmp(s->issuer, iss) && same_cfg) return s;
    }
    return NULL;
}

/* The state of an issuer entry of a definition, made (and its first fetch asked for) when
 * new; NULL when the table is full. Caller holds mu. */
static issuer_state *issuer_of_locked(gg_oauth *o, const json_t *entry) {
    const char *iss = json_string_value(json_object_get(entry, "issuer"));
    const char *cfg = json_string_value(json_object_get(entry, "jwks_uri"));
    issuer_state *s = issuer_find_locked(o, iss, cfg);
    if (s || o->nissuers == MAX_ISSUER_STATES) return s;
    s = calloc(1, sizeof *s);
    if (!s || !(s->issuer = strdup(iss)) || (cfg && !(s->jwks_uri_cfg = strdup(cfg)))) {
        if (s) free(s->issuer);
        free(s);
        return NULL;
    }
    s->wanted = true;
    o->issuers[o->nissuers++] = s;
    o->poke = true;
    pthread_cond_signal(&o->wake);
    return s;
}

/* ---- the fetcher ----------------------------------------------------------------------- */

typedef struct fetch {
    int kind; /* 0: tells it from an intro_check */
    issuer_state *s;
    CURL *h;
    gg_strbuf body;
    size_t max;
    int step; /* 0: RFC 8414 metadata, 1: OpenID discovery, 2: JWKS */
    bool too_big;
} fetch;

static size_t on_body(char *p, size_t size, size_t n, void *user) {
    fetch *f = user;
    size_t len = size * n;
    if (f->body.len + len > f->max) {
        f->too_big = true;
        return 0; /* aborts the transfer */
    }
    gg_strbuf_append(&f->body, p, len);
    return len;
}

/* RFC 8414 section 3: the well-known path goes between the host and the issuer's path. */
static char *metadata_url(const char *iss, int step) {
    const char *wk = step == 0 ? "/.well-known/oauth-authorization-server" : "/.well-known/openid-configuration";
    gg_strbuf b = GG_STRBUF_INIT;
    if (step == 1) { /* OpenID Connect Discovery 1.0: appended to the issuer */
        size_t n = strlen(iss);
        gg_strbuf_append(&b, iss, n && iss[n - 1] == '/' ? n - 1 : n);
        gg_strbuf_puts(&b, wk);
        return gg_strbuf_take(&b);
    }
    const char *host = strstr(iss, "://");
    host = host ? host + 3 : iss;
    const char *path = strchr(host, '/');
    size_t hostend = path ? (size_t)(path - iss) : strlen(iss);
    gg_strbuf_append(&b, iss, hostend);
    gg_strbuf_puts(&b, wk);
    if (path && strcmp(path, "/") != 0) gg_strbuf_puts(&b, path);
    return gg_strbuf_take(&b);
}

static bool start_fetch(gg_oauth *o, CURLM *multi, fetch *f) {
    char *url = NULL;
    pthread_mutex_lock(&o->mu);
    if (f->step == 2) url = strdup(f->s->jwks_uri);
    else url = metadata_url(f->s->issuer, f->step);
    pthread_mutex_unlock(&o->mu);
    if (!url || !(f->h = curl_easy_init())) {
        free(url);
        return false;
    }
    gg_strbuf_reset(&f->body);
    f->too_big = false;
    f->max = o->opt.max_document_bytes;
    curl_easy_setopt(f->h, CURLOPT_URL, url);
    curl_easy_setopt(f->h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(f->h, CURLOPT_FOLLOWLOCATION, 0L); /* a key set is where the issuer says */
    curl_easy_setopt(f->h, CURLOPT_TIMEOUT_MS, (long)(o->opt.fetch_timeout_s * 1000));
    curl_easy_setopt(f->h, CURLOPT_CONNECTTIMEOUT_MS, (long)(o->opt.fetch_timeout_s * 1000));
    curl_easy_setopt(f->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(f->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(f->h, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(f->h, CURLOPT_PRIVATE, f);
    curl_easy_setopt(f->h, CURLOPT_USERAGENT, "graphgate");
    free(url);
    return curl_multi_add_handle(multi, f->h) == CURLM_OK;
}

/* Publish a failure: the old keys stay (an issuer's short outage must not lock its users
 * out), the next try backs off from 10 s up to 5 min. */
static void fetch_failed(gg_oauth *o, fetch *f, const char *what) {
    atomic_fetch_add(&o->fetch_failures, 1);
    pthread_mutex_lock(&o->mu);
    issuer_state *s = f->s;
    snprintf(s->last_error, sizeof s->last_error, "%s", what);
    s->backoff_s = s->backoff_s ? fmin(s->backoff_s * 2, 300) : 10;
    s->next_fetch_at = wall_s() + s->backoff_s;
    s->fetching = false;
    pthread_mutex_unlock(&o->mu);
    gg_log(GG_LOG_WARN, "oauth: fetching an authorization server's keys failed", "issuer", s->issuer, "error", what,
           NULL);
}

static json_t *parse_doc(fetch *f) {
    return json_loadb(f->body.data ? f->body.data : "", f->body.len, JSON_REJECT_DUPLICATES, NULL);
}

/* Metadata answered: check `issuer` (RFC 8414 3.3 — a document for another issuer is an
 * impersonation attempt) and take its jwks_uri. */
static bool take_metadata(gg_oauth *o, fetch *f, char *why, size_t n) {
    json_t *m = parse_doc(f);
    const char *iss = json_string_value(json_object_get(m, "issuer"));
    const char *jwks = json_string_value(json_object_get(m, "jwks_uri"));
    bool ok = false;
    gg_error e = GG_ERROR_INIT;
    if (!json_is_object(m)) snprintf(why, n, "the metadata is not a JSON object");
    else if (!iss || strcmp(iss, f->s->issuer)) snprintf(why, n, "the metadata names another issuer");
    else if (!jwks || !gg_oauth_url_ok(jwks, "jwks_uri", &e)) snprintf(why, n, "the metadata has no usable jwks_uri");
    else ok = true;
    gg_error_clear(&e);
    if (ok) {
        const char *ie = json_string_value(json_object_get(m, "introspection_endpoint"));
        gg_error e2 = GG_ERROR_INIT;
        if (ie && !gg_oauth_url_ok(ie, "introspection_endpoint", &e2)) ie = NULL;
        gg_error_clear(&e2);
        pthread_mutex_lock(&o->mu);
        free(f->s->jwks_uri);
        f->s->jwks_uri = strdup(jwks);
        ok = f->s->jwks_uri != NULL;
        free(f->s->introspection_uri);
        f->s->introspection_uri = ie ? strdup(ie) : NULL;
        pthread_mutex_unlock(&o->mu);
    }
    json_decref(m);
    return ok;
}

static bool take_jwks(gg_oauth *o, fetch *f, char *why, size_t n) {
    json_t *k = parse_doc(f);
    json_t *keys = json_object_get(k, "keys");
    if (!json_is_array(keys) || json_array_size(keys) > MAX_KEYS) {
        snprintf(why, n, "the key set is not {\"keys\": [...]} with at most %d keys", MAX_KEYS);
        json_decref(k);
        return false;
    }
    pthread_mutex_lock(&o->mu);
    issuer_state *s = f->s;
    json_t *old = s->jwks;
    s->jwks = k;
    s->fetched_at = wall_s();
    s->next_fetch_at = s->fetched_at + o->opt.refresh_s;
    s->backoff_s = 0;
    s->last_error[0] = '\0';
    s->fetching = false;
    s->fetches++;
    pthread_mutex_unlock(&o->mu);
    json_decref(old);
    return true;
}

/* One transfer ended: the next step, or done. Returns true when f goes on. */
static bool fetch_done(gg_oauth *o, CURLM *multi, fetch *f, CURLcode rc) {
    long status = 0;
    curl_easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(multi, f->h);
    curl_easy_cleanup(f->h);
    f->h = NULL;
    atomic_fetch_add(&o->fetch_count, 1);
    char why[200] = "";
    bool got = rc == CURLE_OK && status == 200;
    if (!got)
        snprintf(why, sizeof why, "%s", f->too_big ? "the document is over oauth.max_document_bytes"
                                        : rc != CURLE_OK ? curl_easy_strerror(rc) : "the server did not answer 200");
    if (f->step < 2) {
        if (got && take_metadata(o, f, why, sizeof why)) f->step = 2;
        else if (f->step == 0) f->step = 1; /* RFC 8414 first, then OpenID discovery */
        else {
            fetch_failed(o, f, why);
            return false;
        }
        if (start_fetch(o, multi, f)) return true;
        fetch_failed(o, f, "out of memory");
        return false;
    }
    if (!got || !take_jwks(o, f, why, sizeof why)) fetch_failed(o, f, why);
    return false;
}

/* Issuers due a fetch get one started (at most one in flight each). */
static void start_due(gg_oauth *o, CURLM *multi, fetch **live, size_t *nlive) {
    double now = wall_s();
    pthread_mutex_lock(&o->mu);
    issuer_state *due[MAX_ISSUER_STATES];
    size_t n = 0;
    for (size_t i = 0; i < o->nissuers; i++) {
        issuer_state *s = o->issuers[i];
        if (s->fetching || !(s->wanted || (s->jwks && now >= s->next_fetch_at))) continue;
        if (s->next_fetch_at > now) continue; /* backing off */
        s->wanted = false;
        s->fetching = true;
        due[n++] = s;
    }
    pthread_mutex_unlock(&o->mu);
    for (size_t i = 0; i < n; i++) {
        fetch *f = calloc(1, sizeof *f);
        if (!f) continue;
        f->s = due[i];
        f->step = due[i]->jwks_uri_cfg ? 2 : 0;
        if (f->step == 2) {
            pthread_mutex_lock(&o->mu);
            if (!due[i]->jwks_uri) due[i]->jwks_uri = strdup(due[i]->jwks_uri_cfg);
            pthread_mutex_unlock(&o->mu);
        }
        if (start_fetch(o, multi, f)) live[(*nlive)++] = f;
        else {
            fetch_failed(o, f, "cannot start the fetch");
            gg_strbuf_free(&f->body);
            free(f);
        }
    }
}

static void check_generation(gg_oauth *o) {
    gg_error e = GG_ERROR_INIT;
    long long g = gg_store_generation_get(o->store, GG_GEN_OAUTH, &e);
    gg_error_clear(&e);
    if (g >= 0 && g != o->generation) {
        o->generation = g;
        forget_definitions(o);
    }
}

static void write_notes(gg_oauth *o);
static size_t intro_start_queued(gg_oauth *o, CURLM *multi);
static void intro_done(gg_oauth *o, CURLM *multi, intro_check *c, CURLcode rc);

static void *fetcher_main(void *arg) {
    gg_oauth *o = arg;
    CURLM *multi = o->multi;
    fetch **live = calloc(MAX_ISSUER_STATES, sizeof *live);
    size_t nlive = 0;
    double gen_at = 0;
    for (;;) {
        pthread_mutex_lock(&o->mu);
        bool stop = o->stop, poked = o->poke;
        o->poke = false;
        pthread_mutex_unlock(&o->mu);
        if (stop || !multi || !live) break;
        double now = wall_s();
        if (poked || now - gen_at >= 1.0) {
            check_generation(o);
            gen_at = now;
        }
        start_due(o, multi, live, &nlive);
        size_t nintro = intro_start_queued(o, multi);
        write_notes(o);
        int running = 0;
        curl_multi_perform(multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(multi, &left)))
            if (m->msg == CURLMSG_DONE) {
                fetch *f = NULL;
                curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&f);
                if (f->kind == INTRO_KIND) {
                    intro_done(o, multi, (intro_check *)(void *)f, m->data.result);
                    continue;
                }
                if (fetch_done(o, multi, f, m->data.result)) continue;
                for (size_t i = 0; i < nlive; i++)
                    if (live[i] == f) live[i] = live[--nlive];
                gg_strbuf_free(&f->body);
                free(f);
            }
        if (nlive || nintro) curl_multi_poll(multi, NULL, 0, 100, NULL); /* curl_multi_wakeup ends it */
        else {
            pthread_mutex_lock(&o->mu);
            if (!o->stop && !o->poke && !o->nnotes && !o->intro_wanted) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 250 * 1000000L;
                if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
                pthread_cond_timedwait(&o->wake, &o->mu, &ts);
            }
            pthread_mutex_unlock(&o->mu);
        }
    }
    for (size_t i = 0; live && i < nlive; i++) {
        curl_multi_remove_handle(multi, live[i]->h);
        curl_easy_cleanup(live[i]->h);
        gg_strbuf_free(&live[i]->body);
        free(live[i]);
    }
    free(live);
    return NULL;
}

/* ---- life ------------------------------------------------------------------------------ */

static void intro_release_all(gg_oauth *o);

gg_oauth *gg_oauth_new(gg_store *store, const gg_oauth_options *opt, gg_error *err) {
    gg_oauth *o = calloc(1, sizeof *o);
    if (o) o->tenants = calloc(TENANT_SLOTS, sizeof *o->tenants);
    if (o && o->tenants) o->tokens = calloc(TOKEN_SLOTS, sizeof *o->tokens);
    if (o && o->tokens) o->proofs = calloc((size_t)PROOF_BUCKETS * PROOF_WAYS, sizeof *o->proofs);
    if (o && o->proofs) o->results = calloc(INTRO_SLOTS, sizeof *o->results);
    if (o && o->results) o->multi = curl_multi_init();
    if (!o || !o->multi) {
        if (o) {
            free(o->tenants);
            free(o->tokens);
            free(o->proofs);
            free(o->results);
        }
        free(o);
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    o->store = store;
    o->opt = *opt;
    if (o->opt.refresh_s <= 0) o->opt.refresh_s = 300;
    if (o->opt.unknown_kid_interval_s <= 0) o->opt.unknown_kid_interval_s = 10;
    if (o->opt.fetch_timeout_s <= 0) o->opt.fetch_timeout_s = 5;
    if (!o->opt.max_document_bytes) o->opt.max_document_bytes = 256 * 1024;
    pthread_mutex_init(&o->mu, NULL);
    pthread_mutex_init(&o->tok_mu, NULL);
    pthread_mutex_init(&o->proof_mu, NULL);
    pthread_mutex_init(&o->intro_mu, NULL);
    pthread_cond_init(&o->wake, NULL);
    if (opt->nonce_key) memcpy(o->nonce_key, opt->nonce_key, sizeof o->nonce_key);
    else randombytes_buf(o->nonce_key, sizeof o->nonce_key);
    o->opt.nonce_key = NULL; /* copied */
    o->generation = gg_store_generation_get(store, GG_GEN_OAUTH, NULL);
    if (pthread_create(&o->thread, NULL, fetcher_main, o) != 0) {
        gg_oauth_free(o);
        gg_error_set(err, "internal_error", "cannot start the OAuth key fetcher");
        return NULL;
    }
    o->started = true;
    return o;
}

void gg_oauth_free(gg_oauth *o) {
    if (!o) return;
    if (o->started) {
        pthread_mutex_lock(&o->mu);
        o->stop = true;
        pthread_cond_signal(&o->wake);
        pthread_mutex_unlock(&o->mu);
        pthread_join(o->thread, NULL);
    }
    intro_release_all(o);
    if (o->multi) curl_multi_cleanup(o->multi);
    forget_tenants_locked(o);
    for (size_t i = 0; i < o->nissuers; i++) {
        issuer_state *s = o->issuers[i];
        free(s->issuer);
        free(s->jwks_uri_cfg);
        free(s->jwks_uri);
        free(s->introspection_uri);
        json_decref(s->jwks);
        free(s);
    }
    sodium_memzero(o->tokens, TOKEN_SLOTS * sizeof *o->tokens);
    free(o->tokens);
    free(o->proofs);
    sodium_memzero(o->results, INTRO_SLOTS * sizeof *o->results);
    free(o->results);
    sodium_memzero(o->nonce_key, sizeof o->nonce_key);
    free(o->tenants);
    pthread_mutex_destroy(&o->mu);
    pthread_mutex_destroy(&o->tok_mu);
    pthread_mutex_destroy(&o->proof_mu);
    pthread_mutex_destroy(&o->intro_mu);
    pthread_cond_destroy(&o->wake);
    free(o);
}

void gg_oauth_changed(gg_oauth *o) {
    if (!o) return;
    pthread_mutex_lock(&o->mu);
    o->poke = true;
    pthread_cond_signal(&o->wake);
    pthread_mutex_unlock(&o->mu);
}

/* Definitions of this tenant were replaced by this process: forget them now (the other
 * replicas do at their next generation read) and follow the new issuers at once. */
void gg_oauth_tenant_changed(gg_oauth *o, const char *tenant) {
    (void)tenant;
    forget_definitions(o);
    gg_oauth_changed(o);
}

/* ---- verification ------------------------------------------------------------------- */

static void token_hash(const char *token, size_t len, const char *tenant, const char *resource,
                       unsigned char out[32]) {
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, (const unsigned char *)token, len);
    crypto_generichash_update(&st, (const unsigned char *)"", 1);
    crypto_generichash_update(&st, (const unsigned char *)tenant, strlen(tenant) + 1);
    crypto_generichash_update(&st, (const unsigned char *)resource, strlen(resource));
    crypto_generichash_final(&st, out, 32);
}

static bool token_cached(gg_oauth *o, const unsigned char h[32], gg_principal *out, gg_oauth_binding *b) {
    token_slot *s = &o->tokens[(h[0] | (h[1] << 8)) % TOKEN_SLOTS];
    bool hit = false;
    pthread_mutex_lock(&o->tok_mu);
    if (s->until > wall_s() && s->epoch == atomic_load(&o->epoch) && sodium_memcmp(s->hash, h, 32) == 0) {
        *out = s->p;
        *b = s->b;
        hit = true;
    }
    pthread_mutex_unlock(&o->tok_mu);
    return hit;
}

static void token_remember(gg_oauth *o, const unsigned char h[32], const gg_principal *p,
                           const gg_oauth_binding *b, double until, unsigned long epoch) {
    token_slot *s = &o->tokens[(h[0] | (h[1] << 8)) % TOKEN_SLOTS];
    pthread_mutex_lock(&o->tok_mu);
    memcpy(s->hash, h, 32);
    s->until = until;
    s->epoch = epoch;
    s->p = *p;
    s->b = *b;
    pthread_mutex_unlock(&o->tok_mu);
}

/* The principal a verified token names: an id that is stable per (issuer, subject), so a
 * user's session and rate limit follow the user, not the token. */
static void principal_of(const char *tenant, const json_t *entry, const json_t *claims, gg_principal *p) {
    memset(p, 0, sizeof *p);
    gg_strcopy(p->tenant, sizeof p->tenant, tenant);
    p->scopes = gg_oauth_claims_scopes(entry, claims);
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    const char *sub = json_string_value(json_object_get(claims, "sub"));
    const char *cid = json_string_value(json_object_get(claims, "client_id"));
    if (!cid) cid = json_string_value(json_object_get(claims, "azp"));
    unsigned char h[8];
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    crypto_generichash_update(&st, (const unsigned char *)iss, strlen(iss) + 1);
    if (sub) crypto_generichash_update(&st, (const unsigned char *)sub, strlen(sub));
    else if (cid) crypto_generichash_update(&st, (const unsigned char *)cid, strlen(cid)); /* a machine client */
    crypto_generichash_final(&st, h, sizeof h);
    sodium_bin2hex(p->key_id, sizeof p->key_id, h, sizeof h);
    p->oauth = true;
    gg_strcopy(p->subject, sizeof p->subject, sub ? sub : "");
    gg_strcopy(p->client_id, sizeof p->client_id, cid ? cid : "");
    gg_strcopy(p->issuer, sizeof p->issuer, iss);
}

/* cnf.jkt (RFC 9449 section 6.1) and the issuer's policy. */
static void binding_of(const json_t *entry, const json_t *claims, gg_oauth_binding *b) {
    memset(b, 0, sizeof *b);
    const char *jkt = json_string_value(json_object_get(json_object_get(claims, "cnf"), "jkt"));
    if (jkt && strlen(jkt) == GG_JWK_THUMBPRINT_LEN) memcpy(b->jkt, jkt, GG_JWK_THUMBPRINT_LEN + 1);
    else if (jkt) b->jkt[0] = '?'; /* bound, to a thumbprint no proof can match */
    const char *mode = json_string_value(json_object_get(entry, "dpop"));
    b->dpop_required = mode && !strcmp(mode, "required");
    b->dpop_nonce = json_is_true(json_object_get(entry, "dpop_nonce"));
}

static bool tenant_claim_ok(const json_t *entry, const json_t *claims, const char *tenant) {
    const char *name = json_string_value(json_object_get(entry, "tenant_claim"));
    if (!name) return true;
    const char *v = json_string_value(json_object_get(claims, name));
    return v && !strcmp(v, tenant);
}

/* Verify with the issuer's published keys; an unknown kid asks the fetcher for the key set
 * again, at most once per unknown_kid_interval_s. */
static gg_oauth_result verify_with(gg_oauth *o, issuer_state *s, const json_t *entry, const char *tenant,
                                   const char *resource, const char *token, size_t len, json_t **claims,
                                   gg_error *err) {
    pthread_mutex_lock(&o->mu);
    json_t *jwks = json_incref(s->jwks);
    pthread_mutex_unlock(&o->mu);
    if (!jwks) {
        pthread_mutex_lock(&o->mu);
        s->wanted = true;
        pthread_cond_signal(&o->wake);
        pthread_mutex_unlock(&o->mu);
        gg_error_set(err, "unavailable", "the authorization server's keys are not loaded yet");
        return GG_OAUTH_UNAVAILABLE;
    }
    unsigned algs = 0;
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(entry, "algorithms"), i, a) algs |= gg_jwt_alg_bit(json_string_value(a));
    gg_jwt_check c = {json_string_value(json_object_get(entry, "issuer")), resource, algs,
                      (double)json_integer_value(json_object_get(entry, "clock_skew_s")), wall_s(), 0};
    gg_jwt_result r = gg_jwt_verify(token, len, jwks, &c, claims, err);
    json_decref(jwks);
    if (r == GG_JWT_UNKNOWN_KID) {
        double now = wall_s();
        pthread_mutex_lock(&o->mu);
        if (now - s->kid_fetch_at >= o->opt.unknown_kid_interval_s && !s->fetching) {
            s->kid_fetch_at = now;
            s->wanted = true;
            s->next_fetch_at = 0;
            pthread_cond_signal(&o->wake);
        }
        pthread_mutex_unlock(&o->mu);
    }
    if (r != GG_JWT_OK) return GG_OAUTH_INVALID;
    (void)tenant;
    return GG_OAUTH_OK;
}

static void note_principal(gg_oauth *o, const gg_principal *p) {
    pthread_mutex_lock(&o->mu);
    bool queued = false;
    for (size_t i = 0; i < o->nnotes && !queued; i++)
        queued = !strcmp(o->notes[i].p.key_id, p->key_id) && !strcmp(o->notes[i].p.tenant, p->tenant);
    if (!queued && o->nnotes < NOTE_QUEUE) {
        o->notes[o->nnotes++].p = *p;
        pthread_cond_signal(&o->wake);
    }
    pthread_mutex_unlock(&o->mu);
}

/* Fetcher thread: write the queued notes. */
static void write_notes(gg_oauth *o) {
    principal_note *batch = o->batch;
    pthread_mutex_lock(&o->mu);
    size_t n = o->nnotes;
    memcpy(batch, o->notes, n * sizeof *batch);
    o->nnotes = 0;
    pthread_mutex_unlock(&o->mu);
    for (size_t i = 0; i < n; i++) {
        const gg_principal *p = &batch[i].p;
        char scopes[96];
        gg_scopes_format(p->scopes, scopes, sizeof scopes);
        gg_store_principal r = {p->tenant, p->key_id, p->issuer, p->subject, p->client_id, scopes, gg_wall_ms()};
        gg_error e = GG_ERROR_INIT;
        if (!gg_store_principal_note(o->store, &r, &e))
            gg_log(GG_LOG_WARN, "oauth: cannot note a caller", "error", e.message ? e.message : e.code, NULL);
        gg_error_clear(&e);
    }
}

static gg_oauth_result verify_opaque(gg_oauth *o, const char *tenant, const unsigned char h[32], gg_principal *out,
                                     gg_oauth_binding *b, gg_error *err);

gg_oauth_result gg_oauth_verify(gg_oauth *o, const char *tenant, const char *resource, const char *token,
                                size_t len, gg_principal *out, gg_oauth_binding *b, gg_error *err) {
    if (len > GG_JWT_MAX_BYTES) {
        gg_error_set(err, "invalid_token", "the token is longer than %d bytes", GG_JWT_MAX_BYTES);
        return GG_OAUTH_INVALID;
    }
    unsigned char h[32];
    token_hash(token, len, tenant, resource, h);
    if (!memchr(token, '.', len)) return verify_opaque(o, tenant, h, out, b, err); /* not a JWT */
    if (token_cached(o, h, out, b)) return GG_OAUTH_OK;
    unsigned long epoch = atomic_load(&o->epoch);
    json_t *def = NULL;
    if (!tenant_definition(o, tenant, &def, err)) return GG_OAUTH_UNAVAILABLE;
    if (!def) return GG_OAUTH_NONE;
    char *iss = gg_jwt_unverified_issuer(token, len);
    const json_t *entry = gg_oauth_issuer_find(def, iss);
    free(iss);
    gg_oauth_result r;
    if (!entry) {
        gg_error_set(err, "invalid_token", "the token was not issued by this tenant's authorization servers");
        r = GG_OAUTH_INVALID;
    } else {
        pthread_mutex_lock(&o->mu);
        issuer_state *s = issuer_of_locked(o, entry);
        pthread_mutex_unlock(&o->mu);
        json_t *claims = NULL;
        r = s ? verify_with(o, s, entry, tenant, resource, token, len, &claims, err) : GG_OAUTH_UNAVAILABLE;
        if (!s) gg_error_set(err, "unavailable", "too many authorization servers are followed");
        if (r == GG_OAUTH_OK && !tenant_claim_ok(entry, claims, tenant)) {
            gg_error_set(err, "invalid_token", "the token is for another tenant");
            r = GG_OAUTH_INVALID;
        }
        if (r == GG_OAUTH_OK) {
            principal_of(tenant, entry, claims, out);
            binding_of(entry, claims, b);
            note_principal(o, out);
            double exp = json_number_value(json_object_get(claims, "exp"));
            token_remember(o, h, out, b, fmin(exp, wall_s() + TOKEN_CACHE_MAX_S), epoch);
        }
        json_decref(claims);
    }
    json_decref(def);
    return r;
}

/* ---- opaque tokens: introspection (RFC 7662) --------------------------------------------- */

/* The first issuer entry of def that introspects (borrowed), or NULL. */
static const json_t *introspecting_entry(const json_t *def) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(def, "issuers"), i, e) if (json_object_get(e, "introspection")) return e;
    return NULL;
}

bool gg_oauth_introspects(gg_oauth *o, const char *tenant) {
    json_t *def = NULL;
    gg_error e = GG_ERROR_INIT;
    bool ok = o && tenant && tenant_definition(o, tenant, &def, &e) && introspecting_entry(def);
    gg_error_clear(&e);
    json_decref(def);
    return ok;
}

static intro_result *result_slot(gg_oauth *o, const unsigned char h[32]) {
    return &o->results[(h[0] | (h[1] << 8) | ((unsigned)h[2] << 16)) % INTRO_SLOTS];
}

/* The remembered answer for h: OK/INVALID/UNAVAILABLE, or PENDING when none (intro_mu held). */
static gg_oauth_result intro_cached_locked(gg_oauth *o, const unsigned char h[32], gg_principal *out,
                                           gg_oauth_binding *b, gg_error *err) {
    intro_result *r = result_slot(o, h);
    if (!(r->until > wall_s() && r->epoch == atomic_load(&o->epoch) && sodium_memcmp(r->hash, h, 32) == 0))
        return GG_OAUTH_PENDING;
    if (r->st == GG_OAUTH_OK) {
        *out = r->p;
        *b = r->b;
    } else gg_error_set(err, r->st == GG_OAUTH_INVALID ? "invalid_token" : "unavailable", "%s", r->msg);
    return r->st;
}

static gg_oauth_result verify_opaque(gg_oauth *o, const char *tenant, const unsigned char h[32], gg_principal *out,
                                     gg_oauth_binding *b, gg_error *err) {
    pthread_mutex_lock(&o->intro_mu);
    gg_oauth_result st = intro_cached_locked(o, h, out, b, err);
    pthread_mutex_unlock(&o->intro_mu);
    if (st != GG_OAUTH_PENDING) return st;
    json_t *def = NULL;
    if (!tenant_definition(o, tenant, &def, err)) return GG_OAUTH_UNAVAILABLE;
    if (!def) return GG_OAUTH_NONE;
    if (!introspecting_entry(def)) {
        gg_error_set(err, "invalid_token", "the token is not a JWT, and this tenant's authorization servers are not "
                                           "set up for introspection");
        st = GG_OAUTH_INVALID;
    }
    json_decref(def);
    return st;
}

/* May one more check go to s now? Its open checks under `concurrency`, and a call left in
 * its `rate_per_s` bucket (intro_mu held). */
static bool intro_admit_locked(issuer_state *s, const json_t *settings) {
    double conc = (double)json_integer_value(json_object_get(settings, "concurrency"));
    double rate = (double)json_integer_value(json_object_get(settings, "rate_per_s"));
    double now = wall_s();
    if (s->intro_at == 0) s->intro_budget = rate;
    s->intro_budget = fmin(rate, s->intro_budget + (now - s->intro_at) * rate);
    s->intro_at = now;
    if (s->intro_open >= conc || s->intro_budget < 1) return false;
    s->intro_budget -= 1;
    return true;
}

static void intro_check_free(intro_check *c) {
    if (!c) return;
    if (c->token) sodium_memzero(c->token, strlen(c->token));
    free(c->token);
    free(c->resource);
    json_decref(c->entry);
    curl_slist_free_all(c->hdrs);
    gg_strbuf_free(&c->body);
    free(c);
}

gg_oauth_result gg_oauth_await(gg_oauth *o, const char *tenant, const char *resource, const char *token, size_t len,
                               gg_oauth_wake_fn fn, void *user, gg_error *err) {
    if (len > GG_JWT_MAX_BYTES || !tenant || !resource) {
        gg_error_set(err, "invalid_token", "the token is longer than %d bytes", GG_JWT_MAX_BYTES);
        return GG_OAUTH_INVALID;
    }
    unsigned char h[32];
    token_hash(token, len, tenant, resource, h);
    unsigned long epoch = atomic_load(&o->epoch);
    json_t *def = NULL;
    if (!tenant_definition(o, tenant, &def, err)) return GG_OAUTH_UNAVAILABLE;
    const json_t *entry = introspecting_entry(def);
    if (!entry) {
        json_decref(def);
        gg_error_set(err, "invalid_token", "this tenant's authorization servers are not set up for introspection");
        return GG_OAUTH_INVALID;
    }
    pthread_mutex_lock(&o->mu);
    issuer_state *s = issuer_of_locked(o, entry);
    pthread_mutex_unlock(&o->mu);
    gg_principal p;
    gg_oauth_binding b;
    gg_error scratch = GG_ERROR_INIT;
    pthread_mutex_lock(&o->intro_mu);
    gg_oauth_result st = intro_cached_locked(o, h, &p, &b, &scratch);
    gg_error_clear(&scratch);
    intro_check *c = NULL;
    for (size_t i = 0; st == GG_OAUTH_PENDING && i < o->nchecks && !c; i++)
        if (sodium_memcmp(o->checks[i]->hash, h, 32) == 0) c = o->checks[i];
    const char *busy = NULL;
    if (st != GG_OAUTH_PENDING) { /* answered meanwhile: verify again */
    } else if (c) {
        if (c->nw == INTRO_WAITERS) busy = "too many requests wait on this token's introspection";
    } else if (!s) busy = "too many authorization servers are followed";
    else if (o->nchecks == INTRO_MAX) busy = "too many tokens are being introspected";
    else if (!intro_admit_locked(s, json_object_get(entry, "introspection")))
        busy = "too many new tokens are being introspected at this tenant's authorization server";
    else if ((c = calloc(1, sizeof *c)) && (c->token = strndup(token, len)) && (c->resource = strdup(resource))) {
        c->kind = INTRO_KIND;
        memcpy(c->hash, h, 32);
        gg_strcopy(c->tenant, sizeof c->tenant, tenant);
        c->entry = json_incref((json_t *)entry);
        c->s = s;
        c->epoch = epoch;
        s->intro_open++;
        o->checks[o->nchecks++] = c;
    } else {
        intro_check_free(c);
        c = NULL;
        busy = "out of memory";
    }
    if (c && !busy) {
        c->w[c->nw].fn = fn;
        c->w[c->nw++].user = user;
    }
    pthread_mutex_unlock(&o->intro_mu);
    json_decref(def);
    if (st != GG_OAUTH_PENDING) return st;
    if (busy) {
        atomic_fetch_add(&o->intro_refused, 1);
        gg_error_set(err, "unavailable", "%s; retry shortly", busy);
        return GG_OAUTH_UNAVAILABLE;
    }
    pthread_mutex_lock(&o->mu);
    o->intro_wanted = true;
    pthread_cond_signal(&o->wake);
    pthread_mutex_unlock(&o->mu);
    curl_multi_wakeup(o->multi);
    return GG_OAUTH_PENDING;
}

/* Remember c's answer, take c off the list and wake its waiters (fetcher thread). */
static void intro_finish(gg_oauth *o, intro_check *c, const intro_result *r) {
    pthread_mutex_lock(&o->intro_mu);
    intro_result *slot = result_slot(o, c->hash);
    *slot = *r;
    /* at least a second: the waiters, run again now, must find it (else they would wait on a
     * new check, and so on) */
    slot->until = fmax(r->until, wall_s() + 1.0);
    memcpy(slot->hash, c->hash, 32);
    slot->epoch = c->epoch;
    for (size_t i = 0; i < o->nchecks; i++)
        if (o->checks[i] == c) o->checks[i] = o->checks[--o->nchecks];
    c->s->intro_open--;
    pthread_mutex_unlock(&o->intro_mu);
    for (size_t i = 0; i < c->nw; i++) c->w[i].fn(c->w[i].user);
    intro_check_free(c);
}

static void intro_fail(gg_oauth *o, intro_check *c, const char *why) {
    atomic_fetch_add(&o->intro_failures, 1);
    intro_result r = {0};
    r.st = GG_OAUTH_UNAVAILABLE;
    r.until = wall_s() + INTRO_FAIL_CACHE_S;
    snprintf(r.msg, sizeof r.msg, "the authorization server's introspection failed: %s", why);
    gg_log(GG_LOG_WARN, "oauth: token introspection failed", "issuer", c->s->issuer, "error", why, NULL);
    intro_finish(o, c, &r);
}

static size_t intro_on_body(char *p, size_t size, size_t n, void *user) {
    intro_check *c = user;
    size_t len = size * n;
    if (c->body.len + len > 64 * 1024) {
        c->too_big = true;
        return 0;
    }
    gg_strbuf_append(&c->body, p, len);
    return len;
}

/* "${secrets.NAME}" → NAME into out (checked at write time by gg_oauth_definition_check). */
static void secret_name(const char *ref, char *out, size_t n) {
    size_t l = ref ? strlen(ref) : 0;
    out[0] = '\0';
    if (l > 11 && l - 11 < n) {
        memcpy(out, ref + 10, l - 11);
        out[l - 11] = '\0';
    }
}

/* The form body and client authentication (RFC 7662 section 2.1, RFC 6749 section 2.3.1:
 * id and secret form-encoded, then Basic). false + why when it cannot be sent. */
static bool intro_request(gg_oauth *o, intro_check *c, const json_t *set, gg_strbuf *form, char *why, size_t n) {
    char name[80];
    secret_name(json_string_value(json_object_get(set, "client_secret")), name, sizeof name);
    gg_error e = GG_ERROR_INIT;
    char *secret = o->opt.secret ? o->opt.secret(o->opt.secret_user, c->tenant, name, &e) : NULL;
    if (!secret) {
        snprintf(why, n, "the client secret %s cannot be read (%s)", name,
                 e.message ? e.message : o->opt.secret ? e.code : "no secret store");
        gg_error_clear(&e);
        return false;
    }
    const char *id = json_string_value(json_object_get(set, "client_id"));
    char *etok = curl_easy_escape(c->h, c->token, 0), *eid = curl_easy_escape(c->h, id, 0),
         *esec = curl_easy_escape(c->h, secret, 0);
    sodium_memzero(secret, strlen(secret));
    free(secret);
    bool ok = etok && eid && esec;
    if (ok) {
        gg_strbuf_printf(form, "token=%s&token_type_hint=access_token", etok);
        if (!strcmp(json_string_value(json_object_get(set, "auth_method")), "client_secret_post"))
            gg_strbuf_printf(form, "&client_id=%s&client_secret=%s", eid, esec);
        else {
            gg_strbuf cred = GG_STRBUF_INIT;
            gg_strbuf_printf(&cred, "%s:%s", eid, esec);
            size_t bl = sodium_base64_ENCODED_LEN(cred.len, sodium_base64_VARIANT_ORIGINAL);
            char *hdr = malloc(bl + 32);
            if (hdr && cred.data) {
                memcpy(hdr, "Authorization: Basic ", 21);
                sodium_bin2base64(hdr + 21, bl, (const unsigned char *)cred.data, cred.len, sodium_base64_VARIANT_ORIGINAL);
                c->hdrs = curl_slist_append(c->hdrs, hdr);
                sodium_memzero(hdr, bl + 32);
            }
            ok = hdr && cred.data && c->hdrs;
            free(hdr);
            if (cred.data) sodium_memzero(cred.data, cred.len);
            gg_strbuf_free(&cred);
        }
    }
    if (esec) sodium_memzero(esec, strlen(esec));
    if (etok) sodium_memzero(etok, strlen(etok));
    curl_free(etok);
    curl_free(eid);
    curl_free(esec);
    if (!ok || form->oom) snprintf(why, n, "out of memory");
    return ok && !form->oom;
}

static bool intro_start(gg_oauth *o, CURLM *multi, intro_check *c, char *why, size_t n) {
    const json_t *set = json_object_get(c->entry, "introspection");
    const char *ep = json_string_value(json_object_get(set, "endpoint"));
    pthread_mutex_lock(&o->mu);
    char *url = ep ? strdup(ep) : c->s->introspection_uri ? strdup(c->s->introspection_uri) : NULL;
    pthread_mutex_unlock(&o->mu);
    if (!url) {
        snprintf(why, n, "no introspection endpoint is known for %s (none configured, none in its metadata yet)",
                 c->s->issuer);
        return false;
    }
    gg_strbuf form = GG_STRBUF_INIT;
    bool ok = (c->h = curl_easy_init()) != NULL;
    if (!ok) snprintf(why, n, "out of memory");
    ok = ok && intro_request(o, c, set, &form, why, n);
    if (ok) {
        c->hdrs = curl_slist_append(c->hdrs, "Accept: application/json");
        long ms = (long)json_integer_value(json_object_get(set, "timeout_s")) * 1000;
        curl_easy_setopt(c->h, CURLOPT_URL, url);
        curl_easy_setopt(c->h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c->h, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, ms);
        curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, ms);
        curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdrs);
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE, (long)form.len);
        curl_easy_setopt(c->h, CURLOPT_COPYPOSTFIELDS, form.data);
        curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, intro_on_body);
        curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
        curl_easy_setopt(c->h, CURLOPT_PRIVATE, c);
        curl_easy_setopt(c->h, CURLOPT_USERAGENT, "graphgate");
        ok = curl_multi_add_handle(multi, c->h) == CURLM_OK;
        if (!ok) snprintf(why, n, "cannot start the request");
        else atomic_fetch_add(&o->intro_calls, 1);
    }
    if (form.data) sodium_memzero(form.data, form.len);
    gg_strbuf_free(&form);
    free(url);
    if (!ok && c->h) {
        curl_easy_cleanup(c->h);
        c->h = NULL;
    }
    return ok;
}

/* Start the queued checks; returns how many are under way (fetcher thread). */
static size_t intro_start_queued(gg_oauth *o, CURLM *multi) {
    pthread_mutex_lock(&o->mu);
    o->intro_wanted = false;
    pthread_mutex_unlock(&o->mu);
    intro_check *todo[INTRO_MAX];
    size_t n = 0, open = 0;
    pthread_mutex_lock(&o->intro_mu);
    for (size_t i = 0; i < o->nchecks; i++) {
        if (!o->checks[i]->started) {
            o->checks[i]->started = true;
            todo[n++] = o->checks[i];
        }
        open++;
    }
    pthread_mutex_unlock(&o->intro_mu);
    for (size_t i = 0; i < n; i++) {
        char why[200];
        if (!intro_start(o, multi, todo[i], why, sizeof why)) {
            intro_fail(o, todo[i], why);
            open--;
        }
    }
    return open;
}

/* aud (a string or a list) names resource. */
static bool aud_has(const json_t *aud, const char *resource) {
    if (json_is_string(aud)) return !strcmp(json_string_value(aud), resource);
    size_t i;
    json_t *a;
    json_array_foreach(aud, i, a) if (json_is_string(a) && !strcmp(json_string_value(a), resource)) return true;
    return false;
}

/* Judge an introspection answer (RFC 7662 section 2.2) for c into r. */
static void intro_judge(gg_oauth *o, intro_check *c, json_t *ans, intro_result *r) {
    (void)o;
    const json_t *set = json_object_get(c->entry, "introspection");
    const char *iss_cfg = json_string_value(json_object_get(c->entry, "issuer"));
    const char *iss = json_string_value(json_object_get(ans, "iss"));
    json_t *exp = json_object_get(ans, "exp"), *nbf = json_object_get(ans, "nbf"), *aud = json_object_get(ans, "aud");
    double now = wall_s(), skew = (double)json_integer_value(json_object_get(c->entry, "clock_skew_s"));
    const char *why = NULL;
    if (!json_is_true(json_object_get(ans, "active")))
        why = "the token is not active (revoked, expired or unknown to its authorization server)";
    else if (json_object_get(ans, "iss") && (!iss || strcmp(iss, iss_cfg)))
        why = "the introspection answer names another issuer";
    else if (exp && (!json_is_number(exp) || json_number_value(exp) + skew <= now)) why = "the token has expired";
    else if (nbf && (!json_is_number(nbf) || json_number_value(nbf) - skew > now)) why = "the token is not valid yet";
    else if (aud && !aud_has(aud, c->resource)) why = "the token is for another resource (aud)";
    else if (!tenant_claim_ok(c->entry, ans, c->tenant)) why = "the token is for another tenant";
    if (why) {
        r->st = GG_OAUTH_INVALID;
        r->until = now + (double)json_integer_value(json_object_get(set, "negative_cache_s"));
        snprintf(r->msg, sizeof r->msg, "%s", why);
        return;
    }
    if (!iss) json_object_set_new(ans, "iss", json_string(iss_cfg));
    principal_of(c->tenant, c->entry, ans, &r->p);
    binding_of(c->entry, ans, &r->b);
    note_principal(o, &r->p);
    r->st = GG_OAUTH_OK;
    r->until = now + (double)json_integer_value(json_object_get(set, "cache_s"));
    if (exp) r->until = fmin(r->until, json_number_value(exp));
}

static void intro_done(gg_oauth *o, CURLM *multi, intro_check *c, CURLcode rc) {
    long status = 0;
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(multi, c->h);
    curl_easy_cleanup(c->h);
    c->h = NULL;
    char why[200];
    json_t *ans = NULL;
    if (rc != CURLE_OK || status != 200 || c->too_big) {
        snprintf(why, sizeof why, "%s", c->too_big ? "the answer is over 64 KiB"
                                         : rc != CURLE_OK ? curl_easy_strerror(rc) : "the endpoint did not answer 200");
        if (rc == CURLE_OK && !c->too_big) snprintf(why, sizeof why, "the endpoint answered %ld", status);
    } else {
        /* parsed once, then tested: json_is_object is a macro that names its argument twice */
        ans = json_loadb(c->body.data ? c->body.data : "", c->body.len, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(ans)) snprintf(why, sizeof why, "the answer is not a JSON object");
    }
    if (!json_is_object(ans)) {
        json_decref(ans);
        intro_fail(o, c, why);
        return;
    }
    intro_result r = {0};
    intro_judge(o, c, ans, &r);
    json_decref(ans);
    intro_finish(o, c, &r);
}

/* At free: the checks still open end, their waiters woken (they find no answer). */
static void intro_release_all(gg_oauth *o) {
    while (o->nchecks) {
        intro_check *c = o->checks[--o->nchecks];
        if (c->h) {
            curl_multi_remove_handle(o->multi, c->h);
            curl_easy_cleanup(c->h);
            c->h = NULL;
        }
        for (size_t i = 0; i < c->nw; i++) c->w[i].fn(c->w[i].user);
        intro_check_free(c);
    }
}

void gg_oauth_introspection_metrics(gg_oauth *o, unsigned long *calls, unsigned long *failures,
                                    unsigned long *refused) {
    *calls = atomic_load(&o->intro_calls);
    *failures = atomic_load(&o->intro_failures);
    *refused = atomic_load(&o->intro_refused);
}

json_t *gg_oauth_definition(gg_oauth *o, const char *tenant, gg_error *err) {
    json_t *def = NULL;
    if (!tenant_definition(o, tenant, &def, err)) return NULL;
    if (!def) gg_error_set(err, "not_found", "tenant '%s' has no authorization servers", tenant);
    if (def) { /* start following its issuers now, before the first token arrives */
        pthread_mutex_lock(&o->mu);
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(def, "issuers"), i, e) issuer_of_locked(o, e);
        pthread_mutex_unlock(&o->mu);
    }
    return def;
}

json_t *gg_oauth_issuer_status(gg_oauth *o, const json_t *entry) {
    pthread_mutex_lock(&o->mu);
    issuer_state *s = issuer_of_locked(o, entry);
    json_t *st = json_object();
    if (s) {
        json_object_set_new(st, "keys", json_integer((json_int_t)json_array_size(json_object_get(s->jwks, "keys"))));
        if (s->jwks_uri) json_object_set_new(st, "jwks_uri", json_string(s->jwks_uri));
        char at[GG_TIME_ISO_MAX] = "";
        if (s->fetched_at) gg_time_iso8601((long long)(s->fetched_at * 1000), at);
        json_object_set_new(st, "fetched_at", at[0] ? json_string(at) : json_null());
        json_object_set_new(st, "last_error", s->last_error[0] ? json_string(s->last_error) : json_null());
        json_object_set_new(st, "fetches", json_integer(s->fetches));
    }
    pthread_mutex_unlock(&o->mu);
    return st;
}

void gg_oauth_metrics(gg_oauth *o, unsigned long *fetches, unsigned long *failures) {
    *fetches = atomic_load(&o->fetch_count);
    *failures = atomic_load(&o->fetch_failures);
}

/* ---- DPoP: replays and nonces ---------------------------------------------------------- */

bool gg_oauth_dpop_replayed(gg_oauth *o, const char *jkt, const char *jti, double iat) {
    unsigned char id[16];
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, sizeof id);
    crypto_generichash_update(&st, (const unsigned char *)jkt, strlen(jkt) + 1);
    crypto_generichash_update(&st, (const unsigned char *)jti, strlen(jti));
    crypto_generichash_final(&st, id, sizeof id);
    proof_slot *bucket = &o->proofs[((size_t)id[0] | ((size_t)id[1] << 8)) % PROOF_BUCKETS * PROOF_WAYS];
    double now = wall_s();
    bool seen = false;
    pthread_mutex_lock(&o->proof_mu);
    proof_slot *free_slot = NULL;
    for (int i = 0; i < PROOF_WAYS && !seen; i++) {
        proof_slot *p = &bucket[i];
        if (p->until > now && sodium_memcmp(p->id, id, sizeof id) == 0) seen = true;
        else if (!free_slot || p->until < free_slot->until) free_slot = p; /* the emptiest or oldest */
    }
    if (!seen) { /* the oldest of a full bucket goes: a proof that old is refused by its iat */
        memcpy(free_slot->id, id, sizeof id);
        free_slot->until = fmax(iat, now) + PROOF_MAX_AGE_S;
    }
    pthread_mutex_unlock(&o->proof_mu);
    return seen;
}

/* nonce = base64url(minute (8 bytes, big-endian) || HMAC-SHA-256(key, minute)[0..23]) */
static void nonce_for(gg_oauth *o, uint64_t minute, char out[GG_DPOP_NONCE_LEN + 1]) {
    unsigned char buf[32], mac[crypto_auth_hmacsha256_BYTES];
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(minute >> (56 - 8 * i));
    crypto_auth_hmacsha256(mac, buf, 8, o->nonce_key);
    memcpy(buf + 8, mac, 24);
    sodium_bin2base64(out, GG_DPOP_NONCE_LEN + 1, buf, sizeof buf, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

void gg_oauth_dpop_nonce(gg_oauth *o, char out[GG_DPOP_NONCE_LEN + 1]) {
    nonce_for(o, (uint64_t)(wall_s() / 60), out);
}

bool gg_oauth_dpop_nonce_ok(gg_oauth *o, const char *nonce) {
    if (!nonce || strlen(nonce) != GG_DPOP_NONCE_LEN) return false;
    uint64_t now = (uint64_t)(wall_s() / 60);
    for (uint64_t m = now - 1; m <= now; m++) {
        char want[GG_DPOP_NONCE_LEN + 1];
        nonce_for(o, m, want);
        if (sodium_memcmp(want, nonce, GG_DPOP_NONCE_LEN) == 0) return true;
    }
    return false;
}
