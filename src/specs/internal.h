/* internal.h — what the files of src/specs share (not a public header).
 *
 * Ownership: a specs_doc owns its JSON value and its position table; snapshots are
 * immutable once published and freed when their last reference goes.
 */
#ifndef GG_SPECS_INTERNAL_H
#define GG_SPECS_INTERNAL_H

#include <jansson.h>
#include <pthread.h>

#include "specs/specs.h"

/* ---- YAML → JSON with source positions (yaml_json.c) ---------------------------------- */
typedef struct specs_pos {
    char *pointer; /* RFC 6901 pointer of the node ("" = root) */
    int line, column;
} specs_pos;

typedef struct specs_doc {
    json_t *root;
    specs_pos *pos;
    size_t npos, cap;
} specs_doc;

/* Parse one YAML document with util/yaml.h (core schema scalars, bounded aliases; multiple
 * documents, duplicate and non-scalar keys and nesting past SPECS_MAX_DEPTH are rejected).
 * err has code "yaml" (or "yaml_alias") with line/column. */
bool specs_yaml_parse(const char *text, size_t len, specs_doc *doc, gg_error *err);
void specs_doc_free(specs_doc *doc);
/* Position of the deepest node that is a prefix of pointer (0/0 when none). */
void specs_doc_position(const specs_doc *doc, const char *pointer, int *line, int *column);

/* ---- the snapshot --------------------------------------------------------------------- */
enum { SPECS_V_EXAMPLES = 1, SPECS_V_SCHEMAS = 2, SPECS_NVARIANTS = 4 };

typedef struct specs_bytes {
    char *p;
    size_t n;
} specs_bytes;

typedef struct specs_entry {
    char *node_type, *subtype, *version, *description, *source_path;
    int type_index;
    json_t *doc;                       /* resolved spec (immutable) */
    specs_bytes raw[SPECS_NVARIANTS];  /* serialized get_node_details entry per variant */
    specs_bytes esc[SPECS_NVARIANTS];  /* the same escaped for a JSON string */
} specs_entry;

typedef struct specs_snapshot {
    _Atomic int refcount;
    specs_entry *v;
    size_t n;
    size_t *slots;                     /* open-addressing index: entry index + 1, 0 = empty */
    size_t nslots;
    size_t count_type[SPECS_NTYPES];
    /* get_node_types results: [0] all types, [1 + t] one type. */
    specs_bytes types_raw[SPECS_NTYPES + 1];
    specs_bytes types_esc[SPECS_NTYPES + 1];
    specs_bytes available_types;       /* JSON array of the types that have specs */
    char checksum[65];
} specs_snapshot;

struct specs_registry {
    _Atomic int refs;                  /* owners: creator, providers */
    pthread_mutex_t lock;
    specs_snapshot *cur;               /* never NULL */
    struct gg_store *store;
};

/* Build a snapshot from resolved specs (array, borrowed). NULL + err on failure. */
specs_snapshot *specs_snapshot_build(json_t *specs, const char *checksum, gg_error *err);
specs_snapshot *specs_snapshot_acquire(specs_registry *r);
void specs_snapshot_release(specs_snapshot *s);
const specs_entry *specs_snapshot_find(const specs_snapshot *s, const char *type,
                                       const char *subtype);

/* ---- a tenant's downstream tools as virtual MCP_TOOL specs (virtual.c) ----------------- */
typedef struct specs_vcache specs_vcache;
specs_vcache *specs_vcache_new(void);
void specs_vcache_free(specs_vcache *c);
/* The CallToolResult of tool for a caller of tenant whose downstream catalogs give it
 * virtual specs: the global answer merged with them (new reference). NULL when the tenant
 * has none (or the arguments are for the global tool to refuse): answer globally. */
json_t *specs_virtual_call(specs_registry *r, specs_vcache *c, const char *tool, json_t *args, const char *tenant,
                           gg_error *err);

/* Levenshtein distance (ASCII case-insensitive), capped at cap. */
int specs_edit_distance(const char *a, const char *b, int cap);

#endif
