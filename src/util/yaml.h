/* yaml.h — the positioned YAML reader graphs are built on: one YAML document into a tree
 * of nodes that remember their line:column, aliases bounded (expanded nodes, text, depth)
 * before anyone walks the tree, plain scalars resolved by the core schema
 * (gg_yaml_plain_scalar in util.h) when converted to JSON.
 *
 * Ownership: a ydoc owns every node and string in it (gg_yaml_doc_free); nodes reached through an
 * alias are shared, not copied, so never free or modify a node on its own.
 */
#ifndef GG_UTIL_YAML_H
#define GG_UTIL_YAML_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

/* Nodes aliases may add to a document once expanded, unless the caller says otherwise. */
#define GG_YAML_MAX_ALIAS_NODES 20000

typedef enum { YN_SCALAR, YN_SEQ, YN_MAP } yn_kind;

typedef struct ynode ynode;
struct ynode {
    yn_kind kind;
    int line, column;   /* 1-based */
    bool plain;         /* scalar written without quotes (so it may be a number/bool/null) */
    char *str;          /* scalar text */
    size_t len;
    ynode **items;      /* seq items; map: keys at 2i, values at 2i+1 */
    size_t count;       /* seq: items; map: pairs */
    size_t cap;
    size_t expanded;    /* nodes this one stands for once aliases are expanded (itself included) */
    size_t text;        /* bytes of scalar text it stands for once expanded */
    int height;         /* levels below and including it, aliases expanded */
    bool open;          /* still being built (an alias to it would be a cycle) */
};

typedef struct yarena yarena;
typedef struct ydoc {
    ynode *root;
    yarena *arena;
} ydoc;

/* Parse YAML (one document). On failure returns false with a positioned error; aliases may
 * add at most max_alias_nodes nodes to the document (0 = GG_YAML_MAX_ALIAS_NODES). */
bool gg_yaml_doc_parse(ydoc *d, const char *src, size_t len, size_t max_alias_nodes, gg_error *err);
/* For each key of a mapping, the index (pair number) of an earlier equal key, or -1;
 * O(n log n). Caller frees; NULL on OOM or when the map has no keys. */
long *gg_yaml_duplicate_keys(const ynode *map);
void gg_yaml_doc_free(ydoc *d);
/* Map lookup: value node for key or NULL. */
ynode *gg_yaml_get(const ynode *map, const char *key);
/* Convert to JSON using YAML 1.2 core scalar resolution. NULL + err on a non-string key or
 * expansion limits. */
json_t *gg_yaml_to_json(const ynode *n, gg_error *err);
const char *gg_yaml_kind_name(const ynode *n);
#endif
