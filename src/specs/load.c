/* load.c — reading a specs directory: list the files, parse each YAML file, validate it
 * against the JSON Schema and the rules a schema cannot express (defaults that match their
 * type, options, range and pattern; examples that only use declared names; file names that
 * match node_type/subtype), and resolve the shared configurations of _common.yaml into a
 * self-contained document per spec. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "specs/internal.h"
#include "jsonschema/jsonschema.h"
#include "util/regex.h"

#include <dirent.h>
#include <pcre2.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* GRAPH first: graphgate's own node types, the only ones a graphgate graph can use; the
 * other eight families are the seed's generic workflow catalog, kept as a reference. */
const char *const specs_node_types[SPECS_NTYPES] = {
    "GRAPH", "TRIGGER", "AI_AGENT", "ACTION", "EXTERNAL_ACTION", "FLOW",
    "HUMAN_IN_THE_LOOP", "TOOL", "MEMORY",
};

/* See specs.h. */
int specs_type_index(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < SPECS_NTYPES; i++)
        if (strcmp(name, specs_node_types[i]) == 0) return i;
    return -1;
}

/* ---- listing and reading ------------------------------------------------------------- */

typedef struct file_list {
    char **rel; /* "TYPE/SUBTYPE.yaml", sorted */
    size_t n, cap;
} file_list;

static void file_list_free(file_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->rel[i]);
    free(l->rel);
    memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

static bool file_list_add(file_list *l, const char *type, const char *name, gg_error *err) {
    if (l->n >= SPECS_MAX_FILES) {
        gg_error_set(err, "too_large", "more than %d spec files", SPECS_MAX_FILES);
        return false;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 128;
        char **p = realloc(l->rel, cap * sizeof *p);
        if (!p) return gg_error_set(err, "oom", "out of memory"), false;
        l->rel = p;
        l->cap = cap;
    }
    char *rel = NULL;
    if (asprintf(&rel, "%s/%s", type, name) < 0) return gg_error_set(err, "oom", "out of memory"), false;
    l->rel[l->n++] = rel;
    return true;
}

/* Every TYPE/<file>.yaml under dir. A directory that is not a node family is an error (a
 * misspelt family would otherwise be silently ignored). */
static bool list_spec_files(const char *dir, file_list *out, gg_error *err) {
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d) {
        gg_error_set(err, "not_found", "cannot open specs directory %s", dir);
        return false;
    }
    struct dirent *e;
    bool ok = true;
    while (ok && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || e->d_name[0] == '_') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (specs_type_index(e->d_name) < 0) {
            gg_error_set(err, "invalid_spec", "directory '%s' is not a node type (one of TRIGGER, AI_AGENT, "
                         "ACTION, EXTERNAL_ACTION, FLOW, HUMAN_IN_THE_LOOP, TOOL, MEMORY, GRAPH)", e->d_name);
            gg_error_set_path(err, path);
            ok = false;
            break;
        }
        DIR *sd = opendir(path);
        if (!sd) continue;
        struct dirent *f;
        while (ok && (f = readdir(sd)) != NULL) {
            if (f->d_name[0] == '.') continue;
            if (!ends_with(f->d_name, ".yaml") && !ends_with(f->d_name, ".yml")) continue;
            ok = file_list_add(out, e->d_name, f->d_name, err);
        }
        closedir(sd);
    }
    closedir(d);
    if (!ok) {
        file_list_free(out);
        return false;
    }
    if (out->n) qsort(out->rel, out->n, sizeof *out->rel, cmp_str);
    return true;
}

static char *read_file(const char *path, size_t max, size_t *len, gg_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        gg_error_set(err, "not_found", "cannot read %s", path);
        return NULL;
    }
    gg_strbuf b = GG_STRBUF_INIT;
    char chunk[16384];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n > max) {
            fclose(f);
            gg_strbuf_free(&b);
            gg_error_set(err, "too_large", "%s is larger than %zu bytes", path, max);
            return NULL;
        }
        gg_strbuf_append(&b, chunk, n);
    }
    bool rerr = ferror(f);
    fclose(f);
    if (rerr || b.oom) {
        gg_strbuf_free(&b);
        gg_error_set(err, rerr ? "io" : "oom", "cannot read %s", path);
        return NULL;
    }
    *len = b.len;
    return gg_strbuf_take(&b);
}

/* See specs.h. */
bool specs_dir_checksum(const char *dir, const char *schema_path, char out[65], gg_error *err) {
    file_list l;
    if (!list_spec_files(dir, &l, err)) return false;
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    bool ok = true;
    for (size_t i = 0; i <= l.n + 1 && ok; i++) {
        char path[4096];
        const char *name;
        if (i == l.n) name = "_common.yaml";
        else if (i == l.n + 1) name = "schema";
        else name = l.rel[i];
        if (i == l.n + 1) snprintf(path, sizeof path, "%s", schema_path);
        else snprintf(path, sizeof path, "%s/%s", dir, name);
        size_t len = 0;
        gg_error ignored = GG_ERROR_INIT;
        char *text = read_file(path, SPECS_MAX_FILE_BYTES, &len, &ignored);
        if (!text) {
            bool missing = strcmp(ignored.code, "not_found") == 0 && i == l.n;
            if (!missing) gg_error_move(err, &ignored), ok = false;
            gg_error_clear(&ignored);
            continue;
        }
        char head[64];
        int hn = snprintf(head, sizeof head, "%zu:", len);
        crypto_hash_sha256_update(&st, (const unsigned char *)name, strlen(name) + 1);
        crypto_hash_sha256_update(&st, (const unsigned char *)head, (size_t)hn);
        crypto_hash_sha256_update(&st, (const unsigned char *)text, len);
        free(text);
    }
    file_list_free(&l);
    if (!ok) return false;
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&st, h);
    sodium_bin2hex(out, 65, h, sizeof h);
    return true;
}

/* ---- error reporting ----------------------------------------------------------------- */

typedef struct load_ctx {
    const char *dir;
    specs_error_fn on_error;
    void *user;
    gg_error *first;
    int count;
    /* the file being checked */
    const char *file;      /* full path */
    const specs_doc *doc;
} load_ctx;

static void report(load_ctx *c, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(load_ctx *c, const char *pointer, const char *fmt, ...) {
    gg_error e = GG_ERROR_INIT;
    va_list ap;
    va_start(ap, fmt);
    gg_error_vset(&e, "invalid_spec", fmt, ap);
    va_end(ap);
    gg_error_set_path(&e, c->file);
    if (c->doc && pointer) {
        int line, col;
        specs_doc_position(c->doc, pointer, &line, &col);
        gg_error_set_pos(&e, line, col);
    }
    c->count++;
    if (c->on_error && c->count <= SPECS_MAX_ERRORS) c->on_error(c->user, &e);
    if (!gg_error_is_set(c->first)) gg_error_move(c->first, &e);
    gg_error_clear(&e);
}

static void report_error(load_ctx *c, const gg_error *src) {
    gg_error e = GG_ERROR_INIT;
    gg_error_set(&e, strcmp(src->code, "oom") == 0 ? "oom" : "invalid_spec", "%s",
                 src->message ? src->message : src->code);
    gg_error_set_path(&e, c->file);
    gg_error_set_pos(&e, src->line, src->column);
    c->count++;
    if (c->on_error && c->count <= SPECS_MAX_ERRORS) c->on_error(c->user, &e);
    if (!gg_error_is_set(c->first)) gg_error_move(c->first, &e);
    gg_error_clear(&e);
}

static void schema_error(void *user, const char *pointer, const char *message) {
    report((load_ctx *)user, pointer, "%s%s%s", pointer[0] ? pointer : "(document)", ": ", message);
}

/* ---- value checks a schema cannot express ------------------------------------------- */

static bool value_has_type(const char *type, json_t *v) {
    if (!strcmp(type, "string")) return json_is_string(v);
    if (!strcmp(type, "integer")) return json_is_integer(v);
    if (!strcmp(type, "float") || !strcmp(type, "number")) return json_is_number(v);
    if (!strcmp(type, "boolean")) return json_is_boolean(v);
    if (!strcmp(type, "object")) return json_is_object(v);
    if (!strcmp(type, "array")) return json_is_array(v);
    return true; /* json: anything */
}

static bool in_options(json_t *options, json_t *v) {
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o) if (json_equal(o, v)) return true;
    return false;
}

/* Compile a validation_pattern (PCRE2, UTF); NULL and a message on failure. */
static pcre2_code *compile_pattern(const char *pattern, char *msg, size_t msg_size) {
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code, &off, NULL);
    if (!re) {
        PCRE2_UCHAR buf[160];
        pcre2_get_error_message(code, buf, sizeof buf);
        snprintf(msg, msg_size, "%s at offset %zu", (const char *)buf, (size_t)off);
    }
    return re;
}

static bool pattern_matches(pcre2_code *re, const char *s) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) return false;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0, md, gg_regex_context(GG_REGEX_SCHEMA));
    pcre2_match_data_free(md);
    return rc >= 0;
}

/* Check one parameter definition p (already schema-valid); value is the default to check
 * (p's own or an override), reported at pointer. */
static void check_default(load_ctx *c, const char *name, json_t *p, json_t *value, const char *pointer) {
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!type || !value) return;
    if (!value_has_type(type, value) && !(json_is_null(value) && !strcmp(type, "json"))) {
        report(c, pointer, "default of '%s' does not have type %s", name, type);
        return;
    }
    json_t *options = json_object_get(p, "options");
    if (json_is_array(options)) {
        if (json_is_array(value) && strcmp(type, "array") == 0) {
            size_t i;
            json_t *x;
            json_array_foreach(value, i, x) if (!in_options(options, x)) {
                report(c, pointer, "default of '%s' contains a value that is not one of its options", name);
                break;
            }
        } else if (!in_options(options, value)) {
            report(c, pointer, "default of '%s' is not one of its options", name);
        }
    }
    if (json_is_number(value)) {
        double v = json_number_value(value);
        json_t *mn = json_object_get(p, "min"), *mx = json_object_get(p, "max");
        if (mn && v < json_number_value(mn)) report(c, pointer, "default of '%s' is below min", name);
        if (mx && v > json_number_value(mx)) report(c, pointer, "default of '%s' is above max", name);
    }
    const char *pattern = json_string_value(json_object_get(p, "validation_pattern"));
    if (pattern && json_is_string(value)) {
        char msg[200];
        pcre2_code *re = compile_pattern(pattern, msg, sizeof msg);
        if (re) {
            if (!pattern_matches(re, json_string_value(value)))
                report(c, pointer, "default of '%s' does not match validation_pattern", name);
            pcre2_code_free(re);
        }
    }
}

static void check_param(load_ctx *c, const char *section, const char *name, json_t *p) {
    char ptr[512];
    json_t *mn = json_object_get(p, "min"), *mx = json_object_get(p, "max");
    if (mn && mx && json_number_value(mn) > json_number_value(mx)) {
        snprintf(ptr, sizeof ptr, "/%s/%s/min", section, name);
        report(c, ptr, "'%s': min is greater than max", name);
    }
    const char *pattern = json_string_value(json_object_get(p, "validation_pattern"));
    if (pattern) {
        char msg[200];
        pcre2_code *re = compile_pattern(pattern, msg, sizeof msg);
        if (!re) {
            snprintf(ptr, sizeof ptr, "/%s/%s/validation_pattern", section, name);
            report(c, ptr, "'%s': validation_pattern does not compile: %s", name, msg);
        }
        pcre2_code_free(re);
    }
    snprintf(ptr, sizeof ptr, "/%s/%s/default", section, name);
    check_default(c, name, p, json_object_get(p, "default"), ptr);
}

static void check_section(load_ctx *c, json_t *doc, const char *section) {
    const char *k;
    json_t *p;
    json_object_foreach(json_object_get(doc, section), k, p) check_param(c, section, k, p);
}

/* Example names must be declared: configurations (own or shared), inputs, outputs. */
static void check_examples(load_ctx *c, json_t *doc, json_t *configs) {
    static const struct { const char *field, *section; } map[] = {
        {"configurations", NULL}, {"input_example", "input_params"}, {"expected_outputs", "output_params"}};
    size_t i;
    json_t *ex;
    json_array_foreach(json_object_get(doc, "examples"), i, ex) {
        for (size_t m = 0; m < 3; m++) {
            json_t *declared = map[m].section ? json_object_get(doc, map[m].section) : configs;
            const char *k;
            json_t *v;
            json_object_foreach(json_object_get(ex, map[m].field), k, v) {
                if (json_object_get(declared, k)) continue;
                char ptr[512];
                snprintf(ptr, sizeof ptr, "/examples/%zu/%s/%s", i, map[m].field, k);
                report(c, ptr, "example uses '%s', which is not declared in %s", k,
                       map[m].section ? map[m].section : "configurations");
            }
        }
    }
}

/* ---- resolution ---------------------------------------------------------------------- */

/* A parameter with "required" spelled out (readers should not need to know the default). */
static json_t *normalize_param(json_t *p) {
    json_t *q = gg_json_clone(p);
    if (q && !json_object_get(q, "required")) json_object_set_new(q, "required", json_false());
    return q;
}

static json_t *normalize_section(json_t *section) {
    json_t *out = json_object();
    const char *k;
    json_t *p;
    json_object_foreach(section, k, p) json_object_set_new(out, k, normalize_param(p));
    return out;
}

/* The resolved document for one spec file (see load_dir); NULL after reporting errors. */
static json_t *resolve(load_ctx *c, json_t *doc, json_t *common, const char *rel) {
    json_t *configs = normalize_section(json_object_get(doc, "configurations"));
    if (!configs) return NULL;
    size_t i;
    json_t *ref;
    json_array_foreach(json_object_get(doc, "common_configurations"), i, ref) {
        const char *name = json_is_string(ref) ? json_string_value(ref)
                                               : json_string_value(json_object_get(ref, "ref"));
        char ptr[128];
        snprintf(ptr, sizeof ptr, "/common_configurations/%zu", i);
        json_t *def = json_object_get(common, name);
        if (!def) {
            report(c, ptr, "'%s' is not defined in _common.yaml", name);
            continue;
        }
        if (json_object_get(configs, name)) {
            report(c, ptr, "'%s' is both a shared and an own configuration", name);
            continue;
        }
        json_t *p = normalize_param(def);
        if (!p) break;
        if (json_is_object(ref)) {
            json_t *value = json_object_get(ref, "default");
            snprintf(ptr, sizeof ptr, "/common_configurations/%zu/default", i);
            check_default(c, name, p, value, ptr);
            json_object_set(p, "default", value);
        }
        json_object_set_new(configs, name, p);
    }
    check_examples(c, doc, configs);
    json_t *in_ports = json_object_get(doc, "input_ports"), *out_ports = json_object_get(doc, "output_ports");
    in_ports = in_ports ? json_incref(in_ports) : json_array();
    out_ports = out_ports ? json_incref(out_ports) : json_array();
    json_t *out = json_pack("{s:O, s:O, s:O, s:O, s:o, s:o, s:o, s:o, s:o, s:O}",
                            "node_type", json_object_get(doc, "node_type"),
                            "subtype", json_object_get(doc, "subtype"),
                            "version", json_object_get(doc, "version"),
                            "description", json_object_get(doc, "description"),
                            "configurations", configs,
                            "input_params", normalize_section(json_object_get(doc, "input_params")),
                            "output_params", normalize_section(json_object_get(doc, "output_params")),
                            "input_ports", in_ports, "output_ports", out_ports,
                            "tags", json_object_get(doc, "tags"));
    if (!out) return NULL;
    json_t *attached = json_object_get(doc, "attached_nodes");
    if (attached) json_object_set(out, "attached_nodes", attached);
    json_object_set(out, "examples", json_object_get(doc, "examples"));
    json_object_set_new(out, "source_path", json_string(rel));
    return out;
}

/* Parse, validate and resolve one file; appends to resolved on success. */
static void load_one(load_ctx *c, const char *rel, mcp_schema *schema, json_t *common, json_t *resolved) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", c->dir, rel);
    c->file = path;
    c->doc = NULL;
    gg_error e = GG_ERROR_INIT;
    size_t len = 0;
    char *text = read_file(path, SPECS_MAX_FILE_BYTES, &len, &e);
    specs_doc doc;
    if (!text || !specs_yaml_parse(text, len, &doc, &e)) {
        report_error(c, &e);
        gg_error_clear(&e);
        free(text);
        return;
    }
    free(text);
    c->doc = &doc;
    int before = c->count;
    mcp_schema_validate_all(schema, doc.root, 20, schema_error, c);
    if (c->count == before) {
        /* the file name is the identity: TYPE/SUBTYPE.yaml */
        char type[64] = "", sub[128] = "";
        const char *slash = strchr(rel, '/');
        snprintf(type, sizeof type, "%.*s", (int)(slash - rel), rel);
        snprintf(sub, sizeof sub, "%s", slash + 1);
        char *dot = strrchr(sub, '.');
        if (dot) *dot = '\0';
        const char *nt = json_string_value(json_object_get(doc.root, "node_type"));
        const char *st = json_string_value(json_object_get(doc.root, "subtype"));
        if (strcmp(nt, type) != 0) report(c, "/node_type", "node_type %s does not match its directory %s", nt, type);
        if (strcmp(st, sub) != 0) report(c, "/subtype", "subtype %s does not match its file name %s", st, sub);
        check_section(c, doc.root, "configurations");
        check_section(c, doc.root, "input_params");
        check_section(c, doc.root, "output_params");
        json_t *r = resolve(c, doc.root, common, rel);
        if (r && c->count == before) json_array_append_new(resolved, r);
        else json_decref(r);
    }
    specs_doc_free(&doc);
    c->doc = NULL;
}

static mcp_schema *compile_schema_file(const char *schema_path, json_t **root_out, mcp_schema **common_out,
                                       gg_error *err) {
    json_error_t je;
    json_t *root = json_load_file(schema_path, 0, &je);
    if (!root) {
        gg_error_set(err, "invalid_schema", "%s: %s", schema_path, je.text);
        gg_error_set_pos(err, je.line, je.column);
        return NULL;
    }
    mcp_schema *s = mcp_schema_compile(root, err);
    json_t *wrap = json_pack("{s:O, s:s}", "$defs", json_object_get(root, "$defs"), "$ref", "#/$defs/common_file");
    mcp_schema *cs = s && wrap ? mcp_schema_compile(wrap, err) : NULL;
    json_decref(wrap);
    if (!s || !cs) {
        mcp_schema_free(s);
        mcp_schema_free(cs);
        json_decref(root);
        if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    *root_out = root;
    *common_out = cs;
    return s;
}

/* Load _common.yaml (optional) → its "configurations" object (new reference). */
static json_t *load_common(load_ctx *c, mcp_schema *cs) {
    char path[4096];
    snprintf(path, sizeof path, "%s/_common.yaml", c->dir);
    c->file = path;
    gg_error e = GG_ERROR_INIT;
    size_t len = 0;
    char *text = read_file(path, SPECS_MAX_FILE_BYTES, &len, &e);
    if (!text) {
        gg_error_clear(&e);
        return json_object(); /* no shared configurations */
    }
    specs_doc doc;
    if (!specs_yaml_parse(text, len, &doc, &e)) {
        free(text);
        report_error(c, &e);
        gg_error_clear(&e);
        return NULL;
    }
    free(text);
    c->doc = &doc;
    int before = c->count;
    mcp_schema_validate_all(cs, doc.root, 20, schema_error, c);
    if (c->count == before) check_section(c, doc.root, "configurations");
    json_t *out = c->count == before ? json_incref(json_object_get(doc.root, "configurations")) : NULL;
    specs_doc_free(&doc);
    c->doc = NULL;
    return out;
}

/* Validate and resolve every spec of dir into a JSON array (new reference), or NULL with
 * the errors reported. Used by specs_registry_load_dir. */
json_t *specs_load_dir_resolved(const char *dir, const char *schema_path, specs_error_fn on_error,
                                void *user, gg_error *err);
json_t *specs_load_dir_resolved(const char *dir, const char *schema_path, specs_error_fn on_error,
                                void *user, gg_error *err) {
    json_t *schema_root = NULL;
    mcp_schema *cs = NULL;
    mcp_schema *schema = compile_schema_file(schema_path, &schema_root, &cs, err);
    if (!schema) return NULL;
    file_list files;
    if (!list_spec_files(dir, &files, err)) {
        mcp_schema_free(schema);
        mcp_schema_free(cs);
        json_decref(schema_root);
        return NULL;
    }
    load_ctx c = {.dir = dir, .on_error = on_error, .user = user, .first = err};
    json_t *resolved = json_array();
    json_t *common = load_common(&c, cs);
    if (common && resolved)
        for (size_t i = 0; i < files.n; i++) load_one(&c, files.rel[i], schema, common, resolved);
    if (c.count == 0 && files.n == 0) {
        gg_error_set(err, "invalid_spec", "no spec files (TYPE/SUBTYPE.yaml) in %s", dir);
        c.count = 1;
    }
    if (c.count > 0 && err->message) {
        char *m = NULL;
        if (asprintf(&m, "%s (%d error%s in total)", err->message, c.count, c.count == 1 ? "" : "s") >= 0) {
            free(err->message);
            err->message = m;
        }
    }
    json_decref(common);
    file_list_free(&files);
    mcp_schema_free(schema);
    mcp_schema_free(cs);
    json_decref(schema_root);
    if (c.count > 0 || !resolved) {
        json_decref(resolved);
        if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    return resolved;
}
