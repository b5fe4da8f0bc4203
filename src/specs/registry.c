/* registry.c — the in-memory registry: immutable snapshots of resolved specs with every
 * get_node_details entry and every get_node_types answer serialized once, at load, so a
 * tool call copies bytes. A load builds a whole new snapshot and swaps the pointer; calls in
 * flight keep the old one alive through its reference count. */
#include "specs/internal.h"
#include "store/store.h"

#include <stdatomic.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Reals print with 15 significant digits so 0.7 stays 0.7 (jansson's default is 17). */
#define SPECS_DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

json_t *specs_load_dir_resolved(const char *dir, const char *schema_path, specs_error_fn on_error,
                                void *user, gg_error *err);

/* ---- small helpers ------------------------------------------------------------------- */

/* Levenshtein distance, ASCII case-insensitive; stops counting at cap. */
int specs_edit_distance(const char *a, const char *b, int cap) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 128 || m > 128) return cap;
    int row[129];
    for (size_t j = 0; j <= m; j++) row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int prev = row[0], best = cap;
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int cur = row[j];
            int cost = (a[i - 1] | 0x20) == (b[j - 1] | 0x20) ? 0 : 1;
            int v = prev + cost;
            if (row[j] + 1 < v) v = row[j] + 1;
            if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
            row[j] = v;
            prev = cur;
            if (v < best) best = v;
        }
        if (best >= cap) return cap;
    }
    return row[m] < cap ? row[m] : cap;
}

static bool bytes_from_strbuf(specs_bytes *out, gg_strbuf *b) {
    out->n = b->len;
    out->p = gg_strbuf_take(b);
    return out->p != NULL;
}

/* raw = dump(v); esc = raw escaped. */
static bool serialize_pair(json_t *v, specs_bytes *raw, specs_bytes *esc) {
    char *s = json_dumps(v, SPECS_DUMP_FLAGS);
    if (!s) return false;
    raw->p = s;
    raw->n = strlen(s);
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_json_escape(&b, s, raw->n);
    return bytes_from_strbuf(esc, &b);
}

static void bytes_free(specs_bytes *b) {
    free(b->p);
    b->p = NULL;
    b->n = 0;
}

/* ---- the serialized get_node_details entry ------------------------------------------- */

/* A neutral value of a type, for parameters without a default. */
static json_t *zero_value(const char *type) {
    if (!type) return json_null();
    if (!strcmp(type, "string")) return json_string("");
    if (!strcmp(type, "integer")) return json_integer(0);
    if (!strcmp(type, "float") || !strcmp(type, "number")) return json_real(0.0);
    if (!strcmp(type, "boolean")) return json_false();
    if (!strcmp(type, "object")) return json_object();
    if (!strcmp(type, "array")) return json_array();
    return json_null();
}

static json_t *defaults_of(json_t *section) {
    json_t *out = json_object();
    const char *k;
    json_t *p;
    json_object_foreach(section, k, p) {
        json_t *d = json_object_get(p, "default");
        json_object_set_new(out, k, d ? json_incref(d) : zero_value(json_string_value(json_object_get(p, "type"))));
    }
    return out;
}

/* The legacy "parameters" list (ParameterDef) derived from the configurations. */
static json_t *parameters_of(json_t *configs) {
    json_t *out = json_array();
    const char *k;
    json_t *p;
    json_object_foreach(configs, k, p) {
        json_t *d = json_object_get(p, "default");
        json_t *item = json_pack("{s:s, s:O, s:O, s:O, s:O}", "name", k, "type", json_object_get(p, "type"),
                                 "required", json_object_get(p, "required") ? json_object_get(p, "required") : json_false(),
                                 "default_value", d ? d : json_null(), "description", json_object_get(p, "description"));
        if (!item) continue;
        json_t *opt = json_object_get(p, "options");
        if (opt) json_object_set(item, "enum_values", opt);
        json_t *pat = json_object_get(p, "validation_pattern");
        if (pat) json_object_set(item, "validation_pattern", pat);
        json_array_append_new(out, item);
    }
    return out;
}

/* The entry of the seed's response structure, in its field order, for one variant. */
static json_t *entry_json(json_t *doc, bool examples, bool schemas) {
    json_t *configs = json_object_get(doc, "configurations");
    json_t *in = json_object_get(doc, "input_params"), *out = json_object_get(doc, "output_params");
    json_t *e = json_object();
    if (!e) return NULL;
    json_object_set(e, "node_type", json_object_get(doc, "node_type"));
    json_object_set(e, "subtype", json_object_get(doc, "subtype"));
    json_object_set(e, "version", json_object_get(doc, "version"));
    json_object_set(e, "description", json_object_get(doc, "description"));
    json_object_set_new(e, "parameters", parameters_of(configs));
    json_object_set(e, "configurations", configs);
    if (schemas) {
        json_object_set(e, "input_params_schema", in);
        json_object_set(e, "output_params_schema", out);
    }
    json_object_set_new(e, "default_configurations", defaults_of(configs));
    json_object_set_new(e, "default_input_params", defaults_of(in));
    json_object_set_new(e, "default_output_params", defaults_of(out));
    json_object_set(e, "input_ports", json_object_get(doc, "input_ports"));
    json_object_set(e, "output_ports", json_object_get(doc, "output_ports"));
    json_object_set(e, "tags", json_object_get(doc, "tags"));
    json_t *att = json_object_get(doc, "attached_nodes");
    if (att) json_object_set(e, "attached_nodes", att);
    if (examples) json_object_set(e, "examples", json_object_get(doc, "examples"));
    return e;
}

/* ---- snapshots ----------------------------------------------------------------------- */

static uint64_t key_hash(const char *type, const char *subtype) {
    return gg_hash_add(gg_hash_sep(gg_hash_str(type), '.'), subtype);
}

static void snapshot_free(specs_snapshot *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        specs_entry *e = &s->v[i];
        free(e->node_type);
        free(e->subtype);
        free(e->version);
        free(e->description);
        free(e->source_path);
        json_decref(e->doc);
        for (int k = 0; k < SPECS_NVARIANTS; k++) {
            bytes_free(&e->raw[k]);
            bytes_free(&e->esc[k]);
        }
    }
    for (int t = 0; t <= SPECS_NTYPES; t++) {
        bytes_free(&s->types_raw[t]);
        bytes_free(&s->types_esc[t]);
    }
    bytes_free(&s->available_types);
    free(s->v);
    free(s->slots);
    free(s);
}

static char *dup_field(json_t *doc, const char *key) {
    const char *v = json_string_value(json_object_get(doc, key));
    return strdup(v ? v : "");
}

static bool entry_build(specs_entry *e, json_t *doc, gg_error *err) {
    e->doc = json_incref(doc);
    e->node_type = dup_field(doc, "node_type");
    e->subtype = dup_field(doc, "subtype");
    e->version = dup_field(doc, "version");
    e->description = dup_field(doc, "description");
    e->source_path = dup_field(doc, "source_path");
    if (!e->node_type || !e->subtype || !e->version || !e->description || !e->source_path)
        return gg_error_set(err, "oom", "out of memory"), false;
    e->type_index = specs_type_index(e->node_type);
    if (e->type_index < 0 || !e->subtype[0]) {
        gg_error_set(err, "invalid_spec", "stored spec has an invalid node_type/subtype (%s/%s)", e->node_type, e->subtype);
        return false;
    }
    for (int k = 0; k < SPECS_NVARIANTS; k++) {
        json_t *j = entry_json(doc, k & SPECS_V_EXAMPLES, k & SPECS_V_SCHEMAS);
        bool ok = j && serialize_pair(j, &e->raw[k], &e->esc[k]);
        json_decref(j);
        if (!ok) return gg_error_set(err, "oom", "out of memory"), false;
    }
    return true;
}

static int cmp_entry(const void *a, const void *b) {
    const specs_entry *x = a, *y = b;
    if (x->type_index != y->type_index) return x->type_index - y->type_index;
    return strcmp(x->subtype, y->subtype);
}

/* get_node_types answers: [0] every family with specs, [1+t] family t alone. */
static bool build_types(specs_snapshot *s) {
    json_t *all = json_object(), *avail = json_array();
    bool ok = all && avail;
    for (int t = 0; t < SPECS_NTYPES && ok; t++) {
        json_t *subs = json_array();
        for (size_t i = 0; i < s->n && subs; i++)
            if (s->v[i].type_index == t) json_array_append_new(subs, json_string(s->v[i].subtype));
        json_t *one = json_object();
        ok = subs && one && json_object_set(one, specs_node_types[t], subs) == 0 &&
             serialize_pair(one, &s->types_raw[1 + t], &s->types_esc[1 + t]);
        if (ok && json_array_size(subs) > 0) {
            json_object_set(all, specs_node_types[t], subs);
            json_array_append_new(avail, json_string(specs_node_types[t]));
        }
        json_decref(one);
        json_decref(subs);
    }
    ok = ok && serialize_pair(all, &s->types_raw[0], &s->types_esc[0]);
    if (ok) {
        char *a = json_dumps(avail, JSON_COMPACT);
        ok = a != NULL;
        s->available_types = (specs_bytes){a, a ? strlen(a) : 0};
    }
    json_decref(all);
    json_decref(avail);
    return ok;
}

/* See internal.h. Duplicate TYPE/SUBTYPE pairs are an error. */
specs_snapshot *specs_snapshot_build(json_t *specs, const char *checksum, gg_error *err) {
    specs_snapshot *s = calloc(1, sizeof *s);
    size_t n = json_array_size(specs);
    if (!s || (n && !(s->v = calloc(n, sizeof *s->v)))) {
        free(s);
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    s->refcount = 1;
    snprintf(s->checksum, sizeof s->checksum, "%s", checksum ? checksum : "");
    for (size_t i = 0; i < n; i++) {
        s->n = i + 1;
        if (!entry_build(&s->v[i], json_array_get(specs, i), err)) goto fail;
    }
    if (n) qsort(s->v, n, sizeof *s->v, cmp_entry);
    s->nslots = 16;
    while (s->nslots < n * 2 + 1) s->nslots *= 2;
    s->slots = calloc(s->nslots, sizeof *s->slots);
    if (!s->slots) goto oom;
    for (size_t i = 0; i < n; i++) {
        specs_entry *e = &s->v[i];
        if (specs_snapshot_find(s, e->node_type, e->subtype)) {
            gg_error_set(err, "invalid_spec", "%s/%s is defined twice", e->node_type, e->subtype);
            goto fail;
        }
        size_t h = (size_t)key_hash(e->node_type, e->subtype) & (s->nslots - 1);
        while (s->slots[h]) h = (h + 1) & (s->nslots - 1);
        s->slots[h] = i + 1;
        s->count_type[e->type_index]++;
    }
    if (!build_types(s)) goto oom;
    return s;
oom:
    gg_error_set(err, "oom", "out of memory");
fail:
    snapshot_free(s);
    return NULL;
}

/* Exact lookup by TYPE and SUBTYPE. */
const specs_entry *specs_snapshot_find(const specs_snapshot *s, const char *type, const char *subtype) {
    if (!s->nslots || !type || !subtype) return NULL;
    size_t h = (size_t)key_hash(type, subtype) & (s->nslots - 1);
    while (s->slots[h]) {
        const specs_entry *e = &s->v[s->slots[h] - 1];
        if (strcmp(e->subtype, subtype) == 0 && strcmp(e->node_type, type) == 0) return e;
        h = (h + 1) & (s->nslots - 1);
    }
    return NULL;
}

specs_snapshot *specs_snapshot_acquire(specs_registry *r) {
    pthread_mutex_lock(&r->lock);
    specs_snapshot *s = r->cur;
    atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed);
    pthread_mutex_unlock(&r->lock);
    return s;
}

void specs_snapshot_release(specs_snapshot *s) {
    if (s && atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) == 1) snapshot_free(s);
}

static void publish(specs_registry *r, specs_snapshot *s) {
    pthread_mutex_lock(&r->lock);
    specs_snapshot *old = r->cur;
    r->cur = s;
    pthread_mutex_unlock(&r->lock);
    specs_snapshot_release(old);
}

/* ---- the registry -------------------------------------------------------------------- */

/* See specs.h. */
specs_registry *specs_registry_new(struct gg_store *store) {
    specs_registry *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    json_t *empty = json_array();
    gg_error err = GG_ERROR_INIT;
    r->cur = empty ? specs_snapshot_build(empty, "", &err) : NULL;
    json_decref(empty);
    gg_error_clear(&err);
    if (!r->cur || pthread_mutex_init(&r->lock, NULL) != 0) {
        snapshot_free(r->cur);
        free(r);
        return NULL;
    }
    r->store = store;
    r->refs = 1;
    return r;
}

/* Drop one reference; the last one frees the registry. */
void specs_registry_free(specs_registry *r) {
    if (!r || atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) > 1) return;
    specs_snapshot_release(r->cur);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

specs_registry *specs_registry_ref(specs_registry *r) {
    if (r) atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    return r;
}

/* See specs.h. */
bool specs_registry_load_resolved(specs_registry *r, json_t *specs, const char *checksum, gg_error *err) {
    specs_snapshot *s = specs_snapshot_build(specs, checksum, err);
    if (!s) return false;
    publish(r, s);
    return true;
}

/* See specs.h. */
bool specs_registry_load_dir(specs_registry *r, const char *dir, const char *schema_path,
                             specs_error_fn on_error, void *user, gg_error *err) {
    char sum[65];
    if (!specs_dir_checksum(dir, schema_path, sum, err)) return false;
    json_t *resolved = specs_load_dir_resolved(dir, schema_path, on_error, user, err);
    if (!resolved) return false;
    bool ok = specs_registry_load_resolved(r, resolved, sum, err);
    json_decref(resolved);
    return ok;
}

size_t specs_registry_count(specs_registry *r) {
    specs_snapshot *s = specs_snapshot_acquire(r);
    size_t n = s->n;
    specs_snapshot_release(s);
    return n;
}

size_t specs_registry_count_type(specs_registry *r, int t) {
    if (t < 0 || t >= SPECS_NTYPES) return 0;
    specs_snapshot *s = specs_snapshot_acquire(r);
    size_t n = s->count_type[t];
    specs_snapshot_release(s);
    return n;
}

void specs_registry_checksum(specs_registry *r, char out[65]) {
    specs_snapshot *s = specs_snapshot_acquire(r);
    memcpy(out, s->checksum, 65);
    specs_snapshot_release(s);
}

json_t *specs_registry_get(specs_registry *r, const char *node_type, const char *subtype) {
    specs_snapshot *s = specs_snapshot_acquire(r);
    const specs_entry *e = specs_snapshot_find(s, node_type, subtype);
    json_t *doc = e ? json_incref(e->doc) : NULL;
    specs_snapshot_release(s);
    return doc;
}

/* Space-joined parameter names and string option values, for the FTS5 "params" column. */
static void param_words(json_t *doc, gg_strbuf *b) {
    static const char *const sections[] = {"configurations", "input_params", "output_params"};
    for (size_t i = 0; i < 3; i++) {
        const char *k;
        json_t *p;
        json_object_foreach(json_object_get(doc, sections[i]), k, p) {
            gg_strbuf_puts(b, k);
            gg_strbuf_putc(b, ' ');
            /* option values name operations ("send_message"): searchable too */
            size_t j;
            json_t *o;
            json_array_foreach(json_object_get(p, "options"), j, o) if (json_is_string(o)) {
                gg_strbuf_puts(b, json_string_value(o));
                gg_strbuf_putc(b, ' ');
            }
        }
    }
}

/* See specs.h. */
bool specs_registry_persist(specs_registry *r, const char *source_dir, gg_error *err) {
    if (!r->store) return gg_error_set(err, "invalid", "the registry has no store"), false;
    specs_snapshot *s = specs_snapshot_acquire(r);
    gg_store_spec_row *rows = s->n ? calloc(s->n, sizeof *rows) : NULL;
    char **texts = s->n ? calloc(s->n * 3, sizeof *texts) : NULL;
    char (*sums)[65] = s->n ? calloc(s->n, sizeof *sums) : NULL;
    bool ok = s->n == 0 || (rows && texts && sums);
    for (size_t i = 0; i < s->n && ok; i++) {
        specs_entry *e = &s->v[i];
        texts[i * 3] = json_dumps(e->doc, SPECS_DUMP_FLAGS);
        gg_strbuf tags = GG_STRBUF_INIT, params = GG_STRBUF_INIT;
        size_t k;
        json_t *t;
        json_array_foreach(json_object_get(e->doc, "tags"), k, t) {
            gg_strbuf_puts(&tags, json_string_value(t));
            gg_strbuf_putc(&tags, ' ');
        }
        param_words(e->doc, &params);
        gg_strbuf_puts(&tags, "");
        gg_strbuf_puts(&params, "");
        texts[i * 3 + 1] = gg_strbuf_take(&tags);
        texts[i * 3 + 2] = gg_strbuf_take(&params);
        ok = texts[i * 3] && texts[i * 3 + 1] && texts[i * 3 + 2];
        if (!ok) break;
        unsigned char h[crypto_hash_sha256_BYTES];
        crypto_hash_sha256(h, (const unsigned char *)texts[i * 3], strlen(texts[i * 3]));
        sodium_bin2hex(sums[i], 65, h, sizeof h);
        rows[i] = (gg_store_spec_row){e->node_type, e->subtype, e->version, texts[i * 3], e->source_path,
                                      sums[i], e->description, texts[i * 3 + 1], texts[i * 3 + 2]};
    }
    if (!ok) gg_error_set(err, "oom", "out of memory");
    else ok = gg_store_specs_replace(r->store, rows, s->n, s->checksum, source_dir, err);
    for (size_t i = 0; texts && i < s->n * 3; i++) free(texts[i]);
    free(texts);
    free(rows);
    free(sums);
    specs_snapshot_release(s);
    return ok;
}

/* See specs.h. */
bool specs_registry_sync(specs_registry *r, const char *dir, const char *schema_path, bool force,
                         bool *loaded_from_dir, specs_error_fn on_error, void *user, gg_error *err) {
    if (loaded_from_dir) *loaded_from_dir = false;
    char sum[65];
    if (!specs_dir_checksum(dir, schema_path, sum, err)) return false;
    if (!force && r->store) {
        char stored[65] = "";
        long long count = 0;
        bool found = false;
        gg_error e = GG_ERROR_INIT;
        if (gg_store_specs_meta(r->store, stored, &count, &found, &e) && found && count > 0 &&
            strcmp(stored, sum) == 0) {
            json_t *specs = gg_store_specs_current(r->store, &e);
            bool ok = specs && json_array_size(specs) == (size_t)count &&
                      specs_registry_load_resolved(r, specs, sum, &e);
            json_decref(specs);
            if (ok) {
                gg_error_clear(&e);
                return true;
            }
            gg_log(GG_LOG_WARN, "stored node specs unusable, reloading from files", "error",
                   e.message ? e.message : e.code, NULL);
        }
        gg_error_clear(&e);
    }
    if (!specs_registry_load_dir(r, dir, schema_path, on_error, user, err)) return false;
    if (loaded_from_dir) *loaded_from_dir = true;
    return r->store ? specs_registry_persist(r, dir, err) : true;
}
