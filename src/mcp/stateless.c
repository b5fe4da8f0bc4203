/* stateless.c — the stateless 2026-07-28 revision beside the session era: which era a request
 * speaks, the per-request checks the specification orders (headers against the body, _meta,
 * version, client capabilities) and the shape of its results (resultType, caching hints).
 *
 * The checks run in the order the revision's transport text gives them, so a request broken
 * in several ways always gets the same error: MCP-Protocol-Version header present → _meta
 * carries protocolVersion and clientCapabilities → the two versions agree → the version is
 * served here → Mcp-Method → Mcp-Name → Mcp-Param-* of the tool's x-mcp-header arguments.
 * Dispatch (server.c) then refuses methods of the old era and tools needing a client
 * capability the request did not declare.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "mcp/mcp.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_LOG "io.modelcontextprotocol/logLevel"
#define HEADER_VALUE_MAX 4096 /* a decoded header compared with the body */

static const char *const modern_versions[] = {MCP_VERSION_MODERN};

bool mcp_version_is_modern(const char *v) {
    for (size_t i = 0; v && i < sizeof modern_versions / sizeof *modern_versions; i++)
        if (!strcmp(v, modern_versions[i])) return true;
    return false;
}

json_t *mcp_modern_versions(void) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < sizeof modern_versions / sizeof *modern_versions; i++)
        json_array_append_new(a, json_string(modern_versions[i]));
    return a;
}

static json_t *request_meta(json_t *msg) { return json_object_get(json_object_get(msg, "params"), "_meta"); }

/* A request speaks the stateless era when its _meta names a protocol version, when its
 * MCP-Protocol-Version header is not one of the session era's (a modern or unknown one: the
 * modern checks answer it), or when its method exists only in that era. An initialize
 * without those selects the session era. */
bool mcp_request_is_modern(json_t *msg, const char *header_version) {
    if (!json_is_object(msg)) return false;
    if (json_object_get(request_meta(msg), META_VERSION)) return true;
    if (header_version && !mcp_version_supported(header_version)) return true;
    const char *m = json_string_value(json_object_get(msg, "method"));
    return m && (!strcmp(m, "server/discover") || !strcmp(m, "subscriptions/listen"));
}

/* ------------------------------------------------------------------ header values */

/* value without the optional whitespace around it (RFC 9110 §5.5), into out. */
static bool trim_ows(const char *v, char *out, size_t n) {
    while (*v == ' ' || *v == '\t') v++;
    size_t len = strlen(v);
    while (len && (v[len - 1] == ' ' || v[len - 1] == '\t')) len--;
    if (len >= n) return false;
    memcpy(out, v, len);
    out[len] = 0;
    return true;
}

/* A header value as the client meant it: "=?base64?…?=" decoded (strict: padding and
 * alphabet), anything else literal; visible ASCII, space and tab only. false when invalid. */
static bool header_decode(const char *raw, char *out, size_t n) {
    char v[HEADER_VALUE_MAX];
    if (!trim_ows(raw, v, sizeof v)) return false;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p > 0x7e) return false;
    size_t len = strlen(v);
    if (len >= 11 && !strncmp(v, "=?base64?", 9) && !strcmp(v + len - 2, "?=")) {
        size_t bin = 0;
        if (sodium_base642bin((unsigned char *)out, n - 1, v + 9, len - 11, NULL, &bin, NULL,
                              sodium_base64_VARIANT_ORIGINAL) != 0)
            return false;
        out[bin] = 0;
        return strlen(out) == bin; /* no NUL inside */
    }
    if (len >= n) return false;
    memcpy(out, v, len + 1);
    return true;
}

/* A body value as its header form: strings as they are, integers in decimal, booleans
 * lowercase. false for other types (never mirrored). */
static bool body_text(json_t *v, char *out, size_t n) {
    if (json_is_string(v)) return snprintf(out, n, "%s", json_string_value(v)) < (int)n;
    if (json_is_integer(v)) return snprintf(out, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v)) < (int)n;
    if (json_is_real(v) && json_real_value(v) == (double)(json_int_t)json_real_value(v))
        return snprintf(out, n, "%" JSON_INTEGER_FORMAT, (json_int_t)json_real_value(v)) < (int)n;
    if (json_is_boolean(v)) return snprintf(out, n, "%s", json_is_true(v) ? "true" : "false") < (int)n;
    return false;
}

/* Integers compare as numbers ("42.0" equals 42), everything else as text. */
static bool values_match(json_t *body, const char *header) {
    char want[HEADER_VALUE_MAX];
    if (!body_text(body, want, sizeof want)) return false;
    if (json_is_number(body)) {
        char *end;
        double d = strtod(header, &end);
        return end != header && !*end && d == json_number_value(body);
    }
    return !strcmp(want, header);
}

/* ------------------------------------------------------------------ errors */

static void fail(mcp_modern_req *r, json_t *id, int status, int code, const char *msg, json_t *data) {
    r->status = status;
    r->error = mcp_jsonrpc_error(id, code, msg, data);
    json_decref(data);
}

static bool mismatch(mcp_modern_req *r, json_t *id, const char *fmt, const char *a, const char *b) {
    char msg[400];
    snprintf(msg, sizeof msg, fmt, a, b);
    fail(r, id, 400, MCP_HEADER_MISMATCH, msg, NULL);
    return false;
}

/* Mcp-Name against params.name (tools/call, prompts/get), params.uri (resources/read) or
 * params.taskId (tasks methods). */
static bool check_name(const mcp_message *m, mcp_header_fn hdr, void *hu, mcp_modern_req *r) {
    const char *key = !strcmp(m->method, "tools/call") || !strcmp(m->method, "prompts/get") ? "name"
                      : !strcmp(m->method, "resources/read")                                  ? "uri"
                      : !strcmp(m->method, "tasks/get") || !strcmp(m->method, "tasks/update") ||
                              !strcmp(m->method, "tasks/cancel")                              ? "taskId"
                                                                                              : NULL;
    json_t *v = key ? json_object_get(m->params, key) : NULL;
    if (!json_is_string(v)) return true; /* dispatch says what is missing */
    const char *h = hdr(hu, "Mcp-Name");
    char dec[HEADER_VALUE_MAX];
    if (!h) return mismatch(r, m->id, "Header mismatch: Mcp-Name header is required for %s%s", m->method, "");
    if (!header_decode(h, dec, sizeof dec))
        return mismatch(r, m->id, "Header mismatch: Mcp-Name header is not a valid value%s%s", "", "");
    if (strcmp(dec, json_string_value(v)))
        return mismatch(r, m->id, "Header mismatch: Mcp-Name header does not match body value '%.150s'%s",
                        json_string_value(v), "");
    return true;
}

/* The x-mcp-header annotations of a schema, reached through properties keys only: each is
 * checked against the argument at the same path. */
static bool check_params_in(json_t *schema, json_t *args, mcp_header_fn hdr, void *hu, const mcp_message *m,
                            mcp_modern_req *r, int depth) {
    const char *k;
    json_t *prop;
    json_object_foreach(json_object_get(schema, "properties"), k, prop) {
        json_t *val = json_object_get(args, k);
        const char *name = json_string_value(json_object_get(prop, "x-mcp-header"));
        if (name) {
            char hname[160];
            snprintf(hname, sizeof hname, "Mcp-Param-%.128s", name);
            const char *h = hdr(hu, hname);
            char dec[HEADER_VALUE_MAX];
            if (!val || json_is_null(val)) continue; /* nothing to mirror; a stray header is ignored */
            if (!h) return mismatch(r, m->id, "Header mismatch: %s header is required (argument %.100s is set)", hname, k);
            if (!header_decode(h, dec, sizeof dec))
                return mismatch(r, m->id, "Header mismatch: %s header has an invalid value%s", hname, "");
            if (!values_match(val, dec))
                return mismatch(r, m->id, "Header mismatch: %s header does not match argument %.100s", hname, k);
        } else if (json_is_object(val) && depth < 16 &&
                   !check_params_in(prop, val, hdr, hu, m, r, depth + 1)) {
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ the checks */

static int caps_of(json_t *caps) {
    return MCP_CLIENT_CAPS_KNOWN | (json_object_get(caps, "elicitation") ? MCP_CLIENT_CAPS_ELICITATION : 0) |
           (json_object_get(json_object_get(caps, "elicitation"), "url") ? MCP_CLIENT_CAPS_ELICITATION_URL : 0) |
           (json_object_get(caps, "sampling") ? MCP_CLIENT_CAPS_SAMPLING : 0) |
           (json_object_get(caps, "roots") ? MCP_CLIENT_CAPS_ROOTS : 0) |
           (json_object_get(json_object_get(caps, "extensions"), MCP_TASKS_EXTENSION) ? MCP_CLIENT_CAPS_TASKS : 0);
}

/* See mcp.h. */
bool mcp_modern_check(const mcp_server *s, const mcp_message *m, const char *header_version, mcp_header_fn hdr,
                      void *hu, mcp_modern_req *r) {
    memset(r, 0, sizeof *r);
    r->log_level = MCP_LOG_OFF;
    if (m->kind == MCP_MSG_RESPONSE) {
        fail(r, m->id, 400, MCP_INVALID_REQUEST, "Invalid Request: clients send no responses in protocol version 2026-07-28 "
             "(answer an input request by repeating the call with inputResponses)", NULL);
        return false;
    }
    if (m->kind != MCP_MSG_REQUEST) return true; /* a notification is accepted (202) */
    json_t *meta = json_object_get(m->params, "_meta");
    json_t *pv = json_object_get(meta, META_VERSION), *caps = json_object_get(meta, META_CAPS);
    if (!header_version) {
        fail(r, m->id, 400, MCP_HEADER_MISMATCH, "Header mismatch: the MCP-Protocol-Version header is required", NULL);
        return false;
    }
    if (!json_is_string(pv) || !json_is_object(caps)) {
        fail(r, m->id, 400, MCP_INVALID_PARAMS, !json_is_string(pv)
             ? "Invalid params: _meta must carry io.modelcontextprotocol/protocolVersion (a string)"
             : "Invalid params: _meta must carry io.modelcontextprotocol/clientCapabilities (an object)", NULL);
        return false;
    }
    if (strcmp(json_string_value(pv), header_version))
        return mismatch(r, m->id, "Header mismatch: MCP-Protocol-Version header %.40s does not match _meta protocolVersion %.40s",
                        header_version, json_string_value(pv));
    if (!mcp_version_is_modern(header_version)) {
        fail(r, m->id, 400, MCP_UNSUPPORTED_VERSION, "Unsupported protocol version",
             json_pack("{s:o,s:s}", "supported", mcp_modern_versions(), "requested", header_version));
        return false;
    }
    char method[160];
    const char *hm = hdr(hu, "Mcp-Method");
    if (!hm) return mismatch(r, m->id, "Header mismatch: the Mcp-Method header is required%s%s", "", "");
    if (!trim_ows(hm, method, sizeof method) || strcmp(method, m->method))
        return mismatch(r, m->id, "Header mismatch: Mcp-Method header does not match body method %.100s%s", m->method, "");
    if (!check_name(m, hdr, hu, r)) return false;
    json_t *name = json_object_get(m->params, "name");
    json_t *def = !strcmp(m->method, "tools/call") && json_is_string(name) ? mcp_server_tool_def(s, json_string_value(name)) : NULL;
    if (def && !check_params_in(json_object_get(def, "inputSchema"), json_object_get(m->params, "arguments"), hdr, hu, m, r, 0))
        return false;
    r->client_caps = caps_of(caps);
    json_t *lv = json_object_get(meta, META_LOG);
    int level = json_is_string(lv) ? mcp_log_level_parse(json_string_value(lv)) : -1;
    if (lv && level < 0) {
        fail(r, m->id, 400, MCP_INVALID_PARAMS, "Invalid params: _meta logLevel must be one of debug, info, notice, "
             "warning, error, critical, alert, emergency", NULL);
        return false;
    }
    if (level >= 0) r->log_level = (mcp_log_level)level;
    return true;
}

/* ------------------------------------------------------------------ results */

static bool cacheable(const char *method) {
    static const char *const m[] = {"server/discover", "tools/list", "prompts/list", "resources/list",
                                    "resources/templates/list", "resources/read"};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        if (!strcmp(method, m[i])) return true;
    return false;
}

/* See mcp.h. */
char *mcp_modern_shape(const mcp_server *s, const char *method, char *body) {
    json_t *v = body ? json_loads(body, 0, NULL) : NULL;
    json_t *res = json_object_get(v, "result"), *err = json_object_get(v, "error");
    if (json_is_object(res)) {
        if (!json_object_get(res, "resultType")) json_object_set_new(res, "resultType", json_string("complete"));
        if (cacheable(method) && !json_object_get(res, "ttlMs")) {
            int ttl = 0;
            bool pub = false;
            mcp_server_cache_hint(s, &ttl, &pub);
            json_object_set_new(res, "ttlMs", json_integer(ttl));
            json_object_set_new(res, "cacheScope", json_string(pub ? "public" : "private"));
        }
    } else if (json_is_object(err) && json_integer_value(json_object_get(err, "code")) == MCP_RESOURCE_NOT_FOUND) {
        json_object_set_new(err, "code", json_integer(MCP_INVALID_PARAMS)); /* the revision's code for it */
    } else {
        json_decref(v);
        return body;
    }
    char *out = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    if (!out) return body;
    free(body);
    return out;
}

/* See mcp.h. */
int mcp_modern_status(const char *body) {
    json_t *v = body ? json_loads(body, 0, NULL) : NULL;
    json_t *err = json_object_get(v, "error");
    int code = err ? (int)json_integer_value(json_object_get(err, "code")) : 0;
    json_decref(v);
    switch (code) {
    case 0: return 200;
    case MCP_METHOD_NOT_FOUND: return 404;
    case MCP_PARSE_ERROR: case MCP_INVALID_REQUEST: case MCP_INVALID_PARAMS:
    case MCP_HEADER_MISMATCH: case MCP_MISSING_CAPABILITY: case MCP_UNSUPPORTED_VERSION: return 400;
    default: return 200;
    }
}
