/* client_era.c — what a downstream client needs to speak the stateless 2026-07-28 revision
 * over streamable HTTP (client_http.c drives the exchanges): the request metadata every
 * request carries in params._meta, the standard headers (Mcp-Method, Mcp-Name) and the
 * custom Mcp-Param-{Name} headers a tool's inputSchema designates with x-mcp-header, with
 * the revision's value encoding, and the check that rejects tools whose x-mcp-header
 * annotations break the rules (such a tool is left out of the tools/list result, so that
 * one malformed definition does not keep the others from being used). Pure functions: no
 * state of their own, schemas are only read (never dereferenced, never rewritten). */
#include "mcp/loop.h"

#include <ctype.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* An annotation is looked for this deep at most (a hostile schema cannot recurse us away). */
#define ERA_SCHEMA_DEPTH 64
/* One mirrored header line at most (a longer value is not mirrored: see era_param_line). */
#define ERA_HEADER_MAX 8192
#define ERA_SAFE_INT 9007199254740991LL /* 2^53 - 1: JavaScript's safe integers */

json_t *mcp_era_params(json_t *params, const char *version, json_t *caps) {
    json_t *p = json_is_object(params) ? gg_json_clone(params) : json_object();
    if (!p) return NULL;
    json_t *meta = json_object_get(p, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(p, "_meta", meta);
    }
    if (!meta) {
        json_decref(p);
        return NULL;
    }
    json_object_set_new(meta, "io.modelcontextprotocol/protocolVersion", json_string(version));
    json_object_set_new(meta, "io.modelcontextprotocol/clientInfo",
                        json_pack("{s:s, s:s}", "name", "graphgate", "version", GG_VERSION));
    json_object_set_new(meta, "io.modelcontextprotocol/clientCapabilities", caps ? gg_json_clone(caps) : json_object());
    return p;
}

/* RFC 9110 tchar: the header name part an x-mcp-header may hold. */
static bool tchar(unsigned char ch) { return isalnum(ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch)); }

static bool header_name_ok(const char *n) {
    if (!n || !*n) return false;
    for (const unsigned char *p = (const unsigned char *)n; *p; p++)
        if (!tchar(*p)) return false;
    return true;
}

typedef struct era_walk {
    json_t *found;     /* [{path: [...], header: "Name"}] */
    const char *why;   /* the first rule broken (static text) */
    int nodes;
} era_walk;

static void walk_schema(era_walk *w, json_t *s, json_t *path, bool reachable, int depth);

/* Every value that may hold subschemas under a keyword other than properties: reachable no
 * longer (items, allOf, if/then, $defs, ...). */
static void walk_any(era_walk *w, json_t *v, int depth) {
    if (w->why || depth > ERA_SCHEMA_DEPTH) return;
    if (json_is_object(v)) walk_schema(w, v, NULL, false, depth);
    else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) walk_any(w, e, depth + 1);
    }
}

static void annotation(era_walk *w, json_t *s, json_t *path, bool reachable) {
    json_t *h = json_object_get(s, "x-mcp-header");
    if (!h) return;
    const char *name = json_string_value(h);
    const char *type = json_string_value(json_object_get(s, "type"));
    if (!reachable || !path) w->why = "x-mcp-header on a property not reachable through properties alone";
    else if (!header_name_ok(name)) w->why = "x-mcp-header is empty or not an HTTP token (RFC 9110 tchar)";
    else if (!type || (strcmp(type, "string") && strcmp(type, "integer") && strcmp(type, "boolean")))
        w->why = "x-mcp-header on a property whose type is not string, integer or boolean";
    if (w->why) return;
    size_t i;
    json_t *f;
    json_array_foreach(w->found, i, f) {
        if (!strcasecmp(json_string_value(json_object_get(f, "header")), name)) {
            w->why = "x-mcp-header values are not unique (case-insensitively)";
            return;
        }
    }
    json_array_append_new(w->found, json_pack("{s:O, s:s}", "path", path, "header", name));
}

static void walk_schema(era_walk *w, json_t *s, json_t *path, bool reachable, int depth) {
    if (w->why) return;
    if (depth > ERA_SCHEMA_DEPTH || ++w->nodes > 100000) {
        w->why = "an inputSchema too deep or too large to check";
        return;
    }
    annotation(w, s, path, reachable);
    const char *k;
    json_t *v;
    json_object_foreach(s, k, v) {
        if (w->why) return;
        if (strcmp(k, "properties") || !json_is_object(v)) {
            if (strcmp(k, "x-mcp-header")) walk_any(w, v, depth + 1);
            continue;
        }
        const char *pk;
        json_t *ps;
        json_object_foreach(v, pk, ps) {
            if (!json_is_object(ps)) continue;
            json_t *sub = path ? json_copy(path) : json_array();
            json_array_append_new(sub, json_string(pk));
            walk_schema(w, ps, sub, reachable, depth + 1);
            json_decref(sub);
            if (w->why) return;
        }
    }
}

/* The tool's designated headers ([] when none) or NULL with why. */
static json_t *tool_headers(json_t *tool, const char **why) {
    era_walk w = {json_array(), NULL, 0};
    json_t *schema = json_object_get(tool, "inputSchema");
    if (json_is_object(schema) && w.found) walk_schema(&w, schema, NULL, true, 0);
    if (!w.found) w.why = "out of memory";
    if (w.why) {
        json_decref(w.found);
        *why = w.why;
        return NULL;
    }
    return w.found;
}

size_t mcp_era_filter_tools(json_t *result, json_t *header_map, const char *server) {
    json_t *tools = json_object_get(result, "tools");
    if (!json_is_array(tools)) return 0;
    size_t dropped = 0;
    for (size_t i = 0; i < json_array_size(tools);) {
        json_t *t = json_array_get(tools, i);
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *why = NULL;
        json_t *h = tool_headers(t, &why);
        if (!h) {
            gg_log(GG_LOG_WARN, "a downstream tool was left out: its x-mcp-header annotations break the rules", "server",
                   server, "tool", name ? name : "(no name)", "reason", why, NULL);
            json_array_remove(tools, i);
            dropped++;
            continue;
        }
        if (name && json_array_size(h)) json_object_set_new(header_map, name, h);
        else {
            if (name) json_object_del(header_map, name);
            json_decref(h);
        }
        i++;
    }
    return dropped;
}

/* The value as a header may carry it: plain when every byte is visible ASCII or an inner
 * space and it does not look like the sentinel, else "=?base64?…?=" of its UTF-8 bytes.
 * false when it does not fit out. */
bool mcp_era_header_value(const char *v, size_t n, char *out, size_t cap) {
    bool plain = n == 0 || (v[0] != ' ' && v[n - 1] != ' ');
    for (size_t i = 0; plain && i < n; i++) plain = (unsigned char)v[i] >= 0x20 && (unsigned char)v[i] <= 0x7e;
    if (plain && n >= 11 && !strncmp(v, "=?base64?", 9) && !strncmp(v + n - 2, "?=", 2)) plain = false;
    if (plain) {
        if (n + 1 > cap) return false;
        memcpy(out, v, n);
        out[n] = '\0';
        return true;
    }
    size_t b64 = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
    if (b64 + 11 > cap) return false;
    memcpy(out, "=?base64?", 9);
    sodium_bin2base64(out + 9, b64, (const unsigned char *)v, n, sodium_base64_VARIANT_ORIGINAL);
    strcat(out, "?=");
    return true;
}

/* "Mcp-Param-Name: value" for the instance value at path, or false (absent, null, a type
 * the rules do not mirror, too long). */
static bool param_line(json_t *args, json_t *entry, char *line, size_t cap) {
    json_t *v = args;
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(entry, "path"), i, k) v = json_object_get(v, json_string_value(k));
    char text[32];
    const char *s = NULL;
    size_t n = 0;
    if (json_is_string(v)) s = json_string_value(v), n = json_string_length(v);
    else if (json_is_boolean(v)) s = json_is_true(v) ? "true" : "false", n = strlen(s);
    else if (json_is_integer(v) && llabs((long long)json_integer_value(v)) <= ERA_SAFE_INT)
        n = (size_t)snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v)), s = text;
    else if (json_is_real(v) && json_real_value(v) == (double)(long long)json_real_value(v) &&
             llabs((long long)json_real_value(v)) <= ERA_SAFE_INT)
        n = (size_t)snprintf(text, sizeof text, "%lld", (long long)json_real_value(v)), s = text;
    if (!s) return false;
    int head = snprintf(line, cap, "Mcp-Param-%s: ", json_string_value(json_object_get(entry, "header")));
    if (head <= 0 || (size_t)head >= cap || !mcp_era_header_value(s, n, line + head, cap - (size_t)head)) return false;
    if (!n) strcpy(line + head - 2, ";"); /* libcurl sends "Name;" as an empty header ("Name:" would drop it) */
    return true;
}

struct curl_slist *mcp_era_headers(struct curl_slist *hd, const char *method, json_t *params, json_t *header_map) {
    char *line = malloc(ERA_HEADER_MAX);
    if (!line) return hd;
    snprintf(line, ERA_HEADER_MAX, "Mcp-Method: %s", method);
    hd = curl_slist_append(hd, line);
    bool named = !strcmp(method, "tools/call") || !strcmp(method, "prompts/get");
    json_t *src = json_object_get(params, named ? "name" : !strcmp(method, "resources/read") ? "uri" : "");
    if (json_is_string(src) && mcp_era_header_value(json_string_value(src), json_string_length(src), line + 10,
                                                    ERA_HEADER_MAX - 10)) {
        memcpy(line, "Mcp-Name: ", 10);
        hd = curl_slist_append(hd, line);
    }
    json_t *map = !strcmp(method, "tools/call") && json_is_string(src) ? json_object_get(header_map, json_string_value(src)) : NULL;
    json_t *args = json_object_get(params, "arguments");
    size_t i;
    json_t *e;
    json_array_foreach(map, i, e)
        if (param_line(args, e, line, ERA_HEADER_MAX)) hd = curl_slist_append(hd, line);
    free(line);
    return hd;
}
