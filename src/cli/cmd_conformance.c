/* cmd_conformance.c — `graphgate conformance-client [--era V] [--scenario S] URL`: the
 * client leg of the MCP conformance suite (@modelcontextprotocol/conformance `client
 * --command`), run on exactly the downstream client the gateway's mcp nodes use (mcp_client
 * over streamable HTTP: client_http.c, client_era.c, sse_reader.c). The suite starts a test
 * server, appends its URL and names the scenario in MCP_CONFORMANCE_SCENARIO (its data in
 * MCP_CONFORMANCE_CONTEXT, the revision in MCP_CONFORMANCE_PROTOCOL_VERSION). This driver
 * only chooses what a user of the client would do in the scenario — list the tools, call
 * the ones the server offers with the arguments it asks for, list and read resources and
 * prompts — and answers the server's questions the way a client with a user who accepts the
 * proposed values would (an elicitation with the schema's defaults). Every protocol
 * behaviour the suite checks (initialize or per-request metadata, headers, SSE resumption,
 * MRTR rounds, tools with invalid x-mcp-header left out, schemas passed through) is the
 * client's own. Exit 0 when every request the driver made succeeded. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateway/gateway.h"
#include "mcp/mcp.h"

#define CONF_TIMEOUT_MS 20000
#define CONF_MAX_PAGES 20

typedef struct conf_run {
    mcp_client *c;
    const char *scenario;
    json_t *context; /* MCP_CONFORMANCE_CONTEXT (an object; {} when none) */
    int failed;
} conf_run;

static void usage(FILE *f) {
    fprintf(f,
            "usage: graphgate conformance-client [--era 2025-11-25|2026-07-28] [--scenario NAME] URL\n\n"
            "Run one client scenario of the MCP conformance suite against URL with graphgate's\n"
            "downstream MCP client. The scenario and era default to MCP_CONFORMANCE_SCENARIO and\n"
            "MCP_CONFORMANCE_PROTOCOL_VERSION (2025-11-25 when unset), as the suite sets them:\n"
            "  npx @modelcontextprotocol/conformance client --command \"build/src/graphgate conformance-client\" \\\n"
            "      --requirements 2025-11-25\n");
}

/* One request; a failure is printed and counted. Returns the result (new reference) or NULL. */
static json_t *request(conf_run *r, const char *method, json_t *params) {
    gg_error err = GG_ERROR_INIT;
    json_t *res = mcp_client_request(r->c, method, params, CONF_TIMEOUT_MS, NULL, &err);
    if (!res) {
        fprintf(stderr, "graphgate conformance-client: %s: %s\n", method, err.message ? err.message : err.code);
        r->failed++;
    }
    gg_error_clear(&err);
    return res;
}

/* Every page of a list method's KEY array (new reference; [] when it failed). */
static json_t *list_all(conf_run *r, const char *method, const char *key) {
    json_t *all = json_array(), *cursor = NULL;
    for (int page = 0; page < CONF_MAX_PAGES; page++) {
        json_t *params = cursor ? json_pack("{s:O}", "cursor", cursor) : NULL;
        json_t *res = request(r, method, params);
        json_decref(params);
        json_decref(cursor);
        cursor = NULL;
        if (!res) break;
        json_array_extend(all, json_object_get(res, key));
        json_t *next = json_object_get(res, "nextCursor");
        if (json_is_string(next)) cursor = json_incref(next);
        json_decref(res);
        if (!cursor) break;
    }
    json_decref(cursor);
    return all;
}

/* Arguments a user would fill in: each required property with a value of its type. */
static json_t *sample_arguments(json_t *schema) {
    json_t *args = json_object(), *props = json_object_get(schema, "properties");
    size_t i;
    json_t *name;
    json_array_foreach(json_object_get(schema, "required"), i, name) {
        json_t *p = json_object_get(props, json_string_value(name));
        const char *type = json_string_value(json_object_get(p, "type"));
        json_t *def = json_object_get(p, "default");
        json_t *v = def                                               ? json_incref(def)
                    : !type || !strcmp(type, "string")                ? json_string("conformance")
                    : !strcmp(type, "integer") || !strcmp(type, "number") ? json_integer(1)
                    : !strcmp(type, "boolean")                        ? json_true()
                    : !strcmp(type, "array")                          ? json_array()
                    : !strcmp(type, "object")                         ? json_object()
                                                                      : json_null();
        json_object_set_new(args, json_string_value(name), v);
    }
    return args;
}

static void call_tool(conf_run *r, const char *name, json_t *args) {
    json_t *params = json_pack("{s:s, s:O}", "name", name, "arguments", args);
    json_t *res = request(r, "tools/call", params);
    if (res) {
        printf("tools/call %s: %s\n", name, json_is_true(json_object_get(res, "isError")) ? "isError" : "ok");
        json_decref(res);
    }
    json_decref(params);
}

static json_t *find_tool(json_t *tools, const char *name) {
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) if (!strcmp(json_string_value(json_object_get(t, "name")) ?: "", name)) return t;
    return NULL;
}

/* The tools the scenario's server offers, called as it asks: the context's toolCalls when
 * it gives them, else every tool listed with arguments a user would give (the schema
 * echo scenario gets back the schema it was shown, untouched). */
static void call_tools(conf_run *r, json_t *tools) {
    json_t *calls = json_object_get(r->context, "toolCalls");
    size_t i;
    json_t *t;
    if (json_is_array(calls)) {
        json_array_foreach(calls, i, t) {
            json_t *args = json_object_get(t, "arguments");
            call_tool(r, json_string_value(json_object_get(t, "name")) ?: "", args ? args : json_object());
        }
        return;
    }
    json_t *focal = find_tool(tools, "json_schema_2020_12_tool");
    json_array_foreach(tools, i, t) {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (!name) continue;
        json_t *args = focal && !strcmp(name, "json_schema_echo")
                           ? json_pack("{s:O}", "schema", json_object_get(focal, "inputSchema"))
                           : sample_arguments(json_object_get(t, "inputSchema"));
        call_tool(r, name, args);
        json_decref(args);
    }
}

/* Resources and prompts, read and got one by one (the standard headers scenario). */
static void read_resources_prompts(conf_run *r) {
    json_t *list = list_all(r, "resources/list", "resources");
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) {
        json_t *p = json_pack("{s:O}", "uri", json_object_get(x, "uri"));
        json_decref(request(r, "resources/read", p));
        json_decref(p);
    }
    json_decref(list);
    list = list_all(r, "prompts/list", "prompts");
    json_array_foreach(list, i, x) {
        json_t *p = json_pack("{s:O}", "name", json_object_get(x, "name"));
        json_decref(request(r, "prompts/get", p));
        json_decref(p);
    }
    json_decref(list);
}

/* The user's answer to what the server asks: an elicitation accepted with the defaults its
 * schema proposes, no roots; anything else refused (this client offers nothing more). */
static void answer_server(void *user, const char *method, json_t *params, mcp_client_reply *reply) {
    (void)user;
    if (!strcmp(method, "elicitation/create")) {
        json_t *content = json_object();
        const char *k;
        json_t *p;
        json_object_foreach(json_object_get(json_object_get(params, "requestedSchema"), "properties"), k, p) {
            json_t *def = json_object_get(p, "default");
            if (def) json_object_set(content, k, def);
        }
        json_t *res = json_pack("{s:s, s:o}", "action", "accept", "content", content);
        mcp_client_reply_result(reply, res);
        json_decref(res);
    } else mcp_client_reply_error(reply, MCP_METHOD_NOT_FOUND, "Method not found");
}

/* ---- OAuth client seam (the auth scenarios) ----------------------------------------------
 * An auth scenario's server answers 401 until the client authorizes against the
 * scenario's authorization server. This is where the driver gives the client credentials
 * the way a graph's mcpServers entry does: cfg->auth settings built from the scenario and
 * MCP_CONFORMANCE_CONTEXT (pre-registered client id/secret, private key, ...), with the
 * OAuth client's provider factory installed in the client's context (mcp_http_set_auth_factory,
 * by gg_gateway_downstream_auth_install). Returns false when the settings cannot be made. */
#define CONF_CIMD_URL "https://conformance-test.local/client-metadata.json" /* the URL auth/basic-cimd expects */
static bool auth_settings(mcp_server_config *cfg, const char *scenario, json_t *context) {
    if (strncmp(scenario, "auth/", 5)) return true;
    const char *rest = scenario + 5;
    const char *type = !strncmp(rest, "client-credentials-", 19) ? "client_credentials"
                       : !strcmp(rest, "wif-jwt-bearer")          ? "jwt_bearer"
                       : !strcmp(rest, "enterprise-managed-authorization") ? "id_jag"
                                                                  : "oauth";
    json_t *s = json_pack("{s:s, s:s}", "type", type, "client_metadata_url", CONF_CIMD_URL);
    static const char *const copy[][2] = {{"client_id", "client_id"}, {"client_secret", "client_secret"},
                                          {"valid_jwt", "assertion"}, {"private_key_pem", "private_key"},
                                          {"signing_algorithm", "signing_algorithm"}, {"idp_id_token", "assertion"},
                                          {"idp_client_id", "idp_client_id"}, {"idp_token_endpoint", "idp_token_endpoint"}};
    for (size_t i = 0; s && i < sizeof copy / sizeof copy[0]; i++) {
        json_t *v = json_object_get(context, copy[i][0]);
        if (json_is_string(v)) json_object_set(s, copy[i][1], v);
    }
    if (s && !strncmp(rest, "dpop", 4)) json_object_set_new(s, "dpop", json_true()); /* what a user would configure */
    if (!s || json_object_set_new(context, "graphgate.auth", s)) return false; /* context owns it: lives as long */
    gg_gateway_downstream_auth_install(cfg->downstream);
    cfg->auth = s;
    return true;
}

/* Until the client's GET stream is open (or a server that offers none said so), at most
 * CONF_LISTEN_WAIT_MS: the events are the client's own listen counters. */
#define CONF_LISTEN_WAIT_MS 3000
static void await_listen_stream(const mcp_downstream *ds) {
    for (int waited = 0; waited < CONF_LISTEN_WAIT_MS; waited += 10) {
        mcp_listen_stats st = mcp_http_listen_stats(ds);
        if (st.opened || st.no_stream) return;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static int run_scenario(conf_run *r) {
    const char *s = r->scenario;
    bool list_only = !strcmp(s, "initialize") || !strcmp(s, "request-metadata") || !strcmp(s, "json-schema-ref-no-deref");
    json_t *tools = list_all(r, "tools/list", "tools");
    printf("scenario %s: %zu tools listed\n", s, json_array_size(tools));
    if (!list_only && !r->failed) call_tools(r, tools);
    if (!strcmp(s, "http-standard-headers")) read_resources_prompts(r);
    json_decref(tools);
    return r->failed ? GG_EXIT_FAIL : GG_EXIT_OK;
}

int gg_cmd_conformance_client(int argc, char **argv) {
    const char *era = getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"), *scenario = getenv("MCP_CONFORMANCE_SCENARIO");
    const char *url = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return GG_EXIT_OK;
        } else if (!strcmp(argv[i], "--era") && i + 1 < argc) era = argv[++i];
        else if (!strcmp(argv[i], "--scenario") && i + 1 < argc) scenario = argv[++i];
        else if (argv[i][0] != '-' && !url) url = argv[i];
        else {
            fprintf(stderr, "graphgate conformance-client: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return GG_EXIT_USAGE;
        }
    }
    if (!url || !scenario || !*scenario) {
        fprintf(stderr, "graphgate conformance-client: %s\n", !url ? "no server URL" : "no scenario (MCP_CONFORMANCE_SCENARIO or --scenario)");
        usage(stderr);
        return GG_EXIT_USAGE;
    }
    if (!era || !*era) era = MCP_CLIENT_PROTOCOL_VERSION;
    json_error_t je;
    const char *ctx = getenv("MCP_CONFORMANCE_CONTEXT");
    json_t *context = ctx && *ctx ? json_loads(ctx, 0, &je) : json_object();
    if (!json_is_object(context)) {
        fprintf(stderr, "graphgate conformance-client: MCP_CONFORMANCE_CONTEXT is not a JSON object\n");
        json_decref(context);
        return GG_EXIT_USAGE;
    }
    /* the client's own context: its auth factory and the listen counters awaited below */
    mcp_server_config cfg = {.transport = MCP_TRANSPORT_HTTP, .name = "conformance", .url = url,
                             .timeout_ms = CONF_TIMEOUT_MS, .protocol = mcp_version_is_modern(era) ? era : NULL,
                             .downstream = mcp_downstream_new()};
    gg_error err = GG_ERROR_INIT;
    mcp_client *c = cfg.downstream && auth_settings(&cfg, scenario, context) ? mcp_client_new(&cfg, NULL, &err) : NULL;
    if (!c) {
        fprintf(stderr, "graphgate conformance-client: %s\n", err.message ? err.message : "cannot set up the client");
        gg_error_clear(&err);
        mcp_downstream_free(cfg.downstream);
        json_decref(context);
        return GG_EXIT_FAIL;
    }
    json_t *caps = json_pack("{s:{}}", "elicitation");
    mcp_client_set_request_handler(c, caps, answer_server, NULL);
    json_decref(caps);
    /* the session era: a server sends the requests that belong to no call of ours on the
     * GET stream, so the client listens before it calls (the stateless era has none) */
    mcp_client_listen(c);
    if (!cfg.protocol) await_listen_stream(cfg.downstream);
    conf_run r = {c, scenario, context, 0};
    int rc = run_scenario(&r);
    mcp_client_free(c);
    mcp_downstream_free(cfg.downstream);
    json_decref(context);
    return rc;
}
