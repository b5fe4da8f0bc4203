/* client_http.c — a downstream MCP server over streamable HTTP (libcurl). Each request is a
 * POST accepting JSON or an SSE stream; the Mcp-Session-Id from initialize is kept and sent
 * with MCP-Protocol-Version; a 404 on a known session re-initializes once. Every socket
 * libcurl opens is checked against the policy (no loopback/private targets by default). */
#include "mcp/mcp.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define MAX_BODY (64u << 20)

typedef struct http_client {
    char *name, *url;
    char **headers;
    int timeout_ms;
    const mcp_client_policy *policy;
    pthread_mutex_t mu;
    pthread_mutex_t init_mu; /* one initialize at a time; concurrent callers wait for it */
    char *session;      /* Mcp-Session-Id */
    char *protocol;     /* negotiated version */
    bool ready;
    int starts;
    long long next_id;
    CURL *idle[8];      /* reusable handles: each keeps its live connections (TLS reuse) */
    int nidle;
} http_client;

/* A handle for one request: an idle one (reset, connections kept) or a new one. */
static CURL *handle_take(http_client *c) {
    pthread_mutex_lock(&c->mu);
    CURL *h = c->nidle ? c->idle[--c->nidle] : NULL;
    pthread_mutex_unlock(&c->mu);
    if (h) curl_easy_reset(h);
    else h = curl_easy_init();
    return h;
}

static void handle_give(http_client *c, CURL *h) {
    pthread_mutex_lock(&c->mu);
    if (c->nidle < (int)(sizeof c->idle / sizeof c->idle[0])) {
        c->idle[c->nidle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    if (h) curl_easy_cleanup(h);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_ALL); }

typedef struct xfer {
    http_client *c;
    gg_strbuf body;
    bool sse;
    char *session;
    long long want_id;   /* id whose response ends an SSE stream */
    json_t *found;       /* matching JSON-RPC message from the stream */
    size_t sse_scan;     /* parsed prefix of body for SSE */
    volatile int *cancel;
    bool too_big;
} xfer;

/* Parse complete SSE events in the buffer; keep the message with our id. */
static void sse_parse(xfer *x) {
    for (;;) {
        char *start = x->body.data + x->sse_scan;
        char *end = strstr(start, "\n\n");
        char *end2 = strstr(start, "\r\n\r\n");
        size_t sep = 2;
        if (end2 && (!end || end2 < end)) end = end2, sep = 4;
        if (!end) return;
        gg_strbuf data = GG_STRBUF_INIT;
        for (char *line = start; line < end;) {
            char *nl = memchr(line, '\n', (size_t)(end - line));
            char *le = nl ? nl : end;
            size_t ll = (size_t)(le - line);
            if (ll && line[ll - 1] == '\r') ll--;
            if (ll >= 5 && !strncmp(line, "data:", 5)) {
                const char *v = line + 5;
                size_t vl = ll - 5;
                if (vl && *v == ' ') v++, vl--;
                if (data.len) gg_strbuf_putc(&data, '\n');
                gg_strbuf_append(&data, v, vl);
            }
            line = nl ? nl + 1 : end;
        }
        x->sse_scan = (size_t)(end - x->body.data) + sep;
        if (data.len && !x->found) {
            json_t *m = json_loadb(data.data, data.len, 0, NULL);
            json_t *id = json_object_get(m, "id");
            if (m && json_is_integer(id) && json_integer_value(id) == x->want_id &&
                (json_object_get(m, "result") || json_object_get(m, "error")))
                x->found = m;
            else
                json_decref(m);
        }
        gg_strbuf_free(&data);
        if (x->found) return;
    }
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *user) {
    xfer *x = user;
    size_t n = size * nmemb;
    if (x->body.len + n > MAX_BODY) {
        x->too_big = true;
        return 0;
    }
    gg_strbuf_append(&x->body, ptr, n);
    if (x->sse) {
        sse_parse(x);
        if (x->found) return 0; /* got our answer: stop reading the stream */
    }
    return n;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *user) {
    xfer *x = user;
    size_t n = size * nitems;
    if (n > 15 && !strncasecmp(buf, "mcp-session-id:", 15)) {
        const char *v = buf + 15;
        size_t vl = n - 15;
        while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' ')) vl--;
        free(x->session);
        x->session = strndup(v, vl);
    } else if (n > 13 && !strncasecmp(buf, "content-type:", 13)) {
        const char *v = buf + 13;
        while (*v == ' ') v++;
        x->sse = !strncasecmp(v, "text/event-stream", 17);
    }
    return n;
}

static int on_progress(void *user, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
    xfer *x = user;
    return x->cancel && __atomic_load_n(x->cancel, __ATOMIC_RELAXED) ? 1 : 0;
}

/* Every address libcurl connects to passes the policy again (DNS rebinding, own listeners). */
static curl_socket_t on_opensocket(void *user, curlsocktype purpose, struct curl_sockaddr *a) {
    http_client *c = user;
    gg_error e = GG_ERROR_INIT;
    if (!mcp_policy_connect_ok(c->policy, c->url, &a->addr, &e)) {
        gg_log(GG_LOG_WARN, "downstream connection refused by policy", "server", c->name, "reason", e.message, NULL);
        gg_error_clear(&e);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

/* POST one JSON-RPC message. Returns the HTTP status (0 on transport failure, err set). */
static long post(http_client *c, json_t *msg, long long want_id, int timeout_ms, volatile int *cancel, xfer *x,
                 gg_error *err) {
    CURL *h = handle_take(c);
    if (!h) {
        gg_error_set(err, "transport", "cannot create a curl handle");
        return 0;
    }
    char *body = json_dumps(msg, JSON_COMPACT);
    struct curl_slist *hd = NULL;
    hd = curl_slist_append(hd, "Content-Type: application/json");
    hd = curl_slist_append(hd, "Accept: application/json, text/event-stream");
    char line[512];
    pthread_mutex_lock(&c->mu);
    if (c->session) {
        snprintf(line, sizeof line, "Mcp-Session-Id: %s", c->session);
        hd = curl_slist_append(hd, line);
    }
    snprintf(line, sizeof line, "MCP-Protocol-Version: %s", c->protocol ? c->protocol : MCP_CLIENT_PROTOCOL_VERSION);
    pthread_mutex_unlock(&c->mu);
    hd = curl_slist_append(hd, line);
    for (char **p = c->headers; p && *p; p++) hd = curl_slist_append(hd, *p);
    x->c = c;
    x->want_id = want_id;
    x->cancel = cancel;
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "{}");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_opensocket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, c);
    curl_easy_setopt(h, CURLOPT_PROXY, ""); /* no proxy from the environment: the policy checks real targets */
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x->found)) {
        if (rc == CURLE_ABORTED_BY_CALLBACK) gg_error_set(err, "cancelled", "Execution cancelled");
        else if (rc == CURLE_OPERATION_TIMEDOUT) gg_error_set(err, "timeout", "MCP error -32001: Request timed out");
        else if (x->too_big) gg_error_set(err, "transport", "response from MCP server '%s' is too large", c->name);
        else if (rc == CURLE_COULDNT_CONNECT && c->policy && !c->policy->allow_all)
            gg_error_set(err, "transport", "cannot connect to MCP server '%s' (%s; refused by policy.http_hosts: an "
                         "internal address not listed as an IP, or the gateway's own listener)",
                         c->name, curl_easy_strerror(rc));
        else gg_error_set(err, "transport", "MCP server '%s': %s", c->name, curl_easy_strerror(rc));
        status = 0;
    }
    curl_slist_free_all(hd);
    handle_give(c, h);
    free(body);
    return status;
}

static void xfer_free(xfer *x) {
    gg_strbuf_free(&x->body);
    free(x->session);
    json_decref(x->found);
}

/* One request/response; *status gets the HTTP status for the 404 re-initialize rule. */
static json_t *exchange(http_client *c, const char *method, json_t *params, int timeout_ms, volatile int *cancel,
                        long *status, gg_error *err) {
    pthread_mutex_lock(&c->mu);
    long long id = ++c->next_id;
    pthread_mutex_unlock(&c->mu);
    json_t *msg = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)id, "method", method);
    if (msg && params) json_object_set(msg, "params", params);
    xfer x = {0};
    *status = post(c, msg, id, timeout_ms, cancel, &x, err);
    json_decref(msg);
    json_t *result = NULL;
    if (*status == 0) goto out;
    if (x.session) {
        pthread_mutex_lock(&c->mu);
        free(c->session);
        c->session = x.session;
        x.session = NULL;
        pthread_mutex_unlock(&c->mu);
    }
    if (*status < 200 || *status >= 300) {
        gg_error_set(err, "transport", "MCP server '%s' answered HTTP %ld to %s", c->name, *status, method);
        goto out;
    }
    json_t *m = x.found;
    x.found = NULL;
    if (!m && !x.sse && x.body.len) m = json_loadb(x.body.data, x.body.len, 0, NULL);
    if (!m) {
        gg_error_set(err, "transport", "MCP server '%s' sent no response to %s", c->name, method);
        goto out;
    }
    json_t *e = json_object_get(m, "error");
    if (e) {
        const char *em = json_string_value(json_object_get(e, "message"));
        gg_error_set(err, "mcp_error", "MCP error %lld: %s", (long long)json_integer_value(json_object_get(e, "code")),
                     em ? em : "unknown error");
    } else {
        result = json_incref(json_object_get(m, "result"));
        if (!result) gg_error_set(err, "mcp_error", "MCP server '%s' sent a response without a result", c->name);
    }
    json_decref(m);
out:
    xfer_free(&x);
    return result;
}

static bool initialize(http_client *c, int timeout_ms, volatile int *cancel, gg_error *err) {
    pthread_mutex_lock(&c->mu);
    free(c->session);
    c->session = NULL;
    free(c->protocol);
    c->protocol = NULL;
    c->starts++;
    pthread_mutex_unlock(&c->mu);
    json_t *params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", MCP_CLIENT_PROTOCOL_VERSION, "capabilities",
                               "clientInfo", "name", "graphgate", "version", GG_VERSION);
    long status;
    json_t *res = exchange(c, "initialize", params, timeout_ms, cancel, &status, err);
    json_decref(params);
    if (!res) return false;
    const char *pv = json_string_value(json_object_get(res, "protocolVersion"));
    pthread_mutex_lock(&c->mu);
    c->protocol = strdup(pv ? pv : MCP_CLIENT_PROTOCOL_VERSION);
    pthread_mutex_unlock(&c->mu);
    json_decref(res);
    json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
    xfer x = {0};
    gg_error e2 = GG_ERROR_INIT;
    long st = post(c, note, -1, timeout_ms, cancel, &x, &e2);
    json_decref(note);
    xfer_free(&x);
    if (st < 200 || st >= 300) {
        if (gg_error_is_set(&e2)) gg_error_move(err, &e2);
        else gg_error_set(err, "transport", "MCP server '%s' refused notifications/initialized (HTTP %ld)", c->name, st);
        return false;
    }
    pthread_mutex_lock(&c->mu);
    c->ready = true;
    pthread_mutex_unlock(&c->mu);
    return true;
}

static bool ensure_session(http_client *c, int timeout_ms, volatile int *cancel, gg_error *err) {
    pthread_mutex_lock(&c->init_mu);
    pthread_mutex_lock(&c->mu);
    bool ready = c->ready;
    pthread_mutex_unlock(&c->mu);
    bool ok = ready || initialize(c, timeout_ms, cancel, err);
    pthread_mutex_unlock(&c->init_mu);
    return ok;
}

static json_t *http_request(void *impl, const char *method, json_t *params, int timeout_ms, volatile int *cancel,
                            gg_error *err) {
    http_client *c = impl;
    if (timeout_ms <= 0) timeout_ms = c->timeout_ms;
    if (!ensure_session(c, timeout_ms, cancel, err)) return NULL;
    long status = 0;
    json_t *r = exchange(c, method, params, timeout_ms, cancel, &status, err);
    if (!r && status == 404) { /* the server forgot our session: start a new one, once */
        gg_error_clear(err);
        pthread_mutex_lock(&c->mu);
        c->ready = false;
        pthread_mutex_unlock(&c->mu);
        if (!ensure_session(c, timeout_ms, cancel, err)) return NULL;
        r = exchange(c, method, params, timeout_ms, cancel, &status, err);
    }
    return r;
}

static char *http_stderr_tail(void *impl) { return strdup(""); }

static int http_start_count(void *impl) {
    http_client *c = impl;
    pthread_mutex_lock(&c->mu);
    int n = c->starts;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* Ends the session politely (DELETE, short timeout) and frees the client. */
static void http_destroy(void *impl) {
    http_client *c = impl;
    if (c->session) {
        CURL *h = curl_easy_init();
        if (h) {
            char line[512];
            snprintf(line, sizeof line, "Mcp-Session-Id: %s", c->session);
            struct curl_slist *hd = curl_slist_append(NULL, line);
            curl_easy_setopt(h, CURLOPT_URL, c->url);
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
            curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
            curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
            curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
            curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_opensocket);
            curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, c);
            curl_easy_setopt(h, CURLOPT_PROXY, ""); /* no proxy from the environment: the policy checks real targets */
            curl_easy_perform(h);
            curl_slist_free_all(hd);
            curl_easy_cleanup(h);
        }
    }
    for (int i = 0; i < c->nidle; i++) curl_easy_cleanup(c->idle[i]);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->init_mu);
    for (char **p = c->headers; p && *p; p++) free(*p);
    free(c->headers);
    free(c->name);
    free(c->url);
    free(c->session);
    free(c->protocol);
    free(c);
}

static const mcp_client_ops http_ops = {http_request, http_stderr_tail, http_start_count, http_destroy};

/* The streamable HTTP transport: checks the URL against the policy; the session starts
 * with the first request. */
void *mcp_http_new(const mcp_server_config *cfg, const mcp_client_policy *policy, const mcp_client_ops **ops,
                   gg_error *err) {
    if (!cfg->url || (strncasecmp(cfg->url, "http://", 7) && strncasecmp(cfg->url, "https://", 8))) {
        gg_error_set(err, "invalid_config", "streamable HTTP MCP server needs an http(s) url");
        return NULL;
    }
    if (!mcp_policy_check_url(policy, cfg->url, err)) return NULL;
    pthread_once(&curl_once, curl_init_once);
    http_client *c = calloc(1, sizeof *c);
    if (!c) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->init_mu, NULL);
    c->policy = policy;
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : MCP_CLIENT_DEFAULT_TIMEOUT_MS;
    c->name = strdup(cfg->name ? cfg->name : cfg->url);
    c->url = strdup(cfg->url);
    size_t n = 0;
    for (const char *const *p = cfg->headers; p && *p; p++) n++;
    c->headers = calloc(n + 1, sizeof *c->headers);
    bool ok = c->name && c->url && c->headers;
    for (size_t i = 0; ok && i < n; i++) ok = (c->headers[i] = strdup(cfg->headers[i])) != NULL;
    if (!ok) {
        http_destroy(c);
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    *ops = &http_ops;
    return c;
}
