/* client.c — the transport-independent MCP client front (mcp_client) and the policy that
 * decides which downstream servers may be reached. */
#include "mcp/mcp.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

struct mcp_client {
    const mcp_client_ops *ops;
    void *impl;
};

/* A client for one downstream server; the transport starts lazily on the first request. */
mcp_client *mcp_client_new(const mcp_server_config *cfg, const mcp_client_policy *policy, gg_error *err) {
    mcp_client *c = calloc(1, sizeof *c);
    if (!c) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    c->impl = cfg->transport == MCP_TRANSPORT_HTTP ? mcp_http_new(cfg, policy, &c->ops, err)
                                                   : mcp_stdio_new(cfg, policy, &c->ops, err);
    if (!c->impl) {
        free(c);
        return NULL;
    }
    return c;
}

/* Stop the transport (child process or HTTP session) and free the client. */
void mcp_client_free(mcp_client *c) {
    if (!c) return;
    c->ops->destroy(c->impl);
    free(c);
}

/* Start one JSON-RPC request through the transport (see mcp.h). */
void mcp_client_start(mcp_client *c, const char *method, json_t *params, int timeout_ms, volatile int *cancel,
                      mcp_client_done_fn done, void *user) {
    c->ops->start(c->impl, method, params, timeout_ms, cancel, done, user);
}

void mcp_client_call_tool_start(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms,
                                volatile int *cancel, mcp_client_done_fn done, void *user) {
    json_t *params = json_pack("{s:s, s:o}", "name", tool, "arguments", arguments ? json_incref(arguments) : json_object());
    if (!params) {
        gg_error e = GG_ERROR_INIT;
        gg_error_set(&e, "oom", "out of memory");
        done(user, NULL, &e);
        gg_error_clear(&e);
        return;
    }
    mcp_client_start(c, "tools/call", params, timeout_ms, cancel, done, user);
    json_decref(params);
}

/* A synchronous caller waiting for its asynchronous request. */
typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    json_t *result;
    gg_error err;
} waiter;

static void waiter_done(void *user, json_t *result, gg_error *err) {
    waiter *w = user;
    pthread_mutex_lock(&w->mu);
    w->result = json_incref(result);
    if (err && gg_error_is_set(err)) gg_error_move(&w->err, err);
    w->done = true;
    pthread_cond_signal(&w->cv); /* under the lock: the waiter frees w once it sees done */
    pthread_mutex_unlock(&w->mu);
}

/* Wait for the asynchronous request (see mcp.h for errors and threading). */
json_t *mcp_client_request(mcp_client *c, const char *method, json_t *params, int timeout_ms, volatile int *cancel,
                           gg_error *err) {
    waiter w = {.done = false, .result = NULL, .err = GG_ERROR_INIT};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    mcp_client_start(c, method, params, timeout_ms, cancel, waiter_done, &w);
    pthread_mutex_lock(&w.mu);
    while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    if (!w.result) {
        if (gg_error_is_set(&w.err)) gg_error_move(err, &w.err);
        else gg_error_set(err, "transport", "request failed");
    }
    gg_error_clear(&w.err);
    return w.result;
}

/* tools/call {name, arguments}; returns the CallToolResult. */
json_t *mcp_client_call_tool(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms, volatile int *cancel,
                             gg_error *err) {
    json_t *params = json_pack("{s:s, s:o}", "name", tool, "arguments", arguments ? json_incref(arguments) : json_object());
    if (!params) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    json_t *r = mcp_client_request(c, "tools/call", params, timeout_ms, cancel, err);
    json_decref(params);
    return r;
}

/* Diagnostics: the child's recent stderr and how often the transport was (re)started. */
char *mcp_client_stderr_tail(mcp_client *c) { return c->ops->stderr_tail ? c->ops->stderr_tail(c->impl) : strdup(""); }
int mcp_client_start_count(mcp_client *c) { return c->ops->start_count ? c->ops->start_count(c->impl) : 0; }

/* ---- policy ------------------------------------------------------------------------------- */

static bool in_list(const char *const *list, const char *s) {
    for (; list && *list; list++)
        if (!strcmp(*list, s)) return true;
    return false;
}

/* Where execvp would find command (first executable on PATH), into buf; false if nowhere. */
static bool resolve_on_path(const char *command, char *buf, size_t size) {
    const char *path = getenv("PATH");
    if (!path || strchr(command, '/')) return false;
    while (*path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        if (n && (size_t)snprintf(buf, size, "%.*s/%s", (int)n, path, command) < size && access(buf, X_OK) == 0)
            return true;
        path += n + (end ? 1 : 0);
    }
    return false;
}

/* A stdio command may run when local mode allows everything or it is listed: either as
 * written in the graph or as the absolute path PATH resolves it to. */
bool mcp_policy_check_command(const mcp_client_policy *p, const char *command, gg_error *err) {
    if (!p || p->allow_all) return true;
    if (in_list(p->command_allowlist, command)) return true;
    char resolved[4096];
    if (resolve_on_path(command, resolved, sizeof resolved) && in_list(p->command_allowlist, resolved)) return true;
    gg_error_set(err, "policy", "command '%s' is not in the stdio command allowlist", command);
    return false;
}

static bool v4_internal(uint32_t a) { /* host byte order */
    return (a >> 24) == 0 || (a >> 24) == 10 || (a >> 24) == 127 || (a >> 16) == 0xA9FE /* 169.254/16 */ ||
           (a >> 20) == 0xAC1 /* 172.16/12 */ || (a >> 16) == 0xC0A8 /* 192.168/16 */ ||
           (a >> 22) == (100u << 2 | 1) /* 100.64/10 */ || (a >> 28) == 0xE /* multicast */ ||
           (a >> 28) == 0xF /* reserved, broadcast */ || (a >> 8) == 0xC00000 /* 192.0.0/24 */;
}

/* Internal-network test used for HTTP targets (see mcp.h for the ranges). */
bool mcp_policy_address_is_internal(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        return v4_internal(ntohl(s4->sin_addr.s_addr));
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
            uint32_t v4;
            memcpy(&v4, &a->s6_addr[12], 4);
            return v4_internal(ntohl(v4));
        }
        return IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LINKLOCAL(a) ||
               IN6_IS_ADDR_SITELOCAL(a) || IN6_IS_ADDR_MULTICAST(a) || (a->s6_addr[0] & 0xfe) == 0xfc /* fc00::/7 */;
    }
    return true; /* unknown families are never allowed */
}

/* Extract the host of an http(s) URL into buf (brackets of IPv6 literals removed). */
static bool url_host(const char *url, char *buf, size_t size) {
    const char *p = strstr(url, "://");
    if (!p) return false;
    p += 3;
    const char *at = NULL;
    for (const char *q = p; *q && *q != '/' && *q != '?' && *q != '#'; q++)
        if (*q == '@') at = q;
    if (at) p = at + 1;
    const char *end;
    if (*p == '[') {
        p++;
        end = strchr(p, ']');
        if (!end) return false;
    } else {
        end = p;
        while (*end && *end != ':' && *end != '/' && *end != '?' && *end != '#') end++;
    }
    size_t n = (size_t)(end - p);
    if (n == 0 || n >= size) return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return true;
}

/* URL check before connecting: scheme, then every address the host resolves to. libcurl's
 * socket callback repeats the address check at connect time. */
bool mcp_policy_check_url(const mcp_client_policy *p, const char *url, gg_error *err) {
    if (!p || p->allow_all) return true;
    bool https = !strncasecmp(url, "https://", 8);
    if (!https && !(p->allow_http_plaintext && !strncasecmp(url, "http://", 7))) {
        gg_error_set(err, "policy", "url '%s' must use https", url);
        return false;
    }
    char host[256];
    if (!url_host(url, host, sizeof host)) {
        gg_error_set(err, "policy", "url '%s' has no valid host", url);
        return false;
    }
    if (in_list(p->host_allowlist, host)) return true;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) {
        gg_error_set(err, "dns", "cannot resolve host '%s': %s", host, gai_strerror(rc));
        return false;
    }
    bool ok = true;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
        if (mcp_policy_address_is_internal(ai->ai_addr)) ok = false;
    freeaddrinfo(res);
    if (!ok) gg_error_set(err, "policy", "host '%s' resolves to a loopback, link-local or private address", host);
    return ok;
}

/* Is host (from a URL) on the allowlist? Used by the HTTP transport's socket callback. */
bool mcp_policy_host_allowlisted(const mcp_client_policy *p, const char *url);
bool mcp_policy_host_allowlisted(const mcp_client_policy *p, const char *url) {
    char host[256];
    if (!p || p->allow_all) return true;
    return url_host(url, host, sizeof host) && in_list(p->host_allowlist, host);
}
