/* value.c — JSONata values: construction, refcounting, objects, conversion to and from
 * jansson, JSON serialization with the reference's $string rules, deep equality, UTF-16
 * index helpers and regex compilation. */
#include "jsonata/core.h"
#include "jsonata/fnlib.h"

#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Process-wide on purpose (globals.allow): the budget of the evaluation running on this
 * thread, set and restored around it (jsonata_evaluate, jsonata_budget_swap); per thread,
 * never shared. */
_Thread_local jn_budget *jn_tl_budget;

/* ---- a per-thread cache of small freed blocks in front of malloc ----
 * Every json_t of the process comes through here (jn_json_allocator), about 50 small blocks
 * a recorded tools/call, freed together when the call ends: more than glibc's per-thread
 * cache keeps (7 a size), so each free and the next call's malloc took glibc's slow path,
 * ~170 instructions a pair (bench/gateway/callgrind.sh). Freed blocks of up to
 * JN_CACHE_MAX usable bytes wait here, per thread and size class, JN_CACHE_DEPTH a class
 * (at most 8 x 64 x 136 bytes a thread); a malloc of n takes one from the class whose
 * blocks all have n usable bytes or more. They are ordinary malloc blocks: free, realloc
 * and malloc_usable_size work on them. A thread's blocks go back to malloc when it ends
 * (the key's destructor). Off under ASan and TSan, which must see every malloc and free. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define JN_CACHE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define JN_CACHE 0
#endif
#endif
#ifndef JN_CACHE
#define JN_CACHE 1
#endif
#define JN_CACHE_CLASSES 8 /* usable sizes 24, 40, ... 136: 16 bytes apart, as glibc's */
#define JN_CACHE_MIN 24
#define JN_CACHE_MAX (JN_CACHE_MIN + 16 * (JN_CACHE_CLASSES - 1))
#define JN_CACHE_DEPTH 64
_Static_assert(JN_CACHE_MIN >= 2 * sizeof(void *), "a cached block holds its next pointer and size");

typedef struct jn_block {
    struct jn_block *next;
    size_t usable; /* malloc_usable_size of the block, kept so a budget need not ask again */
} jn_block;
typedef struct jn_cache {
    jn_block *head[JN_CACHE_CLASSES];
    unsigned short n[JN_CACHE_CLASSES];
    bool registered; /* the destructor will run at the thread's end */
    bool closed;     /* it ran: frees go straight to free */
} jn_cache;
/* Process-wide on purpose (globals.allow): the cache belongs to the thread that frees into
 * it (json_t allocation has no context to hang it on: jansson's allocator is global); the
 * key, made once, only runs its destructor at a thread's end. */
static _Thread_local jn_cache jn_tl_cache;
static pthread_key_t jn_cache_key;
static pthread_once_t jn_cache_once = PTHREAD_ONCE_INIT;

static void jn_cache_flush(void *arg) {
    jn_cache *c = arg;
    for (int k = 0; k < JN_CACHE_CLASSES; k++) {
        for (jn_block *b = c->head[k], *next; b; b = next) {
            next = b->next;
            free(b);
        }
        c->head[k] = NULL;
        c->n[k] = 0;
    }
    c->closed = true;
}

static void jn_cache_key_make(void) {
    if (pthread_key_create(&jn_cache_key, jn_cache_flush) != 0) jn_cache_key = (pthread_key_t)-1;
}

/* A cached block with at least n usable bytes (*usable: how many), or NULL. */
static inline void *jn_cache_pop(size_t n, size_t *usable) {
    if (!JN_CACHE || n > JN_CACHE_MAX) return NULL;
    size_t k = n <= JN_CACHE_MIN ? 0 : (n - JN_CACHE_MIN + 15) / 16;
    jn_cache *c = &jn_tl_cache;
    jn_block *b = c->head[k];
    if (!b) return NULL;
    c->head[k] = b->next;
    c->n[k]--;
    *usable = b->usable;
    return b;
}

/* Keep p (usable bytes: usable) for the next malloc of its class; false: free it. */
static inline bool jn_cache_push(void *p, size_t usable) {
    if (!JN_CACHE || usable < JN_CACHE_MIN || usable > JN_CACHE_MAX + 15) return false;
    size_t k = (usable - JN_CACHE_MIN) / 16;
    if (k >= JN_CACHE_CLASSES) k = JN_CACHE_CLASSES - 1;
    jn_cache *c = &jn_tl_cache;
    if (c->n[k] >= JN_CACHE_DEPTH || c->closed) return false;
    if (!c->registered) {
        pthread_once(&jn_cache_once, jn_cache_key_make);
        if (jn_cache_key == (pthread_key_t)-1 || pthread_setspecific(jn_cache_key, c) != 0) return false;
        c->registered = true;
    }
    jn_block *b = p; /* usable >= JN_CACHE_MIN: room for the block's two fields */
    b->usable = usable;
    b->next = c->head[k];
    c->head[k] = b;
    c->n[k]++;
    return true;
}

/* Refusing before malloc (on the requested size) keeps one huge request from ever
 * reaching the heap; the usable size is what is counted, so frees refund exactly. */
void *jn_malloc(size_t n) {
    jn_budget *b = jn_tl_budget;
    size_t usable = 0;
    if (!b) {
        void *p = jn_cache_pop(n, &usable);
        return p ? p : malloc(n);
    }
    if (n > (size_t)(b->limit - b->live)) {
        b->exceeded = true;
        return NULL;
    }
    void *p = jn_cache_pop(n, &usable);
    if (!p && (p = malloc(n))) usable = malloc_usable_size(p);
    if (p) {
        b->live += (long)usable;
        if (b->live > b->peak) b->peak = b->live;
    }
    return p;
}

void *jn_calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = jn_malloc(n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

void *jn_realloc(void *p, size_t n) {
    jn_budget *b = jn_tl_budget;
    if (!b) return realloc(p, n);
    long old = p ? (long)malloc_usable_size(p) : 0;
    if (n > (size_t)(b->limit - b->live + old)) {
        b->exceeded = true;
        return NULL;
    }
    void *q = realloc(p, n);
    if (q) {
        b->live += (long)malloc_usable_size(q) - old;
        if (b->live > b->peak) b->peak = b->live;
    }
    return q;
}

void jn_free(void *p) {
    jn_budget *b = jn_tl_budget;
    if (!p || (!JN_CACHE && !b)) {
        free(p);
        return;
    }
    size_t usable = malloc_usable_size(p);
    if (b) b->live -= (long)usable;
    if (!jn_cache_push(p, usable)) free(p);
}

/* Every json_t of the process is allocated through the memory budget installed on its
 * thread, if any: JSON Logic's values and the parse of a downstream message
 * (mcp/wire.c) are counted that way. Set before main, so before any other thread exists
 * and before jansson has allocated anything; in this file because whoever swaps a budget
 * in links it. */
__attribute__((constructor)) static void jn_json_allocator(void) {
    json_set_alloc_funcs(jsonata_budget_malloc, jsonata_budget_free);
}

jsonata_budget *jsonata_budget_swap(jsonata_budget *b) {
    jsonata_budget *old = jn_tl_budget;
    jn_tl_budget = b;
    return old;
}
void jsonata_alloc_cache_close(void) { jn_cache_flush(&jn_tl_cache); }
void *jsonata_budget_malloc(size_t n) { return jn_malloc(n); }
void jsonata_budget_free(void *p) { jn_free(p); }

bool jn_charge(void *p) {
    jn_budget *b = jn_tl_budget;
    if (!b || !p) return true;
    long n = (long)malloc_usable_size(p);
    if (n > b->limit - b->live) {
        b->exceeded = true;
        return false;
    }
    b->live += n;
    if (b->live > b->peak) b->peak = b->live;
    return true;
}

/* Immutable singletons (globals.allow): refcount -1 marks a value never counted nor freed, so
 * nothing writes them; not const only because values are handed out as jn_value *. */
static jn_value v_null = {-1, JN_NULL, 0, {.b = false}};
static jn_value v_true = {-1, JN_BOOL, 0, {.b = true}};
static jn_value v_false = {-1, JN_BOOL, 0, {.b = false}};

jn_value *jn_null(void) { return &v_null; }
jn_value *jn_bool(bool b) { return b ? &v_true : &v_false; }

/* One allocation per value: extra bytes after the header hold inline storage (string
 * bytes, array items, object entries) so small values cost a single malloc. */
static jn_value *alloc_value_extra(jn_type t, size_t extra) {
    jn_value *v = jn_malloc(sizeof *v + extra);
    if (!v) return NULL;
    memset(v, 0, sizeof *v);
    v->rc = 1;
    v->type = (uint8_t)t;
    return v;
}

static jn_value *alloc_value(jn_type t) { return alloc_value_extra(t, 0); }

#define INLINE_PTR(v) ((void *)((v) + 1))

static bool index_insert(jn_value *o, size_t ent);
static long find_key(const jn_value *o, const char *key, size_t klen);
static uint32_t hash_bytes(const char *s, size_t n);

void jn_oom(gg_error *err) { gg_error_set(err, "D0000", "Out of memory"); }

/* The integers 0..255, made once and immortal like null and the booleans (globals.allow:
 * nothing writes them): counts, indexes, ranges and most literals need no allocation. */
#define N1(i) {-1, JN_NUMBER, 0, {.n = (i)}}
#define N4(i) N1(i), N1((i) + 1), N1((i) + 2), N1((i) + 3)
#define N16(i) N4(i), N4((i) + 4), N4((i) + 8), N4((i) + 12)
#define N64(i) N16(i), N16((i) + 16), N16((i) + 32), N16((i) + 48)
static jn_value v_small_ints[256] = {N64(0), N64(64), N64(128), N64(192)};
#undef N1
#undef N4
#undef N16
#undef N64

static bool is_small_int(const jn_value *v) { return v >= v_small_ints && v < v_small_ints + 256; }

/* A number uses only the header and u.n: allocating just that makes ranges and numeric
 * arrays less than half the size (values are never retyped in place or copied whole, and
 * no number is changed after it is made: a small integer is shared). */
jn_value *jn_number(double d) {
    if (d >= 0 && d < 256 && !signbit(d) && d == (double)(int)d) return &v_small_ints[(int)d];
    jn_value *v = jn_malloc(offsetof(jn_value, u) + sizeof(double));
    if (!v) return NULL;
    v->rc = 1;
    v->type = JN_NUMBER;
    v->flags = 0;
    v->u.n = d;
    return v;
}

jn_value *jn_string_take(char *s, size_t len) {
    if (!jn_charge(s)) {
        free(s);
        return NULL;
    }
    jn_value *v = alloc_value(JN_STRING);
    if (!v) {
        jn_free(s);
        return NULL;
    }
    v->u.str.s = s;
    v->u.str.len = len;
    v->u.str.ulen = gg_utf16_len(s, len);
    return v;
}

jn_value *jn_string(const char *s, size_t len) {
    jn_value *v = alloc_value_extra(JN_STRING, len + 1);
    if (!v) return NULL;
    char *c = INLINE_PTR(v);
    if (len) memcpy(c, s, len);
    c[len] = '\0';
    v->u.str.s = c;
    v->u.str.len = len;
    v->u.str.ulen = gg_utf16_len(c, len);
    return v;
}

/* a followed by b in one allocation, counted against the budget before it is made */
jn_value *jn_string_cat(const char *a, size_t alen, const char *b, size_t blen) {
    if (alen > SIZE_MAX / 2 || blen > SIZE_MAX / 2) return NULL;
    jn_value *v = alloc_value_extra(JN_STRING, alen + blen + 1);
    if (!v) return NULL;
    char *c = INLINE_PTR(v);
    if (alen) memcpy(c, a, alen);
    if (blen) memcpy(c + alen, b, blen);
    c[alen + blen] = '\0';
    v->u.str.s = c;
    v->u.str.len = alen + blen;
    v->u.str.ulen = gg_utf16_len(c, alen + blen);
    return v;
}

jn_value *jn_string_cstr(const char *s) { return jn_string(s, strlen(s)); }

jn_value *jn_strbuf_to_string(gg_strbuf *b) {
    size_t len = b->len;
    if (b->oom) {
        gg_strbuf_free(b);
        return NULL;
    }
    char *s = gg_strbuf_take(b);
    if (!s) {
        s = calloc(1, 1);
        if (!s) return NULL;
        len = 0;
    }
    return jn_string_take(s, len);
}

jn_value *jn_array_new(size_t cap) {
    if (cap > ((size_t)1 << 40)) return NULL;
    jn_value *v = alloc_value_extra(JN_ARRAY, cap * sizeof(jn_value *));
    if (!v) return NULL;
    if (cap) {
        v->u.arr.items = INLINE_PTR(v);
        v->u.arr.cap = cap;
    }
    return v;
}

jn_value *jn_seq_new(size_t cap) {
    jn_value *v = jn_array_new(cap);
    if (v) v->flags |= JN_F_SEQUENCE;
    return v;
}

bool jn_array_push(jn_value *arr, jn_value *v) {
    if (arr->u.arr.n == arr->u.arr.cap) {
        size_t nc = arr->u.arr.cap ? arr->u.arr.cap * 2 : 4;
        bool inl = arr->u.arr.items == INLINE_PTR(arr);
        jn_value **ni = inl ? jn_malloc(nc * sizeof *ni) : jn_realloc(arr->u.arr.items, nc * sizeof *ni);
        if (!ni) {
            jn_decref(v);
            return false;
        }
        if (inl) memcpy(ni, arr->u.arr.items, arr->u.arr.n * sizeof *ni);
        arr->u.arr.items = ni;
        arr->u.arr.cap = nc;
    }
    arr->u.arr.items[arr->u.arr.n++] = v;
    return true;
}

jn_value *jn_array_copy(const jn_value *a, size_t extra) {
    jn_value *c = jn_array_new(a->u.arr.n + extra);
    if (!c) return NULL;
    for (size_t i = 0; i < a->u.arr.n; i++) c->u.arr.items[i] = jn_incref(a->u.arr.items[i]);
    c->u.arr.n = a->u.arr.n;
    c->flags = a->flags;
    return c;
}

bool jn_is_sequence(const jn_value *v) {
    return v && v->type == JN_ARRAY && (v->flags & JN_F_SEQUENCE);
}
bool jn_is_array(const jn_value *v) { return v && v->type == JN_ARRAY; }
bool jn_is_function(const jn_value *v) {
    return v && (v->type == JN_FUNCTION || v->type == JN_REGEX);
}

jn_value *jn_object_new(size_t cap) {
    if (cap > ((size_t)1 << 40)) return NULL;
    jn_value *v = alloc_value_extra(JN_OBJECT, cap * sizeof(jn_objent));
    if (!v) return NULL;
    if (cap) {
        v->u.obj.ents = INLINE_PTR(v);
        v->u.obj.cap = cap;
    }
    return v;
}

static void free_ents(jn_value *o) {
    if (o->u.obj.ents != INLINE_PTR(o)) jn_free(o->u.obj.ents);
}

/* Remove key from a (non-shared) object, keeping the order of the others. */
void jn_object_remove(jn_value *o, const char *key, size_t klen) {
    long e = find_key(o, key, klen);
    if (e < 0) return;
    jn_decref(o->u.obj.ents[e].key);
    jn_decref(o->u.obj.ents[e].val);
    memmove(&o->u.obj.ents[e], &o->u.obj.ents[e + 1], (o->u.obj.n - (size_t)e - 1) * sizeof(jn_objent));
    o->u.obj.n--;
    if (o->u.obj.index) {
        memset(o->u.obj.index, 0, o->u.obj.icap * sizeof *o->u.obj.index);
        for (size_t i = 0; i < o->u.obj.n; i++) index_insert(o, i);
    }
}

static uint32_t hash_bytes(const char *s, size_t n) { return (uint32_t)gg_hash_addn(GG_HASH_INIT, s, n); }

static bool index_insert(jn_value *o, size_t ent) {
    jn_value *k = o->u.obj.ents[ent].key;
    size_t mask = o->u.obj.icap - 1;
    size_t i = hash_bytes(k->u.str.s, k->u.str.len) & mask;
    while (o->u.obj.index[i]) i = (i + 1) & mask;
    o->u.obj.index[i] = (uint32_t)(ent + 1);
    return true;
}

static bool index_rebuild(jn_value *o, size_t icap) {
    uint32_t *ix = jn_calloc(icap, sizeof *ix);
    if (!ix) return false;
    jn_free(o->u.obj.index);
    o->u.obj.index = ix;
    o->u.obj.icap = icap;
    for (size_t e = 0; e < o->u.obj.n; e++) index_insert(o, e);
    return true;
}

static bool object_put(jn_value *o, jn_value *key, const char *k, size_t klen, jn_value *v);
jn_value *jn_from_json_lazy(json_t *j);

static inline bool key_eq(const jn_value *k, const char *key, size_t klen) {
    return k->u.str.len == klen && (klen == 0 || (k->u.str.s[0] == key[0] && memcmp(k->u.str.s, key, klen) == 0));
}

uint32_t jn_hash_key(const char *s, size_t n) { return hash_bytes(s, n); }

/* find_key with the key's hash already known (path steps precompute it) */
static long find_key_h(const jn_value *o, const char *key, size_t klen, uint32_t h) {
    if (o->u.obj.index) {
        size_t mask = o->u.obj.icap - 1;
        size_t i = h & mask;
        while (o->u.obj.index[i]) {
            const jn_value *k = o->u.obj.ents[o->u.obj.index[i] - 1].key;
            if (key_eq(k, key, klen)) return (long)o->u.obj.index[i] - 1;
            i = (i + 1) & mask;
        }
        return -1;
    }
    for (size_t e = 0; e < o->u.obj.n; e++)
        if (key_eq(o->u.obj.ents[e].key, key, klen)) return (long)e;
    return -1;
}

static long find_key(const jn_value *o, const char *key, size_t klen) {
    if (o->u.obj.index) {
        size_t mask = o->u.obj.icap - 1;
        size_t i = hash_bytes(key, klen) & mask;
        while (o->u.obj.index[i]) {
            const jn_value *k = o->u.obj.ents[o->u.obj.index[i] - 1].key;
            if (k->u.str.len == klen && memcmp(k->u.str.s, key, klen) == 0)
                return (long)o->u.obj.index[i] - 1;
            i = (i + 1) & mask;
        }
        return -1;
    }
    for (size_t e = 0; e < o->u.obj.n; e++)
        if (key_eq(o->u.obj.ents[e].key, key, klen)) return (long)e;
    return -1;
}

/* jn_object_get with the key as a string value (reused when caching lazy entries). */
jn_value *jn_object_get_key(const jn_value *obj, jn_value *key, uint32_t hash) {
    if (!obj || obj->type != JN_OBJECT) return NULL;
    long e = find_key_h(obj, key->u.str.s, key->u.str.len, hash);
    if (e >= 0) return obj->u.obj.ents[e].val;
    if (!obj->u.obj.lazy) return NULL;
    json_t *x = json_object_getn(obj->u.obj.lazy, key->u.str.s, key->u.str.len);
    if (!x) return NULL;
    jn_value *xv = jn_from_json_lazy(x);
    if (!xv || !object_put((jn_value *)obj, key, key->u.str.s, key->u.str.len, xv)) return NULL;
    return xv;
}

jn_value *jn_object_get(const jn_value *obj, const char *key, size_t klen) {
    if (!obj || obj->type != JN_OBJECT) return NULL;
    long e = find_key(obj, key, klen);
    if (e >= 0) return obj->u.obj.ents[e].val;
    if (!obj->u.obj.lazy) return NULL;
    /* lazy shell: convert the entry and cache it (the shell is private to this
     * evaluation, so caching does not break sharing between threads) */
    json_t *x = json_object_getn(obj->u.obj.lazy, key, klen);
    if (!x) return NULL;
    jn_value *xv = jn_from_json_lazy(x);
    if (!xv) return NULL;
    jn_value *o = (jn_value *)obj;
    if (!object_put(o, NULL, key, klen, xv)) return NULL;
    return xv;
}

static bool object_put(jn_value *o, jn_value *key, const char *k, size_t klen, jn_value *v) {
    long e = find_key(o, k, klen);
    if (e >= 0) {
        jn_decref(o->u.obj.ents[e].val);
        o->u.obj.ents[e].val = v;
        return true;
    }
    if (o->u.obj.n == o->u.obj.cap) {
        size_t nc = o->u.obj.cap ? o->u.obj.cap * 2 : 4;
        bool inl = o->u.obj.ents == INLINE_PTR(o);
        jn_objent *ne = inl ? jn_malloc(nc * sizeof *ne) : jn_realloc(o->u.obj.ents, nc * sizeof *ne);
        if (!ne) goto fail;
        if (inl) memcpy(ne, o->u.obj.ents, o->u.obj.n * sizeof *ne);
        o->u.obj.ents = ne;
        o->u.obj.cap = nc;
    }
    if (key) jn_incref(key);
    else key = jn_string(k, klen);
    if (!key) goto fail;
    o->u.obj.ents[o->u.obj.n].key = key;
    o->u.obj.ents[o->u.obj.n].val = v;
    o->u.obj.n++;
    if (o->u.obj.n > 8) {
        if (o->u.obj.n * 2 > o->u.obj.icap) {
            if (!index_rebuild(o, o->u.obj.icap ? o->u.obj.icap * 2 : 32)) return false;
        } else {
            index_insert(o, o->u.obj.n - 1);
        }
    }
    return true;
fail:
    jn_decref(v);
    return false;
}

bool jn_object_set(jn_value *obj, const char *key, size_t klen, jn_value *v) {
    return object_put(obj, NULL, key, klen, v);
}

bool jn_object_set_key(jn_value *obj, jn_value *key, jn_value *v) {
    return object_put(obj, key, key->u.str.s, key->u.str.len, v);
}

static void function_free(jn_function *f) {
    if (!f) return;
    jn_decref(f->input);
    if (f->sig && !f->borrowed_sig) jn_sig_free(f->sig);
    free(f->name);
    jn_decref(f->bound);
    jn_decref(f->target);
    for (int i = 0; i < f->nargs; i++) jn_decref(f->args[i]);
    free(f->args);
    free(f->ph);
    free(f);
}

void jn_value_free_(jn_value *v) {
    switch (v->type) {
    case JN_STRING:
        if (v->u.str.s != INLINE_PTR(v)) jn_free(v->u.str.s);
        if (v->u.str.numfmt) jn_numfmt_free(v->u.str.numfmt);
        break;
    case JN_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++) jn_decref(v->u.arr.items[i]);
        if (v->u.arr.items != INLINE_PTR(v)) jn_free(v->u.arr.items);
        break;
    case JN_OBJECT:
        for (size_t i = 0; i < v->u.obj.n; i++) {
            jn_decref(v->u.obj.ents[i].key);
            jn_decref(v->u.obj.ents[i].val);
        }
        free_ents(v);
        jn_free(v->u.obj.index);
        break;
    case JN_FUNCTION: function_free(v->u.fn); break;
    case JN_REGEX: jn_regex_free(v->u.re); break;
    default: break;
    }
    jn_free(v);
}

void jn_make_immortal(jn_value *v) {
    if (v) v->rc = -1;
}

void jn_free_immortal(jn_value *v) {
    if (!v || v == &v_null || v == &v_true || v == &v_false || is_small_int(v)) return;
    v->rc = 1;
    jn_decref(v);
}

jn_value *jn_function_value(jn_function *f) {
    jn_value *v = alloc_value(JN_FUNCTION);
    if (!v) {
        function_free(f);
        return NULL;
    }
    v->u.fn = f;
    return v;
}

jn_value *jn_native_new(const char *name, const char *signature, jn_native_fn fn,
                        jn_value *bound, gg_error *err) {
    jn_function *f = calloc(1, sizeof *f);
    if (!f) {
        jn_decref(bound);
        jn_oom(err);
        return NULL;
    }
    f->kind = FN_CLOSURE;
    f->native = fn;
    f->bound = bound;
    f->name = name ? strdup(name) : NULL;
    if (signature) {
        f->sig = jn_sig_parse(signature, err);
        if (!f->sig) {
            function_free(f);
            return NULL;
        }
    }
    jn_value *v = jn_function_value(f);
    if (!v) jn_oom(err);
    return v;
}

jn_value *jn_fn_bound(const jn_value *fn) {
    return (fn && fn->type == JN_FUNCTION) ? fn->u.fn->bound : NULL;
}

/* ---- jansson ---- */
/* Shallow conversion used for evaluation input: objects become lazy shells that point
 * at the json_t and convert entries when first read. The json_t is borrowed (no
 * refcount traffic, so one input can be shared by concurrent evaluations): it must
 * outlive every value converted from it, which jsonata_evaluate guarantees. */
jn_value *jn_from_json_lazy(json_t *j) {
    if (!j) return NULL;
    if (json_is_object(j)) {
        jn_value *o = alloc_value(JN_OBJECT);
        if (!o) return NULL;
        o->u.obj.lazy = j;
        return o;
    }
    if (json_is_array(j)) {
        size_t n = json_array_size(j);
        jn_value *a = jn_array_new(n);
        if (!a) return NULL;
        for (size_t i = 0; i < n; i++) {
            jn_value *x = jn_from_json_lazy(json_array_get(j, i));
            if (!x) {
                jn_decref(a);
                return NULL;
            }
            a->u.arr.items[a->u.arr.n++] = x;
        }
        return a;
    }
    return jn_from_json(j);
}

bool jn_force(jn_value *v) {
    if (!v || v->type != JN_OBJECT || !v->u.obj.lazy) return true;
    json_t *src = v->u.obj.lazy;
    /* entries already converted on demand (cache) are reused so identity is kept */
    jn_objent *cache = v->u.obj.ents;
    size_t ncache = v->u.obj.n;
    jn_free(v->u.obj.index);
    v->u.obj.index = NULL;
    v->u.obj.icap = 0;
    v->u.obj.ents = NULL;
    v->u.obj.n = v->u.obj.cap = 0;
    v->u.obj.lazy = NULL;
    bool ok = true;
    size_t sz = json_object_size(src);
    if (sz) {
        v->u.obj.ents = jn_malloc(sz * sizeof(jn_objent));
        if (!v->u.obj.ents) ok = false;
        else v->u.obj.cap = sz;
    }
    const char *k;
    size_t klen;
    json_t *x;
    void *tmp;
    json_object_keylen_foreach_safe(src, tmp, k, klen, x) {
        if (!ok) break;
        jn_value *xv = NULL;
        for (size_t i = 0; i < ncache; i++) {
            jn_value *ck = cache[i].key;
            if (ck && ck->u.str.len == klen && !memcmp(ck->u.str.s, k, klen)) {
                xv = cache[i].val;
                cache[i].val = NULL;
                break;
            }
        }
        if (!xv) xv = jn_from_json_lazy(x);
        if (!xv || !jn_object_set(v, k, klen, xv)) ok = false;
    }
    for (size_t i = 0; i < ncache; i++) {
        jn_decref(cache[i].key);
        jn_decref(cache[i].val);
    }
    if (cache != INLINE_PTR(v)) jn_free(cache);
    return ok;
}

bool jn_force_deep(jn_value *v) {
    if (!v) return true;
    if (v->type == JN_OBJECT) {
        if (!jn_force(v)) return false;
        for (size_t i = 0; i < v->u.obj.n; i++)
            if (!jn_force_deep(v->u.obj.ents[i].val)) return false;
    } else if (v->type == JN_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++)
            if (!jn_force_deep(v->u.arr.items[i])) return false;
    }
    return true;
}

jn_value *jn_from_json(json_t *j) {
    if (!j) return NULL;
    switch (json_typeof(j)) {
    case JSON_NULL: return jn_null();
    case JSON_TRUE: return jn_bool(true);
    case JSON_FALSE: return jn_bool(false);
    case JSON_INTEGER: return jn_number((double)json_integer_value(j));
    case JSON_REAL: return jn_number(json_real_value(j));
    case JSON_STRING: return jn_string(json_string_value(j), json_string_length(j));
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        jn_value *a = jn_array_new(n);
        if (!a) return NULL;
        for (size_t i = 0; i < n; i++) {
            jn_value *x = jn_from_json(json_array_get(j, i));
            if (!x || !jn_array_push(a, x)) {
                jn_decref(a);
                return NULL;
            }
        }
        return a;
    }
    case JSON_OBJECT: {
        jn_value *o = jn_object_new(json_object_size(j));
        if (!o) return NULL;
        const char *k;
        size_t klen;
        json_t *x;
        void *tmp;
        json_object_keylen_foreach_safe(j, tmp, k, klen, x) {
            jn_value *xv = jn_from_json(x);
            if (!xv || !jn_object_set(o, k, klen, xv)) {
                jn_decref(o);
                return NULL;
            }
        }
        return o;
    }
    }
    return NULL;
}

json_t *jn_to_json(const jn_value *v) {
    if (!v) return NULL;
    switch ((jn_type)v->type) {
    case JN_NULL: return json_null();
    case JN_BOOL: return json_boolean(v->u.b);
    case JN_NUMBER: {
        double d = v->u.n;
        if (d == floor(d) && fabs(d) < 9007199254740992.0 && !(d == 0 && signbit(d)))
            return json_integer((json_int_t)d);
        if (!isfinite(d)) return json_null();
        return json_real(d);
    }
    case JN_STRING: {
        json_t *j = json_stringn(v->u.str.s, v->u.str.len);
        if (j) return j;
        /* not valid UTF-8 (e.g. a lone surrogate from "\uD800"): replace bad bytes */
        gg_strbuf b = GG_STRBUF_INIT;
        const unsigned char *p = (const unsigned char *)v->u.str.s;
        size_t n = v->u.str.len, i = 0;
        while (i < n) {
            size_t w = gg_utf8_len(p + i, n - i);
            if (w) gg_strbuf_append(&b, (const char *)p + i, w);
            else gg_strbuf_puts(&b, "\xEF\xBF\xBD");
            i += w ? w : 1;
        }
        j = b.oom ? NULL : json_stringn(b.data ? b.data : "", b.len);
        gg_strbuf_free(&b);
        return j;
    }
    case JN_ARRAY: {
        json_t *a = json_array();
        if (!a) return NULL;
        for (size_t i = 0; i < v->u.arr.n; i++) {
            json_t *x = jn_to_json(v->u.arr.items[i]);
            if (!x) continue; /* undefined items vanish, as in JSON.stringify... of sequences */
            if (json_array_append_new(a, x)) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    case JN_OBJECT: {
        if (v->u.obj.lazy) return gg_json_clone(v->u.obj.lazy);
        json_t *o = json_object();
        if (!o) return NULL;
        for (size_t i = 0; i < v->u.obj.n; i++) {
            json_t *x = jn_to_json(v->u.obj.ents[i].val);
            if (!x) continue;
            const jn_value *k = v->u.obj.ents[i].key;
            if (json_object_setn_new(o, k->u.str.s, k->u.str.len, x)) {
                json_decref(o);
                return NULL;
            }
        }
        return o;
    }
    case JN_FUNCTION:
    case JN_REGEX: return json_string("");
    default: return NULL;
    }
}

/* ---- stringify ---- */
static void put_json_string(gg_strbuf *b, const char *s, size_t len) {
    gg_strbuf_putc(b, '"');
    gg_strbuf_json_escape(b, s, len);
    gg_strbuf_putc(b, '"');
}

static void put_indent(gg_strbuf *b, bool pretty, int level) {
    if (!pretty) return;
    gg_strbuf_putc(b, '\n');
    for (int i = 0; i < level; i++) gg_strbuf_puts(b, "  ");
}

/* Whether d is the double nearest to a decimal of at most 15 significant digits, so that
 * rounding it to 15 digits (toPrecision(15)) gives d back and the printf/strtod pair can be
 * skipped: m = d * 10^q as a 15-digit integer, and m / 10^q (one correctly rounded
 * division of exact operands, i.e. strtod's answer) is d. The 15-digit grid is coarser
 * than the double grid (10^15 < 2^53), so that decimal is also the one %.15g prints. */
static bool has_15_digits(double d) {
    static const double P10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    double a = fabs(d);
    if (!(a >= 1e-7 && a < 1e15)) return false;
    int q = 14 - (int)floor(log10(a));
    if (q < 0 || q > 22) return false;
    double m = nearbyint(a * P10[q]);
    if (m >= 1e15 && q > 0) m = nearbyint(a * P10[--q]); /* log10 rounded across a power of ten */
    return m >= 1e14 && m < 1e15 && m / P10[q] == a;
}

static bool stringify_rec(const jn_value *v, bool pretty, int level, gg_strbuf *b,
                          gg_error *err) {
    char num[40];
    if (level > 10000) {
        gg_error_set(err, "D1011", "Stack overflow");
        return false;
    }
    switch (jn_type_of(v)) {
    case JN_UNDEFINED:
    case JN_NULL: gg_strbuf_puts(b, "null"); break;
    case JN_BOOL: gg_strbuf_puts(b, v->u.b ? "true" : "false"); break;
    case JN_NUMBER: {
        double d = v->u.n;
        if (!isfinite(d)) {
            /* inside a structure NaN is JSON.stringify's null; an infinite number is D1001 */
            if (level > 0 && isnan(d)) {
                gg_strbuf_puts(b, "null");
                break;
            }
            if (level == 0) gg_error_set(err, "D3001", "Attempting to invoke string function on Infinity or NaN");
            else gg_error_set(err, "D1001", "Number out of range: null");
            return false;
        }
        /* the reference rounds non-integers to 15 significant digits */
        if (d != floor(d) && !has_15_digits(d)) {
            snprintf(num, sizeof num, "%.15g", d);
            d = strtod(num, NULL);
        }
        jsonata_format_double(d, num, sizeof num);
        gg_strbuf_puts(b, num);
        break;
    }
    case JN_STRING: put_json_string(b, v->u.str.s, v->u.str.len); break;
    case JN_FUNCTION:
    case JN_REGEX: gg_strbuf_puts(b, "\"\""); break;
    case JN_ARRAY: {
        if (v->u.arr.n == 0) {
            gg_strbuf_puts(b, "[]");
            break;
        }
        gg_strbuf_putc(b, '[');
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i) gg_strbuf_putc(b, ',');
            put_indent(b, pretty, level + 1);
            if (!stringify_rec(v->u.arr.items[i], pretty, level + 1, b, err)) return false;
        }
        put_indent(b, pretty, level);
        gg_strbuf_putc(b, ']');
        break;
    }
    case JN_OBJECT: {
        bool first = true;
        if (!jn_force((jn_value *)v)) {
            jn_oom(err);
            return false;
        }
        gg_strbuf_putc(b, '{');
        for (size_t i = 0; i < v->u.obj.n; i++) {
            const jn_value *x = v->u.obj.ents[i].val;
            if (!x) continue;
            if (!first) gg_strbuf_putc(b, ',');
            first = false;
            put_indent(b, pretty, level + 1);
            put_json_string(b, v->u.obj.ents[i].key->u.str.s, v->u.obj.ents[i].key->u.str.len);
            gg_strbuf_puts(b, pretty ? ": " : ":");
            if (!stringify_rec(x, pretty, level + 1, b, err)) return false;
        }
        if (!first) put_indent(b, pretty, level);
        gg_strbuf_putc(b, '}');
        break;
    }
    }
    return true;
}

bool jn_stringify(const jn_value *v, bool pretty, gg_strbuf *out, gg_error *err) {
    if (!stringify_rec(v, pretty, 0, out, err)) return false;
    if (out->oom) {
        jn_oom(err);
        return false;
    }
    return true;
}

jn_value *jn_to_string(jn_call *call, const jn_value *v, bool pretty, gg_error *err) {
    (void)call;
    if (!v) return NULL;
    if (v->type == JN_STRING) return jn_incref((jn_value *)v);
    if (v->type == JN_FUNCTION || v->type == JN_REGEX) {
        jn_value *e = jn_string("", 0); /* the reference's replacer turns a function into "" */
        if (!e) jn_oom(err);
        return e;
    }
    gg_strbuf b = GG_STRBUF_INIT;
    if (!jn_stringify(v, pretty, &b, err)) {
        gg_strbuf_free(&b);
        return NULL;
    }
    jn_value *s = jn_strbuf_to_string(&b);
    if (!s) jn_oom(err);
    return s;
}

/* ---- equality, truthiness ---- */
bool jn_deep_equal(const jn_value *a, const jn_value *b) {
    if (a == b) return !(a && a->type == JN_NUMBER && isnan(a->u.n)); /* NaN === NaN is false */
    if (!a || !b) return false;
    if (a->type != b->type) return false;
    switch ((jn_type)a->type) {
    case JN_NULL: return true;
    case JN_BOOL: return a->u.b == b->u.b;
    case JN_NUMBER: return a->u.n == b->u.n;
    case JN_STRING:
        return a->u.str.len == b->u.str.len && memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0;
    case JN_ARRAY:
        if (a->u.arr.n != b->u.arr.n) return false;
        for (size_t i = 0; i < a->u.arr.n; i++)
            if (!jn_deep_equal(a->u.arr.items[i], b->u.arr.items[i])) return false;
        return true;
    case JN_OBJECT:
        if (!jn_force((jn_value *)a) || !jn_force((jn_value *)b)) return false;
        if (a->u.obj.n != b->u.obj.n) return false;
        for (size_t i = 0; i < a->u.obj.n; i++) {
            const jn_value *k = a->u.obj.ents[i].key;
            long e = find_key(b, k->u.str.s, k->u.str.len);
            if (e < 0 || !jn_deep_equal(a->u.obj.ents[i].val, b->u.obj.ents[e].val)) return false;
        }
        return true;
    default: return false;
    }
}

bool jn_truth_meets_infinity(const jn_value *v) {
    if (!v) return false;
    if (v->type == JN_NUMBER) return isinf(v->u.n);
    if (v->type != JN_ARRAY) return false;
    for (size_t i = 0; i < v->u.arr.n; i++)
        if (jn_truth_meets_infinity(v->u.arr.items[i])) return true;
    return false;
}

bool jn_truthy(const jn_value *v) {
    switch (jn_type_of(v)) {
    case JN_UNDEFINED:
    case JN_NULL: return false;
    case JN_BOOL: return v->u.b;
    case JN_NUMBER: return v->u.n != 0 && !isnan(v->u.n);
    case JN_STRING: return v->u.str.len > 0;
    case JN_ARRAY:
        if (v->u.arr.n == 1) return jn_truthy(v->u.arr.items[0]);
        for (size_t i = 0; i < v->u.arr.n; i++)
            if (jn_truthy(v->u.arr.items[i])) return true;
        return false;
    case JN_OBJECT: return v->u.obj.lazy ? json_object_size(v->u.obj.lazy) > 0 : v->u.obj.n > 0;
    case JN_FUNCTION:
    case JN_REGEX: return false;
    }
    return false;
}

size_t jn_str_u16_to_byte(const jn_value *s, size_t u16) {
    size_t n = 0, i = 0;
    const char *p = s->u.str.s;
    size_t len = s->u.str.len;
    while (i < len && n < u16) {
        unsigned char c = (unsigned char)p[i];
        size_t w = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        n += (w == 4) ? 2 : 1;
        i += w;
    }
    return i > len ? len : i;
}

size_t jn_str_byte_to_u16(const jn_value *s, size_t byte) {
    if (byte > s->u.str.len) byte = s->u.str.len;
    return gg_utf16_len(s->u.str.s, byte);
}

/* ---- regex ---- */
/* JavaScript regex syntax (\s, \S, ".", "[" in a class) is rewritten for PCRE2 by
 * gg_ecma_regex_to_pcre2 (util.h). */
jn_regex *jn_regex_compile(const char *pattern, size_t len, const char *flags, gg_error *err) {
    uint32_t opts = PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_MATCH_INVALID_UTF;
    jn_regex *re = calloc(1, sizeof *re);
    if (!re) {
        jn_oom(err);
        return NULL;
    }
    size_t fi = 0;
    for (const char *f = flags; f && *f && fi < 3; f++) {
        if (*f == 'i') opts |= PCRE2_CASELESS;
        else if (*f == 'm') opts |= PCRE2_MULTILINE;
        re->flags[fi++] = *f;
    }
    re->source = malloc(len + 1);
    if (!re->source) {
        free(re);
        jn_oom(err);
        return NULL;
    }
    memcpy(re->source, pattern, len);
    re->source[len] = '\0';
    int ec;
    PCRE2_SIZE eo;
    size_t plen = len;
    char *rewritten = gg_ecma_regex_to_pcre2(pattern, len, &plen);
    if (!rewritten) {
        free(re->source);
        free(re);
        jn_oom(err);
        return NULL;
    }
    /* JavaScript accepts [] (matches nothing) and [^] (any character) */
    re->code = pcre2_compile((PCRE2_SPTR)rewritten, plen, opts | PCRE2_ALT_BSUX | PCRE2_ALLOW_EMPTY_CLASS,
                             &ec, &eo, NULL);
    free(rewritten);
    if (!re->code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        gg_error_set(err, "S0301", "Invalid regular expression: %s", (char *)msg);
        free(re->source);
        free(re);
        return NULL;
    }
    pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
    return re;
}

void jn_regex_free(jn_regex *re) {
    if (!re) return;
    pcre2_code_free(re->code);
    free(re->source);
    free(re);
}

jn_value *jn_regex_value(jn_regex *re) {
    jn_value *v = alloc_value(JN_REGEX);
    if (!v) {
        jn_regex_free(re);
        return NULL;
    }
    v->u.re = re;
    return v;
}
