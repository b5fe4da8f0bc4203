/* specs.h — the node-spec knowledge service: a registry of node specifications (GRAPH first)
 * loaded from specs/<TYPE>/<SUBTYPE>.yaml, validated against schema/node-spec.schema.json,
 * persisted in the store (node_specs + FTS5) and served by three tools (get_node_types,
 * get_node_details, search_nodes) through an MCP provider and the REST endpoints of the
 * node knowledge server design (/mcp/tools, /mcp/tools/{name}, /mcp/invoke, /mcp/health,
 * /internal/tools, /internal/invoke).
 *
 * Ownership: the registry owns every spec and every pre-serialized string; a load builds a
 * complete new snapshot and swaps it in atomically, so readers never see a half-loaded
 * registry and a failed load leaves the previous content in place. Callers own what the
 * functions return (free with the matching *_free / gg_strbuf_free / json_decref). The
 * registry borrows the store (may be NULL) for its whole life.
 *
 * Threads: every function may be called from any thread; tool calls only take a reference
 * to the current snapshot and copy bytes.
 */
#ifndef GG_SPECS_H
#define GG_SPECS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "mcp/provider.h"
#include "util/util.h"

struct gg_store;
struct gg_app;
struct gg_auth;

/* The node families, in the order get_node_types lists them. */
#define SPECS_NTYPES 9
extern const char *const specs_node_types[SPECS_NTYPES];
/* Index of a node family name in specs_node_types, -1 when unknown. */
int specs_type_index(const char *name);

/* Limits. */
#define SPECS_MAX_FILES 2000           /* spec files per directory */
#define SPECS_MAX_FILE_BYTES (1 << 20) /* bytes per YAML file */
#define SPECS_MAX_DEPTH 48             /* YAML nesting */
#define SPECS_MAX_BATCH 100            /* nodes per get_node_details call */
#define SPECS_MAX_ERRORS 100           /* errors reported per load */

typedef struct specs_registry specs_registry;

/* An empty registry. store may be NULL (then search_nodes answers with an error and
 * nothing is persisted). NULL on OOM. */
specs_registry *specs_registry_new(struct gg_store *store);
/* Reference counting: providers hold one, so a call in flight at shutdown keeps the registry
 * alive. specs_registry_free drops the caller's reference. */
specs_registry *specs_registry_ref(specs_registry *r);
void specs_registry_free(specs_registry *r);

/* Called for every problem found while loading (file:line:col in e). */
typedef void (*specs_error_fn)(void *user, const gg_error *e);

/* Validate and load every spec of dir (TYPE/SUBTYPE.yaml files plus _common.yaml) against
 * the JSON Schema at schema_path. All files are checked and every error is reported
 * through on_error (may be NULL); err gets the first one (code "invalid_spec", path/line/
 * column set) and the count. On any error the registry keeps its previous content. */
bool specs_registry_load_dir(specs_registry *r, const char *dir, const char *schema_path,
                             specs_error_fn on_error, void *user, gg_error *err);
/* Load already-resolved specs (the documents persisted in node_specs.spec; borrowed). */
bool specs_registry_load_resolved(specs_registry *r, json_t *specs, const char *checksum,
                                  gg_error *err);
/* Write the current specs to node_specs (a new row per new version) and rebuild the FTS5
 * index and specs_meta, in one transaction. */
bool specs_registry_persist(specs_registry *r, const char *source_dir, gg_error *err);
/* Checksum (sha256 hex) of everything a load reads: the YAML files under dir and the
 * schema file. */
bool specs_dir_checksum(const char *dir, const char *schema_path, char out[65], gg_error *err);
/* What serve does at start: if the store's recorded checksum equals the directory's,
 * rebuild the registry from node_specs; otherwise (or when force) validate and load the
 * directory and persist it. *loaded_from_dir tells which happened (may be NULL). */
bool specs_registry_sync(specs_registry *r, const char *dir, const char *schema_path, bool force,
                         bool *loaded_from_dir, specs_error_fn on_error, void *user,
                         gg_error *err);

size_t specs_registry_count(specs_registry *r);
/* Number of specs of one family (index into specs_node_types). */
size_t specs_registry_count_type(specs_registry *r, int type_index);
/* Checksum of what is loaded ("" when empty); out must hold 65 bytes. */
void specs_registry_checksum(specs_registry *r, char out[65]);
/* The resolved spec document of TYPE/SUBTYPE (new reference) or NULL. */
json_t *specs_registry_get(specs_registry *r, const char *node_type, const char *subtype);

/* ---- tools ------------------------------------------------------------------------- */

/* A tool result in pre-serialized parts. text is the text content already escaped for a
 * JSON string (no quotes); structured is raw JSON (empty when the result has none). */
typedef struct specs_output {
    bool is_error;
    gg_strbuf text;
    gg_strbuf structured;
} specs_output;
#define SPECS_OUTPUT_INIT {false, GG_STRBUF_INIT, GG_STRBUF_INIT}
void specs_output_free(specs_output *o);

/* The tool definitions [{name, title, description, inputSchema}] (new reference). */
json_t *specs_tool_list(void);
/* Whether name is one of the tools. */
bool specs_tool_exists(const char *name);
/* Run a tool. Bad arguments and missing specs are tool results with is_error (the
 * message names what is wrong and what is valid); false + err only for an unknown tool
 * ("unknown_tool") or OOM. arguments may be NULL (= {}). */
bool specs_call(specs_registry *r, const char *tool, json_t *arguments, specs_output *out,
                gg_error *err);
/* Append the CallToolResult object for out to buf: {"content":[...],"structuredContent":
 * ...,"isError":...}, followed by extra (raw members such as "\"_tool_name\":\"x\"",
 * without a leading comma; may be NULL) before the closing brace. */
bool specs_output_serialize(const specs_output *out, const char *extra, gg_strbuf *buf);

/* The same call rendered into one exactly sized allocation (caller frees; *len its length):
 * prefix, the CallToolResult object with the members extra() appends (may be NULL; called
 * once the tool has run, e.g. to add "_execution_time_ms"), then suffix. The common
 * get_node_details call (all exact hits) references the pre-serialized entries and copies
 * each once. NULL + err exactly when specs_call fails. */
typedef void (*specs_extra_fn)(gg_strbuf *b, void *user);
char *specs_call_render(specs_registry *r, const char *tool, json_t *arguments, const char *prefix,
                        specs_extra_fn extra, void *user, const char *suffix, size_t *len, gg_error *err);

/* The registry as an MCP provider (holds a reference to r until destroyed). */
mcp_provider *specs_provider_new(specs_registry *r);

/* ---- front doors --------------------------------------------------------------------- */

/* What `graphgate serve` calls once: find the specs and schema directories, sync the
 * registry with the store (specs.load_on_start), register the REST routes of the design
 * on app->http (/mcp/tools, /mcp/tools/{tool_name}, /mcp/invoke, /mcp/health on the public
 * listener with API-key scopes; /internal/tools and /internal/invoke on the internal one)
 * and a shutdown callback that frees the registry. auth may be NULL: then the installer
 * makes its own authenticator over app->store. *registry_out (may be NULL) receives the
 * registry, e.g. for specs_provider_new at /mcp/nodes. */
bool specs_install(struct gg_app *app, struct gg_auth *auth, specs_registry **registry_out,
                   gg_error *err);

/* `graphgate specs load [DIR] | list [TYPE] | show TYPE SUBTYPE | check [DIR]`. */
int gg_cmd_specs(int argc, char **argv);

#endif
