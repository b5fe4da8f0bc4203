/* tools.c — the three node-knowledge tools (one implementation for every front door) and
 * the MCP provider that exposes them. Results are produced as pre-serialized parts
 * (specs_output) so the REST path can wrap them without building JSON trees. */
#include "specs/internal.h"
#include "store/store.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GG_VERSION
#define GG_VERSION "0.0.0"
#endif

#define TYPES_ENUM                                                                                 \
    "[\"GRAPH\",\"MCP_TOOL\",\"TRIGGER\",\"AI_AGENT\",\"ACTION\",\"EXTERNAL_ACTION\",\"FLOW\"," \
    "\"HUMAN_IN_THE_LOOP\",\"TOOL\",\"MEMORY\"]"
#define VALID_TYPES_TEXT \
    "GRAPH, TRIGGER, AI_AGENT, ACTION, EXTERNAL_ACTION, FLOW, HUMAN_IN_THE_LOOP, TOOL, MEMORY"
/* Search results of graphgate's own family score this many times their BM25 relevance, so
 * a node a graph can use outranks a workflow-catalog entry that matches about as well
 * ("loop over a list", "branch on a condition" → SWITCH before FLOW.LOOP/IF) while a query
 * naming a catalog node still finds it first ("http request" → HTTP_REQUEST; at 3 the
 * GRAPH nodes that send client requests would win). */
#define GRAPH_FAMILY_BOOST 2.5
/* Rows a search across families fetches before weighting (the store's maximum). */
#define SPECS_SEARCH_CANDIDATES 100

/* The tool definitions, as MCP tool objects. Descriptions say which families a graphgate
 * graph can use (GRAPH, MCP_TOOL) and which are the seed's workflow catalog, kept with the
 * design's guidance for it (HIL nodes classify replies themselves). */
static const char TOOLS_JSON[] =
    "["
    "{\"name\":\"get_node_types\",\"title\":\"List node types\","
    "\"description\":\"Get the node families and their subtypes. GRAPH comes first: graphgate's own graph "
    "node types (entry, mcp, transform, switch, exit, elicit, sample, roots, ask), the only ones a graphgate "
    "graph can use; MCP_TOOL lists the tools of your own downstream MCP servers as <server>.<tool> (called "
    "with an mcp node). The other families (TRIGGER, AI_AGENT, ACTION, EXTERNAL_ACTION, FLOW, "
    "HUMAN_IN_THE_LOOP, TOOL, MEMORY) are a generic workflow catalog kept for reference: a graphgate graph "
    "cannot use them. In that catalog HUMAN_IN_THE_LOOP nodes have built-in AI response analysis - do not "
    "add separate IF or AI_AGENT nodes for HIL response classification.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"type_filter\":{\"type\":\"string\",\"enum\":" TYPES_ENUM
    ",\"description\":\"Filter by node type (optional)\"}},\"additionalProperties\":false}},"
    "{\"name\":\"get_node_details\",\"title\":\"Get node specifications\","
    "\"description\":\"Get detailed specifications of nodes: parameters, ports and examples. For a "
    "graphgate graph ask for GRAPH nodes (subtype = the node's type in upper case, e.g. TRANSFORM, ASK) and "
    "MCP_TOOL <server>.<tool> entries; the other families are the workflow catalog, not usable in a graph "
    "(there, HUMAN_IN_THE_LOOP nodes include integrated AI response analysis with "
    "confirmed/rejected/unrelated/timeout output ports). "
    "Up to 100 nodes per call; a node_type with a _NODE suffix is corrected automatically and an unknown "
    "subtype is answered with the closest existing ones.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"nodes\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":100,\"items\":{\"type\":\"object\","
    "\"properties\":{\"node_type\":{\"type\":\"string\"},\"subtype\":{\"type\":\"string\"}},"
    "\"required\":[\"node_type\",\"subtype\"]},\"description\":\"List of nodes to get details for\"},"
    "\"include_examples\":{\"type\":\"boolean\",\"default\":true,\"description\":\"Include usage examples\"},"
    "\"include_schemas\":{\"type\":\"boolean\",\"default\":true,\"description\":\"Include input/output schemas\"}},"
    "\"required\":[\"nodes\"]}},"
    "{\"name\":\"search_nodes\",\"title\":\"Search node specifications\","
    "\"description\":\"Full-text search over node names, descriptions, tags and parameter names, ranked by "
    "relevance (BM25) with graphgate's own GRAPH nodes weighted ahead of the workflow catalog, which a "
    "graphgate graph cannot use. Use it when you know what a node should do but not its type or subtype.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"query\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200,\"description\":\"Words describing the node, "
    "e.g. 'send slack message'\"},"
    "\"type_filter\":{\"type\":\"string\",\"enum\":" TYPES_ENUM ",\"description\":\"Only this node type (optional)\"},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":50,\"default\":10,\"description\":\"Maximum results\"}},"
    "\"required\":[\"query\"]}}"
    "]";

static const char *const TOOL_NAMES[] = {"get_node_types", "get_node_details", "search_nodes"};

/* See specs.h. */
json_t *specs_tool_list(void) {
    return json_loads(TOOLS_JSON, 0, NULL);
}

bool specs_tool_exists(const char *name) {
    for (size_t i = 0; name && i < sizeof TOOL_NAMES / sizeof TOOL_NAMES[0]; i++)
        if (strcmp(name, TOOL_NAMES[i]) == 0) return true;
    return false;
}

void specs_output_free(specs_output *o) {
    if (!o) return;
    gg_strbuf_free(&o->text);
    gg_strbuf_free(&o->structured);
}

/* A tool-level failure: the message is the text content, no structuredContent. */
static bool tool_error(specs_output *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool tool_error(specs_output *out, const char *fmt, ...) {
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    out->is_error = true;
    gg_strbuf_reset(&out->text);
    gg_strbuf_reset(&out->structured);
    bool ok = n >= 0 && gg_strbuf_json_escape(&out->text, msg, (size_t)n);
    free(msg);
    return ok;
}

/* Both parts carry the same JSON: raw for structuredContent, escaped for the text block. */
static bool set_json(specs_output *out, const char *raw, size_t raw_n, const char *esc, size_t esc_n) {
    return gg_strbuf_append(&out->structured, raw, raw_n) && gg_strbuf_append(&out->text, esc, esc_n);
}

static bool set_json_value(specs_output *out, json_t *v) {
    char *s = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(15));
    if (!s) return false;
    size_t n = strlen(s);
    bool ok = gg_strbuf_append(&out->structured, s, n) && gg_strbuf_json_escape(&out->text, s, n);
    free(s);
    return ok;
}

/* type_filter: absent/null → -1; else a valid index or a tool error (returns -2). */
static int type_filter_arg(json_t *args, specs_output *out) {
    json_t *f = json_object_get(args, "type_filter");
    if (!f || json_is_null(f)) return -1;
    const char *name = json_string_value(f);
    int t = specs_type_index(name);
    if (t >= 0) return t;
    if (!name) {
        tool_error(out, "type_filter must be a string, one of: " VALID_TYPES_TEXT);
        return -2;
    }
    /* Name the closest type too: ACTION_NODE and lower case are the usual slips. */
    int best = -1, bestd = 100;
    for (int i = 0; i < SPECS_NTYPES; i++) {
        int d = specs_edit_distance(name, specs_node_types[i], 100);
        if (d < bestd) bestd = d, best = i;
    }
    bool close = bestd * 2 <= (int)strlen(name);
    tool_error(out, "Unknown type_filter '%.64s'. Valid types: " VALID_TYPES_TEXT "%s%s%s", name,
               close ? ". Did you mean " : "", close ? specs_node_types[best] : "", close ? "?" : "");
    return -2;
}

/* ---- get_node_types ------------------------------------------------------------------ */

static bool tool_get_node_types(specs_snapshot *s, json_t *args, specs_output *out) {
    int t = type_filter_arg(args, out);
    if (t == -2) return true;
    int k = t < 0 ? 0 : t + 1;
    return set_json(out, s->types_raw[k].p, s->types_raw[k].n, s->types_esc[k].p, s->types_esc[k].n);
}

/* ---- get_node_details ---------------------------------------------------------------- */

/* Upper-case copy without surrounding spaces. */
static void normalize_name(const char *in, char *out, size_t size) {
    while (*in == ' ' || *in == '\t') in++;
    size_t n = 0;
    for (; in[n] && n + 1 < size; n++) out[n] = (char)toupper((unsigned char)in[n]);
    while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t')) n--;
    out[n] = '\0';
}

/* The spec entry with a warning member appended before its closing brace. */
static bool append_with_warning(gg_strbuf *raw, gg_strbuf *esc, const specs_bytes *r, const specs_bytes *e,
                                const char *warning) {
    gg_strbuf w = GG_STRBUF_INIT;
    gg_strbuf_puts(&w, ",\"warning\":\"");
    gg_strbuf_json_escape(&w, warning, strlen(warning));
    gg_strbuf_puts(&w, "\"}");
    bool ok = !w.oom && gg_strbuf_append(raw, r->p, r->n - 1) && gg_strbuf_append(raw, w.data, w.len) &&
              gg_strbuf_append(esc, e->p, e->n - 1) && gg_strbuf_json_escape(esc, w.data, w.len);
    gg_strbuf_free(&w);
    return ok;
}

typedef struct suggestion {
    const specs_entry *e;
    int score;
} suggestion;

/* A common prefix of at least 4 characters covering half of the shorter name. */
static bool shared_prefix(const char *a, const char *b) {
    size_t n = 0, la = strlen(a), lb = strlen(b);
    while (a[n] && a[n] == b[n]) n++;
    return n >= 4 && n * 2 >= (la < lb ? la : lb);
}

/* A whole word (between underscores, 3+ letters) in both names. */
static bool shared_word(const char *a, const char *b) {
    for (const char *p = a; *p;) {
        size_t n = strcspn(p, "_");
        if (n >= 3) {
            for (const char *q = b; *q;) {
                size_t m = strcspn(q, "_");
                if (m == n && strncmp(p, q, n) == 0) return true;
                q += m + (q[m] == '_');
            }
        }
        p += n + (p[n] == '_');
    }
    return false;
}

/* Up to 3 existing specs closest to type/subtype: subtype edit distance (a containing or
 * contained name counts as 1, a long shared prefix as 2, a shared word as 3), same family
 * first. */
static size_t suggest(const specs_snapshot *s, const char *type, const char *subtype, suggestion out[3]) {
    size_t n = 0;
    int limit = (int)strlen(subtype) / 2;
    if (limit < 3) limit = 3;
    for (size_t i = 0; i < s->n; i++) {
        const specs_entry *e = &s->v[i];
        int d = specs_edit_distance(subtype, e->subtype, limit + 1);
        if (d > 1 && subtype[0] && (strstr(e->subtype, subtype) || strstr(subtype, e->subtype))) d = 1;
        if (d > 2 && shared_prefix(subtype, e->subtype)) d = 2;   /* VECTOR_DB → VECTOR_DATABASE */
        if (d > 3 && shared_word(subtype, e->subtype)) d = 3;     /* GMAIL_SEND → GMAIL */
        if (d > limit) continue;
        int score = d * 2 + (strcmp(e->node_type, type) == 0 ? 0 : 1);
        size_t pos = n < 3 ? n++ : 3;
        if (pos == 3) {
            if (score >= out[2].score) continue;
            pos = 2;
        }
        out[pos] = (suggestion){e, score};
        for (size_t j = pos; j > 0 && out[j].score < out[j - 1].score; j--) {
            suggestion tmp = out[j];
            out[j] = out[j - 1];
            out[j - 1] = tmp;
        }
    }
    return n;
}

/* The seed's "not found" entry plus our suggestions. */
static json_t *missing_entry(const specs_snapshot *s, const char *type, const char *subtype, const char *norm_type,
                             const char *norm_sub) {
    json_error_t je;
    json_t *avail = json_loadb(s->available_types.p, s->available_types.n, 0, &je);
    char msg[512];
    snprintf(msg, sizeof msg, "Node specification not found for %.100s.%.100s", type, subtype);
    json_t *e = json_pack("{s:s, s:s, s:s, s:o}", "node_type", type, "subtype", subtype, "error", msg,
                          "available_types", avail ? avail : json_array());
    if (!e) return NULL;
    int t = specs_type_index(norm_type);
    gg_strbuf hint = GG_STRBUF_INIT;
    if (t < 0) {
        gg_strbuf_printf(&hint, "'%.100s' is not a node type. Use one of available_types (upper case, no _NODE "
                         "suffix); get_node_types lists every subtype.", type);
    } else {
        gg_strbuf_printf(&hint, "Valid subtypes for %s:", specs_node_types[t]);
        size_t shown = 0;
        for (size_t i = 0; i < s->n; i++)
            if (s->v[i].type_index == t) gg_strbuf_printf(&hint, "%s %s", shown++ ? "," : "", s->v[i].subtype);
        if (!shown) gg_strbuf_puts(&hint, " none loaded");
        gg_strbuf_puts(&hint, ". Use get_node_types or search_nodes to find the right one.");
    }
    json_object_set_new(e, "hint", json_string(hint.data ? hint.data : ""));
    gg_strbuf_free(&hint);
    suggestion sg[3];
    size_t ns = suggest(s, norm_type, norm_sub, sg);
    json_t *arr = json_array();
    for (size_t i = 0; i < ns && arr; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s}", "node_type", sg[i].e->node_type, "subtype", sg[i].e->subtype));
    json_object_set_new(e, "suggestions", arr ? arr : json_array());
    return e;
}

static bool details_one(const specs_snapshot *s, json_t *item, size_t idx, int variant, gg_strbuf *raw,
                        gg_strbuf *esc, specs_output *out) {
    const char *type = json_string_value(json_object_get(item, "node_type"));
    const char *sub = json_string_value(json_object_get(item, "subtype"));
    if (!json_is_object(item) || !type || !sub)
        return tool_error(out, "nodes[%zu] must be an object with string fields node_type and subtype", idx), false;
    const specs_entry *e = specs_snapshot_find(s, type, sub);
    if (e) return gg_strbuf_append(raw, e->raw[variant].p, e->raw[variant].n) &&
                  gg_strbuf_append(esc, e->esc[variant].p, e->esc[variant].n);
    /* Auto-correction: a _NODE suffix (the seed's rule), then letter case. */
    char nt[128], ns[128];
    normalize_name(type, nt, sizeof nt);
    normalize_name(sub, ns, sizeof ns);
    size_t ntl = strlen(nt);
    bool suffix = ntl > 5 && strcmp(nt + ntl - 5, "_NODE") == 0 && specs_type_index(nt) < 0;
    if (suffix) nt[ntl - 5] = '\0';
    e = specs_snapshot_find(s, nt, ns);
    if (e) {
        char warning[512];
        if (suffix)
            snprintf(warning, sizeof warning,
                     "Auto-corrected: '%.100s' → '%s'. Please use correct format without '_NODE' suffix.", type, nt);
        else
            snprintf(warning, sizeof warning,
                     "Auto-corrected: '%.100s.%.100s' → '%s.%s'. Node types and subtypes are upper case.", type, sub,
                     e->node_type, e->subtype);
        return append_with_warning(raw, esc, &e->raw[variant], &e->esc[variant], warning);
    }
    json_t *m = missing_entry(s, type, sub, nt, ns);
    char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    if (!text) return false;
    bool ok = gg_strbuf_puts(raw, text) && gg_strbuf_json_escape(esc, text, strlen(text));
    free(text);
    return ok;
}

static bool bool_arg(json_t *args, const char *name, bool dflt, bool *value, specs_output *out) {
    json_t *v = json_object_get(args, name);
    if (!v || json_is_null(v)) return *value = dflt, true;
    if (!json_is_boolean(v)) return tool_error(out, "%s must be a boolean", name), false;
    *value = json_is_true(v);
    return true;
}

static bool tool_get_node_details(specs_snapshot *s, json_t *args, specs_output *out) {
    json_t *nodes = json_object_get(args, "nodes");
    if (!json_is_array(nodes) || json_array_size(nodes) == 0)
        return tool_error(out, "nodes must be a non-empty array of {node_type, subtype}");
    if (json_array_size(nodes) > SPECS_MAX_BATCH)
        return tool_error(out, "at most %d nodes per call (got %zu); split the request", SPECS_MAX_BATCH,
                          json_array_size(nodes));
    bool examples, schemas;
    if (!bool_arg(args, "include_examples", true, &examples, out) ||
        !bool_arg(args, "include_schemas", true, &schemas, out))
        return !out->text.oom;
    int variant = (examples ? SPECS_V_EXAMPLES : 0) | (schemas ? SPECS_V_SCHEMAS : 0);
    /* Reserve what the exact hits need so the common case grows the buffers once. */
    size_t need = 32;
    size_t i;
    json_t *item;
    json_array_foreach(nodes, i, item) {
        const specs_entry *e = specs_snapshot_find(s, json_string_value(json_object_get(item, "node_type")),
                                                   json_string_value(json_object_get(item, "subtype")));
        need += e ? e->esc[variant].n + 1 : 1024;
    }
    gg_strbuf *raw = &out->structured, *esc = &out->text;
    if (!gg_strbuf_reserve(raw, need) || !gg_strbuf_reserve(esc, need)) return false;
    gg_strbuf_puts(raw, "{\"nodes\":[");
    gg_strbuf_puts(esc, "{\\\"nodes\\\":[");
    json_array_foreach(nodes, i, item) {
        if (i) {
            gg_strbuf_putc(raw, ',');
            gg_strbuf_putc(esc, ',');
        }
        if (!details_one(s, item, i, variant, raw, esc, out)) return out->is_error && !out->text.oom;
    }
    gg_strbuf_puts(raw, "]}");
    gg_strbuf_puts(esc, "]}");
    return !raw->oom && !esc->oom;
}

/* ---- search_nodes -------------------------------------------------------------------- */

/* Words of the query as an FTS5 expression: "w1"* OR "w2"* ... (at most 16 words). Words
 * are runs of letters, digits and non-ASCII bytes, so no FTS5 syntax gets through. */
static bool fts_expression(const char *q, gg_strbuf *b) {
    int words = 0;
    for (const char *p = q; *p && words < 16;) {
        while (*p && !(isalnum((unsigned char)*p) || (unsigned char)*p >= 0x80)) p++;
        const char *start = p;
        while (*p && (isalnum((unsigned char)*p) || (unsigned char)*p >= 0x80)) p++;
        if (p == start) break;
        if (words++) gg_strbuf_puts(b, " OR ");
        gg_strbuf_putc(b, '"');
        for (const char *c = start; c < p; c++) gg_strbuf_putc(b, (char)tolower((unsigned char)*c));
        gg_strbuf_puts(b, "\"*");
    }
    return words > 0 && !b->oom;
}

/* Graphgate's own family first among comparable matches: the store ranks by relevance
 * alone, so every GRAPH score is weighted by GRAPH_FAMILY_BOOST, the rows re-sorted (stable,
 * best first) and cut to limit. The caller fetched more than limit rows, so a GRAPH entry
 * just below the cut can move up. */
static void rank_graph_first(json_t *rows, size_t limit) {
    size_t n = json_array_size(rows);
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_array_get(rows, i);
        if (strcmp(json_string_value(json_object_get(row, "node_type")), "GRAPH") == 0)
            json_object_set_new(row, "score",
                                json_real(json_number_value(json_object_get(row, "score")) * GRAPH_FAMILY_BOOST));
    }
    for (size_t i = 1; i < n; i++) /* insertion sort: at most SPECS_SEARCH_CANDIDATES rows */
        for (size_t j = i; j > 0; j--) {
            json_t *a = json_array_get(rows, j - 1), *b = json_array_get(rows, j);
            if (json_number_value(json_object_get(a, "score")) >= json_number_value(json_object_get(b, "score")))
                break;
            json_incref(a);
            json_array_set(rows, j - 1, b);
            json_array_set_new(rows, j, a);
        }
    while (json_array_size(rows) > limit) json_array_remove(rows, json_array_size(rows) - 1);
}

static bool tool_search_nodes(specs_registry *r, json_t *args, specs_output *out) {
    const char *q = json_string_value(json_object_get(args, "query"));
    if (!q || !q[0]) return tool_error(out, "query must be a non-empty string");
    if (strlen(q) > 200) return tool_error(out, "query is longer than 200 characters");
    int t = type_filter_arg(args, out);
    if (t == -2) return true;
    json_t *lim = json_object_get(args, "limit");
    long long limit = 10;
    if (lim && !json_is_null(lim)) {
        if (!json_is_integer(lim) || json_integer_value(lim) < 1 || json_integer_value(lim) > 50)
            return tool_error(out, "limit must be an integer between 1 and 50");
        limit = json_integer_value(lim);
    }
    if (!r->store) return tool_error(out, "search is unavailable: the registry has no database");
    gg_strbuf expr = GG_STRBUF_INIT;
    if (!fts_expression(q, &expr)) {
        gg_strbuf_free(&expr);
        return tool_error(out, "query '%.200s' has no searchable words", q);
    }
    gg_error err = GG_ERROR_INIT;
    /* across families the family weighting re-ranks more candidates than it returns */
    int fetch = t < 0 ? SPECS_SEARCH_CANDIDATES : (int)limit;
    json_t *rows = gg_store_specs_search(r->store, expr.data, t >= 0 ? specs_node_types[t] : NULL, fetch, &err);
    gg_strbuf_free(&expr);
    if (!rows) {
        bool ok = tool_error(out, "search failed: %s", err.message ? err.message : err.code);
        gg_error_clear(&err);
        return ok;
    }
    rank_graph_first(rows, (size_t)limit);
    json_t *res = json_pack("{s:s, s:I, s:o}", "query", q, "count", (json_int_t)json_array_size(rows), "results", rows);
    bool ok = res && set_json_value(out, res);
    json_decref(res);
    return ok;
}

/* ---- dispatch ------------------------------------------------------------------------ */

/* See specs.h. */
bool specs_call(specs_registry *r, const char *tool, json_t *arguments, specs_output *out, gg_error *err) {
    if (!specs_tool_exists(tool)) {
        gg_error_set(err, "unknown_tool", "Unknown tool: %s", tool ? tool : "(none)");
        return false;
    }
    if (arguments && !json_is_object(arguments) && !json_is_null(arguments)) {
        if (!tool_error(out, "arguments must be an object")) goto oom;
        return true;
    }
    json_t *empty = NULL;
    if (!arguments || json_is_null(arguments)) arguments = empty = json_object();
    if (!arguments) goto oom;
    bool ok;
    if (strcmp(tool, "search_nodes") == 0) {
        ok = tool_search_nodes(r, arguments, out);
    } else {
        specs_snapshot *s = specs_snapshot_acquire(r);
        ok = strcmp(tool, "get_node_types") == 0 ? tool_get_node_types(s, arguments, out)
                                                  : tool_get_node_details(s, arguments, out);
        specs_snapshot_release(s);
    }
    json_decref(empty);
    if (ok) return true;
oom:
    gg_error_set(err, "oom", "out of memory");
    return false;
}

/* See specs.h. */
bool specs_output_serialize(const specs_output *out, const char *extra, gg_strbuf *buf) {
    gg_strbuf_reserve(buf, out->text.len + out->structured.len + 128);
    gg_strbuf_puts(buf, "{\"content\":[{\"type\":\"text\",\"text\":\"");
    gg_strbuf_append(buf, out->text.data ? out->text.data : "", out->text.len);
    gg_strbuf_puts(buf, "\"}]");
    if (out->structured.len) {
        gg_strbuf_puts(buf, ",\"structuredContent\":");
        gg_strbuf_append(buf, out->structured.data, out->structured.len);
    }
    gg_strbuf_puts(buf, out->is_error ? ",\"isError\":true" : ",\"isError\":false");
    if (extra && extra[0]) {
        gg_strbuf_putc(buf, ',');
        gg_strbuf_puts(buf, extra);
    }
    gg_strbuf_putc(buf, '}');
    return !buf->oom;
}

/* ---- rendering straight into one buffer (the REST hot path) ------------------------- */

typedef struct piece {
    const char *p;
    size_t n;
} piece;

#define MAX_PIECES (4 * SPECS_MAX_BATCH + 16)

typedef struct render {
    piece v[MAX_PIECES];
    size_t n, total;
} render;

static void add(render *rd, const char *p, size_t n) {
    rd->v[rd->n++] = (piece){p, n};
    rd->total += n;
}

static void adds(render *rd, const char *s) { add(rd, s, strlen(s)); }

/* One exactly sized allocation holding every piece: big responses never go through a
 * growing buffer (each doubling would touch fresh pages). */
static char *join(const render *rd, size_t *len) {
    char *out = malloc(rd->total + 1);
    if (!out) return NULL;
    size_t off = 0;
    for (size_t i = 0; i < rd->n; i++) {
        memcpy(out + off, rd->v[i].p, rd->v[i].n);
        off += rd->v[i].n;
    }
    out[off] = '\0';
    *len = off;
    return out;
}

/* get_node_details where every node is an exact hit and the flags are plain booleans:
 * the entries are referenced where the snapshot keeps them. False = take the general path. */
static bool details_pieces(const specs_snapshot *s, json_t *args, render *rd, const render *head) {
    json_t *nodes = json_object_get(args, "nodes");
    size_t n = json_array_size(nodes);
    if (!json_is_array(nodes) || n == 0 || n > SPECS_MAX_BATCH || json_object_size(args) > 3) return false;
    json_t *ex = json_object_get(args, "include_examples"), *sc = json_object_get(args, "include_schemas");
    if ((ex && !json_is_boolean(ex)) || (sc && !json_is_boolean(sc))) return false;
    if (json_object_size(args) != (size_t)(1 + (ex != NULL) + (sc != NULL))) return false;
    int variant = (!ex || json_is_true(ex) ? SPECS_V_EXAMPLES : 0) | (!sc || json_is_true(sc) ? SPECS_V_SCHEMAS : 0);
    const specs_entry *hits[SPECS_MAX_BATCH];
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(nodes, i);
        hits[i] = specs_snapshot_find(s, json_string_value(json_object_get(item, "node_type")),
                                      json_string_value(json_object_get(item, "subtype")));
        if (!hits[i]) return false;
    }
    *rd = *head;
    adds(rd, "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"nodes\\\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) adds(rd, ",");
        add(rd, hits[i]->esc[variant].p, hits[i]->esc[variant].n);
    }
    adds(rd, "]}\"}],\"structuredContent\":{\"nodes\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) adds(rd, ",");
        add(rd, hits[i]->raw[variant].p, hits[i]->raw[variant].n);
    }
    adds(rd, "]},\"isError\":false");
    return true;
}

/* See specs.h. */
char *specs_call_render(specs_registry *r, const char *tool, json_t *arguments, const char *prefix,
                        specs_extra_fn extra, void *user, const char *suffix, size_t *len, gg_error *err) {
    render *rd = malloc(2 * sizeof *rd);
    if (!rd) return gg_error_set(err, "oom", "out of memory"), NULL;
    render *head = rd + 1;
    head->n = head->total = 0;
    if (prefix) adds(head, prefix);
    gg_strbuf ext = GG_STRBUF_INIT;
    char *out = NULL;
    specs_snapshot *s = specs_snapshot_acquire(r);
    if (tool && strcmp(tool, "get_node_details") == 0 && json_is_object(arguments) &&
        details_pieces(s, arguments, rd, head)) {
        if (extra) extra(&ext, user);
        if (ext.len) adds(rd, ","), add(rd, ext.data, ext.len);
        adds(rd, "}");
        if (suffix) adds(rd, suffix);
        out = ext.oom ? NULL : join(rd, len);
        if (!out) gg_error_set(err, "oom", "out of memory");
    } else {
        specs_output o = SPECS_OUTPUT_INIT;
        if (specs_call(r, tool, arguments, &o, err)) {
            if (extra) extra(&ext, user);
            gg_strbuf b = GG_STRBUF_INIT;
            specs_output_serialize(&o, ext.data, &b);
            *rd = *head;
            add(rd, b.data ? b.data : "", b.len);
            if (suffix) adds(rd, suffix);
            out = b.oom || ext.oom ? NULL : join(rd, len);
            if (!out) gg_error_set(err, "oom", "out of memory");
            gg_strbuf_free(&b);
        }
        specs_output_free(&o);
    }
    specs_snapshot_release(s);
    gg_strbuf_free(&ext);
    free(rd);
    return out;
}

/* ---- the MCP provider ---------------------------------------------------------------- */

typedef struct specs_provider {
    specs_registry *registry;
    json_t *tools; /* cached list */
    specs_vcache *vcache; /* callers' tenants' virtual specs (virtual.c) */
} specs_provider;

static json_t *prov_server_info(mcp_provider *p) {
    (void)p;
    return json_pack("{s:s, s:s, s:s}", "name", "graphgate-nodes", "title", "graphgate node knowledge",
                     "version", GG_VERSION);
}

static const char *prov_instructions(mcp_provider *p) {
    (void)p;
    return "Node knowledge for building graphgate graphs: call get_node_types to see the node families and "
           "subtypes, search_nodes to find nodes by what they do, then get_node_details for the exact "
           "configurations, inputs, outputs, ports and examples of the nodes you use. A graph uses the GRAPH "
           "family (graphgate's own node types) and calls your downstream tools (MCP_TOOL) with mcp nodes; "
           "the other families are a generic workflow catalog kept for reference, not usable in a graph.";
}

static json_t *prov_list_tools(mcp_provider *p) {
    return json_incref(((specs_provider *)p->impl)->tools);
}

static json_t *prov_get_tool(mcp_provider *p, const char *name) {
    size_t i;
    json_t *t;
    json_array_foreach(((specs_provider *)p->impl)->tools, i, t) {
        if (name && strcmp(json_string_value(json_object_get(t, "name")), name) == 0) return json_incref(t);
    }
    return NULL;
}

/* The text block of a result: for JSON results the raw JSON text itself (what the escaped
 * text decodes to, without decoding it); for errors the decoded message. */
static json_t *result_text(const specs_output *o) {
    if (o->structured.len) return json_stringn(o->structured.data, o->structured.len);
    gg_strbuf q = GG_STRBUF_INIT;
    gg_strbuf_putc(&q, '"');
    gg_strbuf_append(&q, o->text.data ? o->text.data : "", o->text.len);
    gg_strbuf_putc(&q, '"');
    json_t *t = q.oom ? NULL : json_loadb(q.data, q.len, JSON_DECODE_ANY, NULL);
    gg_strbuf_free(&q);
    return t;
}

/* get_node_types and get_node_details answer from the in-memory registry, so the gateway
 * may run them on the HTTP thread; search_nodes queries SQLite (FTS5) and stays on workers. */
static bool prov_tool_is_pure(mcp_provider *p, const char *name) {
    (void)p;
    return strcmp(name, "get_node_types") == 0 || strcmp(name, "get_node_details") == 0;
}

static json_t *prov_call_tool(mcp_provider *p, const char *name, json_t *arguments, const mcp_call_ctx *ctx,
                              gg_error *err) {
    specs_provider *sp = p->impl;
    json_t *res = specs_virtual_call(sp->registry, sp->vcache, name, arguments, ctx ? ctx->identity.tenant : NULL, err);
    if (res || gg_error_is_set(err)) return res;
    specs_output o = SPECS_OUTPUT_INIT;
    if (specs_call(sp->registry, name, arguments, &o, err)) {
        json_t *text = result_text(&o);
        json_t *sc = o.structured.len ? json_loadb(o.structured.data, o.structured.len, 0, NULL) : NULL;
        if (text && (sc || !o.structured.len))
            res = json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text", "text", text, "isError", o.is_error);
        else
            json_decref(text);
        if (res && sc) json_object_set_new(res, "structuredContent", sc);
        else json_decref(sc);
        if (!res) gg_error_set(err, "oom", "out of memory");
    }
    specs_output_free(&o);
    return res;
}

static void prov_destroy(mcp_provider *p) {
    specs_provider *sp = p->impl;
    json_decref(sp->tools);
    specs_vcache_free(sp->vcache);
    specs_registry_free(sp->registry);
    free(sp);
}

static const mcp_provider_ops prov_ops = {
    .server_info = prov_server_info,
    .instructions = prov_instructions,
    .list_tools = prov_list_tools,
    .get_tool = prov_get_tool,
    .call_tool = prov_call_tool,
    .destroy = prov_destroy,
    .tool_is_pure = prov_tool_is_pure,
};

/* See specs.h. */
mcp_provider *specs_provider_new(specs_registry *r) {
    specs_provider *sp = calloc(1, sizeof *sp);
    json_t *tools = specs_tool_list();
    mcp_provider *p = sp && tools ? mcp_provider_new(&prov_ops, sp) : NULL;
    if (!p) {
        free(sp);
        json_decref(tools);
        return NULL;
    }
    sp->registry = specs_registry_ref(r);
    sp->tools = tools;
    sp->vcache = specs_vcache_new();
    return p;
}
