/* mcp.h — the Model Context Protocol: clients for downstream servers (stdio, streamable
 * HTTP) and the server side that serves mcp_provider tools.
 *
 * Ownership: every handle returned here is owned by the caller and released with its _free
 * function; json_t arguments are borrowed and results are new references.
 */
#ifndef GG_MCP_H
#define GG_MCP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

/* ======================================================================================
 * Client section (owned by the graph helper): downstream MCP servers used by mcp nodes.
 * ====================================================================================== */

#define MCP_CLIENT_PROTOCOL_VERSION "2025-06-18"
#define MCP_CLIENT_DEFAULT_TIMEOUT_MS 30000

typedef enum { MCP_TRANSPORT_STDIO, MCP_TRANSPORT_HTTP } mcp_transport;

/* One downstream server definition (a graph's mcpServers entry). Strings are copied by
 * mcp_client_new. */
typedef struct mcp_server_config {
    mcp_transport transport;
    const char *name;            /* the mcpServers key, for messages */
    /* stdio */
    const char *command;
    const char *const *args;     /* argv[1..], NULL-terminated (may be NULL) */
    const char *const *env;      /* "NAME=value" entries added to PATH/HOME, NULL-terminated */
    const char *cwd;             /* NULL = the gateway's working directory */
    /* streamable HTTP */
    const char *url;
    const char *const *headers;  /* "Name: value" lines, NULL-terminated */
    int timeout_ms;              /* per call; 0 = MCP_CLIENT_DEFAULT_TIMEOUT_MS */
} mcp_server_config;

/* What downstream servers may be reached. allow_all is local mode (`graphgate run`).
 * Otherwise a stdio command must be in command_allowlist (exact match of the command as
 * written, or of its absolute path) and an HTTP host must not resolve to loopback,
 * link-local, private or unspecified addresses unless it is in host_allowlist. The check
 * runs before a child is spawned and again on every socket libcurl opens (DNS rebinding). */
typedef struct mcp_client_policy {
    bool allow_all;
    const char *const *command_allowlist; /* NULL-terminated; NULL = none */
    const char *const *host_allowlist;    /* NULL-terminated host names or IP literals */
    bool allow_http_plaintext;            /* allow http:// (https:// always allowed) */
} mcp_client_policy;

bool mcp_policy_check_command(const mcp_client_policy *p, const char *command, gg_error *err);
bool mcp_policy_check_url(const mcp_client_policy *p, const char *url, gg_error *err);
/* True when the address (sockaddr_in/in6) is loopback, link-local, private, CGNAT,
 * unspecified, multicast or IPv4-mapped versions of those. */
struct sockaddr;
bool mcp_policy_address_is_internal(const struct sockaddr *sa);

typedef struct mcp_client mcp_client;

/* Create a client; nothing is spawned or connected until the first request. The policy is
 * borrowed and must outlive the client (NULL = allow everything). */
mcp_client *mcp_client_new(const mcp_server_config *cfg, const mcp_client_policy *policy, gg_error *err);
/* Stop the child (stdin closed, SIGTERM, then SIGKILL) / end the HTTP session. */
void mcp_client_free(mcp_client *c);

/* Send one request and wait for its result. Initializes the session first if needed
 * (initialize + notifications/initialized, once per process/session), restarting a crashed
 * child with backoff. Safe to call from many threads at once: requests are multiplexed by
 * id. timeout_ms 0 = the server's configured timeout. cancel (may be NULL) is polled; on
 * cancel or timeout notifications/cancelled is sent. Returns the JSON-RPC result (new
 * reference) or NULL with err: code "mcp_error" (JSON-RPC error; message "MCP error <code>:
 * <message>"), "timeout", "cancelled", "transport" (spawn/connect/crash; stderr tail
 * appended), "policy". */
json_t *mcp_client_request(mcp_client *c, const char *method, json_t *params, int timeout_ms,
                           volatile int *cancel, gg_error *err);
/* tools/call convenience: params {name, arguments}. */
json_t *mcp_client_call_tool(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms,
                             volatile int *cancel, gg_error *err);
/* Last bytes the child wrote on stderr (caller frees; "" for HTTP). */
char *mcp_client_stderr_tail(mcp_client *c);
/* Times the child was (re)started / the HTTP session initialized. */
int mcp_client_start_count(mcp_client *c);

/* Transport back ends (client_stdio.c, client_http.c) behind mcp_client. */
typedef struct mcp_client_ops {
    json_t *(*request)(void *impl, const char *method, json_t *params, int timeout_ms,
                       volatile int *cancel, gg_error *err);
    char *(*stderr_tail)(void *impl);
    int (*start_count)(void *impl);
    void (*destroy)(void *impl);
} mcp_client_ops;
void *mcp_stdio_new(const mcp_server_config *cfg, const mcp_client_policy *policy,
                    const mcp_client_ops **ops, gg_error *err);
void *mcp_http_new(const mcp_server_config *cfg, const mcp_client_policy *policy,
                   const mcp_client_ops **ops, gg_error *err);

/* ======================================================================================
 * Server section (owned by the gateway helper) follows.
 * ====================================================================================== */

#endif
