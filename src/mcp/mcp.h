/* mcp.h — the Model Context Protocol: clients for downstream servers (stdio, streamable
 * HTTP) and the server side that serves mcp_provider tools.
 *
 * Ownership: every handle returned here is owned by the caller and released with its _free
 * function; json_t arguments are borrowed and results are new references. A raw
 * pass-through request (mcp_http_raw_start) is no handle: its strings are copied when it
 * starts and it ends by itself with one call of its done.
 *
 * Context: what clients share — the limits set once by their owner (downstream.*), the auth
 * provider factory, the listen streams' counters and per-owner slots, the stdio start
 * buckets — lives in a named downstream context (mcp_downstream), never in the process: the
 * composition root (the gateway at start; `graphgate run`, a test) makes one, sets it up
 * before its clients start and passes it in every client's mcp_server_config.downstream.
 * Each client holds a reference, so mcp_downstream_free (the owner's, at its stop) frees it
 * once the last client is gone. A client made without one gets a context of its own with
 * the defaults (nothing shared, no auth factory).
 *
 * Threads: the client side's callbacks (done, notify, request handlers, a raw request's
 * stream and done) run on the shared event loop's thread (a stdio client's on its reader
 * thread), or before the starting call returns when it cannot start, and must not block.
 */
#ifndef GG_MCP_H
#define GG_MCP_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "jsonschema/jsonschema.h" /* tool schemas (mcp_schema) */
#include "policy/policy.h"         /* what clients may reach (mcp_client_policy) */
#include "util/util.h"

/* ======================================================================================
 * Client section: downstream MCP servers used by mcp nodes.
 * ====================================================================================== */

#define MCP_CLIENT_PROTOCOL_VERSION "2025-11-25" /* the session era's version a client asks for */
#define MCP_CLIENT_DEFAULT_TIMEOUT_MS 30000

typedef enum { MCP_TRANSPORT_STDIO, MCP_TRANSPORT_HTTP } mcp_transport;

/* A downstream context (see the opening comment): its setters (mcp_http_set_limits,
 * mcp_http_set_listen_owner_max, mcp_http_set_auth_factory, mcp_stdio_set_limits) are the
 * owner's, called before clients start; mcp_http_listen_stats reads it from any thread. */
typedef struct mcp_downstream mcp_downstream;
/* A context with the defaults (NULL when out of memory). */
mcp_downstream *mcp_downstream_new(void);
/* The owner lets go of it: freed now, or when the last client holding it is freed. */
void mcp_downstream_free(mcp_downstream *d);

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
    const char *owner;           /* the tenant the client works for: listen streams are
                                  * bounded per owner as well (NULL = only the process bound) */
    const json_t *auth;          /* streamable HTTP: the entry's `auth` settings (borrowed, copied
                                  * by the client's provider; NULL = none), see mcp_auth_provider */
    const char *protocol;        /* streamable HTTP: NULL = the session era (initialize,
                                  * MCP_CLIENT_PROTOCOL_VERSION); MCP_VERSION_MODERN = stateless
                                  * 2026-07-28 requests (see "the stateless era" in client_http.c) */
    const char *principal;       /* streamable HTTP with per-user auth: the caller (its key_id)
                                  * whose grant the provider uses (NULL = none) */
    mcp_downstream *downstream;  /* the context the client belongs to (borrowed: the client takes
                                  * a reference); NULL = one of its own with the defaults */
} mcp_server_config;

/* The egress policy's check of a stdio definition (policy/policy.h: mcp_policy_check_argv).
 * err code "policy" when refused. */
static inline bool mcp_policy_check_stdio(const mcp_client_policy *p, const mcp_server_config *cfg, gg_error *err) {
    return mcp_policy_check_argv(p, cfg->command, cfg->args, cfg->env, cfg->cwd, err);
}

/* ---- credentials for a streamable-HTTP server (the auth seam) --------------------------
 * A client whose config carries `auth` settings gets a provider from the factory the
 * composition root installed (mcp_http_set_auth_factory; src/auth implements it, so this
 * layer never includes src/auth). The client asks the provider for its headers on every
 * request (headers: "Authorization: ..." and, with DPoP, "DPoP: ..." lines separated by
 * '\n' into out; false when it has no credential yet: the request goes without). On a 401 or
 * 403 the client hands the provider the answer's WWW-Authenticate and DPoP-Nonce (RFC 9449
 * section 9; each NULL when none) and waits, holding no thread, for done(user, err): err NULL = new credentials, send the
 * request again (at most MCP_AUTH_MAX_ROUNDS times per request); else the request fails
 * with err. challenge may call done on any thread, before it returns or later; done must
 * not block. The provider's memory stays valid until destroy, which waits for every
 * challenge in flight to call done. */
#define MCP_AUTH_MAX_ROUNDS 3
typedef void (*mcp_auth_done_fn)(void *user, gg_error *err);
typedef struct mcp_auth_provider {
    void *impl;
    bool (*headers)(void *impl, const char *url, const char *method, char *out, size_t cap);
    void (*challenge)(void *impl, const char *url, int status, const char *www_authenticate, const char *dpop_nonce,
                      mcp_auth_done_fn done, void *user);
    void (*destroy)(void *impl);
    /* Optional (NULL: ignored). On behalf of the caller (auth type token_exchange): a call
     * about to go out hands the provider its caller's access token to exchange when a
     * challenge needs one (token: a copy is held, counted); the call's end hands NULL (one
     * hold released; the copy is wiped with the last). Never sent as is. */
    void (*subject)(void *impl, const char *token);
} mcp_auth_provider;
/* Make a provider for a server: settings (borrowed), the server's URL, name, owner (the
 * tenant, may be NULL) and principal (per-user credentials: whose; NULL), and the client's policy (borrowed, outlives the provider; its own
 * requests — metadata, registration, tokens — pass it too). false with err when the
 * settings cannot be used. */
struct mcp_client_policy;
typedef bool (*mcp_auth_factory_fn)(void *user, const json_t *settings, const char *url, const char *name,
                                    const char *owner, const char *principal, const struct mcp_client_policy *policy,
                                    mcp_auth_provider *out, gg_error *err);
/* Whether `auth` settings (an `auth:` object; NULL: none) act for each caller: the calling
 * user's own access token is the subject of an exchange (RFC 8693) made for the call, so the
 * server is reached as that user with a token obtained for them, never with the caller's
 * token itself — `type: token_exchange` (the downstream's authorization server exchanges
 * it), or `type: id_jag` with `subject: caller` (the enterprise IdP exchanges it for an
 * ID-JAG, SEP-990, which the downstream's authorization server takes as a jwt-bearer
 * assertion). Such a server has a client per (server, principal), is called only by an
 * OAuth principal (an API key, a task or a graph calling a graph: principal_required), is
 * listed by nobody at an upload, and its tokens are exchanged again, never refreshed. One
 * predicate for graph (load, runs), auth (the OAuth client) and the gateway's factory: it
 * sits at the seam they share because graph and auth may not use each other. */
bool mcp_auth_for_caller(const json_t *auth);
/* Install once in d before its clients start (NULL: a config with auth settings is refused);
 * user is passed to fn (the installer's context, e.g. where it keeps the providers it made). */
void mcp_http_set_auth_factory(mcp_downstream *d, mcp_auth_factory_fn fn, void *user);

typedef struct mcp_client mcp_client;

/* Create a client; nothing is spawned or connected until the first request. The policy is
 * borrowed and must outlive the client (NULL = allow everything). */
mcp_client *mcp_client_new(const mcp_server_config *cfg, const mcp_client_policy *policy, gg_error *err);
/* Stop the child (stdin closed, SIGTERM, then SIGKILL) / end the HTTP session. */
void mcp_client_free(mcp_client *c);

/* Asynchronous requests: start one and get its outcome through done, called exactly once
 * (possibly before mcp_client_start returns, for an immediate failure; otherwise on the
 * client's event-loop thread or the stdio reader thread — done must not block). result is
 * borrowed (NULL on failure); err is the caller's to move from (set on failure). No thread
 * waits meanwhile. The session is initialized first if needed (initialize +
 * notifications/initialized, once per process/session); a stdio server that crashed is
 * restarted with backoff, and while it backs off calls fail at once with the reason. A
 * streamable-HTTP session the server forgot (400/404 naming the session, restart) is
 * initialized again and the call retried once. cancel (may be NULL) is watched: once it
 * is set the call ends with "cancelled" within a few ms and notifications/cancelled goes
 * downstream, as on timeout. timeout_ms 0 = the server's configured timeout. Error codes:
 * "mcp_error" (JSON-RPC error; message "MCP error <code>: <message>"), "timeout",
 * "cancelled", "transport" (spawn/connect/crash; stderr tail appended), "refused" (the
 * connection was refused), "policy", "backoff" (restarting after a crash), "downstream_auth"
 * (a server with auth settings: no credentials could be had, or it kept refusing them). */
typedef void (*mcp_client_done_fn)(void *user, json_t *result, gg_error *err);
void mcp_client_start(mcp_client *c, const char *method, json_t *params, int timeout_ms,
                      atomic_int *cancel, mcp_client_done_fn done, void *user);
/* tools/call {name, arguments} started asynchronously. */
void mcp_client_call_tool_start(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms,
                                atomic_int *cancel, mcp_client_done_fn done, void *user);
/* The same carrying a W3C trace context (traceparent, tracestate may be NULL) in
 * params._meta, and for HTTP servers also as headers. */
void mcp_client_call_tool_start_traced(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms,
                                       atomic_int *cancel, const char *traceparent, const char *tracestate,
                                       mcp_client_done_fn done, void *user);
/* Synchronous: starts the request and waits for it (graphgate run, CLI, tests). Safe from
 * many threads at once. Returns the JSON-RPC result (new reference) or NULL with err. */
json_t *mcp_client_request(mcp_client *c, const char *method, json_t *params, int timeout_ms,
                           atomic_int *cancel, gg_error *err);
/* tools/call convenience: params {name, arguments}. */
json_t *mcp_client_call_tool(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms,
                             atomic_int *cancel, gg_error *err);
/* Notifications the server sends on its own (e.g. notifications/tools/list_changed) go to
 * fn(user, method, params) on the transport's reader thread (it must not block); fn NULL
 * stops them. A stdio server's come on its stdout; a streamable-HTTP server's on the GET
 * stream mcp_client_listen opens. */
typedef void (*mcp_client_notify_fn)(void *user, const char *method, json_t *params);
void mcp_client_set_notify(mcp_client *c, mcp_client_notify_fn fn, void *user);
/* Requests the server sends the client (elicitation/create, sampling/createMessage,
 * roots/list, ...): over HTTP in the session era those that come on a call's SSE answer or
 * the listen stream, in the stateless era each input request of an InputRequiredResult
 * (MRTR: the client then retries the original request with the inputResponses and the
 * requestState unchanged, under a new id); over stdio those on the child's stdout.
 * fn(user, method, params, reply) runs on the transport's thread (the event loop, a stdio
 * client's reader) and must not block; it answers through reply exactly once, then or
 * later, from any thread (mcp_client_reply_result / _error; params is borrowed for the
 * call only). At most 16 replies are owed at once (past that: the default answer). The
 * client's _free waits for replies still owed. capabilities (borrowed, copied; NULL = {})
 * is what initialize (or each stateless request's _meta) declares. Without a handler
 * (the default, fn NULL) a ping is answered and anything else refused with -32601, and an
 * InputRequiredResult fails the call. Set before the first request. */
typedef struct mcp_client_reply mcp_client_reply;
typedef void (*mcp_client_server_request_fn)(void *user, const char *method, json_t *params, mcp_client_reply *reply);
void mcp_client_set_request_handler(mcp_client *c, json_t *capabilities, mcp_client_server_request_fn fn, void *user);
void mcp_client_reply_result(mcp_client_reply *r, json_t *result); /* result borrowed */
void mcp_client_reply_error(mcp_client_reply *r, int code, const char *message);
/* A call's own handler for the requests the server sends while that call runs: over HTTP
 * those on its SSE answer (session era) and its InputRequiredResults (stateless era) go to
 * relay->fn(relay->user, ...) instead of the client-wide handler (same rules: must not
 * block, answers through reply exactly once; fn runs before the call's done, on the
 * transport's thread). Requests that name no call (the listen stream) still go to the
 * client-wide handler; a stdio child's go to the one relaying call in flight on it, and
 * with several are refused (client_stdio.c). relay NULL = mcp_client_call_tool_start_traced. */
typedef struct mcp_call_relay {
    mcp_client_server_request_fn fn;
    void *user;
    /* NULL or: the notifications on the call's SSE answer (notifications/progress, .../message)
     * go to notify(user, ...) on the transport's thread (must not block); the call then asks
     * for progress (params._meta.progressToken). A stdio child's: its progress by that token,
     * its log messages while the call is the one relaying call in flight on it. */
    mcp_client_notify_fn notify;
} mcp_call_relay;
void mcp_client_call_tool_start_relay(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms,
                                      atomic_int *cancel, const char *traceparent, const char *tracestate,
                                      const mcp_call_relay *relay, mcp_client_done_fn done, void *user);
/* Keep listening to the server (streamable HTTP; a no-op for stdio, whose stdout is always
 * read): the session is initialized now if it is not, and once it is — when the server
 * declared a listChanged capability (tools, resources or prompts), or the client has a
 * request handler (mcp_client_set_request_handler) — one GET stream
 * (Accept: text/event-stream) stays open for the server's own messages, reopened with
 * backoff (the server's retry: hint, Last-Event-ID) when it ends, and again after every
 * re-initialization. A server that answers 405 offers no stream: never asked again. A
 * stream that passes MCP_HTTP_LISTEN_MAX_EVENT bytes in a line or an event, or sends
 * something that is not JSON-RPC, is cut off (logged) and reopened later. At most
 * MCP_HTTP_LISTEN_MAX streams are open in a downstream context, MCP_HTTP_LISTEN_MAX_OWNER for
 * one owner (mcp_server_config.owner); past either a client waits for a slot. */
#define MCP_HTTP_LISTEN_MAX 1024
/* ... and one owner (tenant) at most this many of them, so that one tenant's graphs cannot
 * take every slot and leave the others' downstreams heard only by the periodic refresh. */
#define MCP_HTTP_LISTEN_MAX_OWNER 128
/* Set d's per-owner bound (config tenants.max_listen_streams; 0 = none) before clients start. */
void mcp_http_set_listen_owner_max(mcp_downstream *d, int max);
/* What one streamable-HTTP answer may cost (config downstream.max_message_bytes: one JSON
 * body or one SSE event, the transfer aborted as soon as it passes; downstream.max_parse_bytes:
 * heap one message's parse may use). Set in d before its clients start; 0 keeps the default. */
#define MCP_HTTP_MAX_MESSAGE_DEFAULT (4u << 20)
#define MCP_HTTP_MAX_PARSE_DEFAULT (32u << 20)
void mcp_http_set_limits(mcp_downstream *d, size_t max_message_bytes, size_t max_parse_bytes);
/* Bytes the downstream answers of one owner's (tenant's) exchanges in flight may hold at
 * once (config tenants.max_downstream_bytes; 0 = no bound); a call whose answer would pass
 * it fails. Set before clients start (loop.c; see mcp_loop_hold in loop.h). */
#define MCP_DOWNSTREAM_OWNER_MAX_BYTES_DEFAULT (64u << 20)
void mcp_downstream_set_owner_max_bytes(size_t max);
/* ---- raw pass-through requests (client_http.c) ------------------------------------------
 * One POST made by the streamable-HTTP client's own exchange machinery (the same headers
 * handling, deadline and cancel flag on the shared event loop, size bound and owner charge,
 * streamed answer), but with no MCP in it: the body goes out as given, with the header lines
 * given and none of its own but what HTTP needs (Host, Content-Length), and the answer comes
 * back as the other end wrote it — no session, no
 * _meta, no id check, an error or input-required answer is an answer like any other. For a
 * request built whole elsewhere (the gateway forwarding a call to another replica). No
 * retries, no redirects, no proxy, only http and https; a policy (NULL: none) checks every
 * address it connects to. Errors name `name`, never the URL.
 * done(user, answer, err) exactly once, on the loop thread (or before mcp_http_raw_start
 * returns when it cannot start): answer (never NULL, borrowed for the call) carries the
 * status and the headers the caller may hand on — Content-Type, and Retry-After when it is
 * valid (delay-seconds up to MCP_HTTP_RETRY_AFTER_MAX, or an IMF-fixdate; else NULL) — and
 * the body as sent (NUL-terminated; NULL when streamed or on error); err set on failure:
 * "unavailable" (not reached, or the answer broke off), "timeout" past timeout_ms,
 * "cancelled" once *cancel is set (the connection is closed: the other end sees its client
 * go) or the stream's taker stopped, "too_large" past max_bytes or the owner's
 * tenants.max_downstream_bytes, "policy" (the policy refused the address), "oom".
 * stream (NULL: none) takes an answer of type text/event-stream as it comes, on the loop
 * thread: stream(user, head, NULL, 0) when its first bytes come (head: status and headers,
 * no body; false: buffer it as any answer), then stream(user, NULL, bytes, n) per chunk
 * (false: no more, the transfer stops); done's answer then has no body (err set when the
 * stream broke off). */
#define MCP_HTTP_RETRY_AFTER_MAX 86400
typedef struct mcp_http_answer {
    long status;              /* 0: no answer */
    const char *content_type; /* NULL: none */
    const char *retry_after;  /* NULL: none, or not valid */
    const char *body;         /* NULL: streamed, or no answer */
    size_t len;
} mcp_http_answer;
typedef void (*mcp_http_raw_done_fn)(void *user, const mcp_http_answer *answer, gg_error *err);
typedef bool (*mcp_http_raw_stream_fn)(void *user, const mcp_http_answer *head, const char *bytes, size_t n);
typedef struct mcp_http_raw {
    const char *url;
    const char *name;                /* how errors name the other end (NULL: "the server") */
    const char *owner;               /* charged for the bytes held (NULL: nobody) */
    const mcp_client_policy *policy; /* NULL: none (the caller trusts url) */
    const char *const *headers;      /* "Name: value" lines, NULL-terminated */
    const char *body;
    size_t len;
    size_t max_bytes;                /* a plain answer's bound; 0: downstream.max_message_bytes */
    mcp_downstream *downstream;      /* whose limits apply (read at the start); NULL: the defaults */
    int timeout_ms;                  /* 0: MCP_CLIENT_DEFAULT_TIMEOUT_MS */
    atomic_int *cancel;              /* may be NULL */
    mcp_http_raw_stream_fn stream;
    mcp_http_raw_done_fn done;
    void *user;
} mcp_http_raw;
void mcp_http_raw_start(const mcp_http_raw *rq);
#define MCP_HTTP_LISTEN_MAX_EVENT (1u << 20)
void mcp_client_listen(mcp_client *c);
/* The listen streams of d's clients: open now, and counts since d was made. */
typedef struct mcp_listen_stats {
    int open;
    unsigned long long opened, events, list_changed, cut_off, no_stream;
    unsigned long long owner_full; /* connects put off: the owner held its MCP_HTTP_LISTEN_MAX_OWNER */
} mcp_listen_stats;
mcp_listen_stats mcp_http_listen_stats(const mcp_downstream *d);
/* Last bytes the child wrote on stderr (caller frees; "" for HTTP). */
char *mcp_client_stderr_tail(mcp_client *c);
/* Times the child was (re)started / the HTTP session initialized. */
int mcp_client_start_count(mcp_client *c);
/* The caller's access token for the client's credential provider to exchange (token: hold a
 * copy; NULL: release one hold), see mcp_auth_provider.subject; nothing without one. */
void mcp_client_auth_subject(mcp_client *c, const char *token);
/* What the server declared of itself, by a dotted path into its capabilities
 * ("resources.subscribe", "prompts"): MCP_DECLARES_YES when the member is an object or true,
 * MCP_DECLARES_NO when it is absent (or false/null), MCP_DECLARES_UNKNOWN while the client has
 * none to go by — session era: before the first initialize answer (the last one counts, a
 * re-initialization replaces it); stateless era: before a server/discover answer. Any thread
 * (the transport keeps them under its lock; nothing is handed out). */
typedef enum { MCP_DECLARES_UNKNOWN = -1, MCP_DECLARES_NO = 0, MCP_DECLARES_YES = 1 } mcp_declares;
mcp_declares mcp_client_server_declares(mcp_client *c, const char *path);
/* Learn them when unknown: a ping (session era: the session is initialized first) or a
 * server/discover (stateless era); done(user, NULL, err) as for mcp_client_start, then
 * mcp_client_server_declares answers. Known already: done(user, NULL, NULL) at once. */
void mcp_client_declared_start(mcp_client *c, atomic_int *cancel, mcp_client_done_fn done, void *user);

/* Transport back ends (client_stdio.c, client_http.c) behind mcp_client. */
typedef struct mcp_client_ops {
    void (*start)(void *impl, const char *method, json_t *params, int timeout_ms,
                  atomic_int *cancel, mcp_client_done_fn done, void *user);
    char *(*stderr_tail)(void *impl);
    int (*start_count)(void *impl);
    void (*destroy)(void *impl);
    void (*set_notify)(void *impl, mcp_client_notify_fn fn, void *user); /* NULL: none delivered */
    void (*listen)(void *impl); /* NULL: nothing to do (see mcp_client_listen) */
    /* NULL: the transport keeps the default answers (see mcp_client_set_request_handler) */
    void (*set_request_handler)(void *impl, json_t *capabilities, mcp_client_server_request_fn fn, void *user);
    /* NULL: a call's relay is ignored (see mcp_client_call_tool_start_relay) */
    void (*start_relay)(void *impl, const char *method, json_t *params, int timeout_ms, atomic_int *cancel,
                        const mcp_call_relay *relay, mcp_client_done_fn done, void *user);
    void (*auth_subject)(void *impl, const char *token); /* NULL: no credentials to exchange */
    /* NULL: never known. See mcp_client_server_declares; *probe (not NULL): the request that
     * teaches them (static text) */
    mcp_declares (*server_declares)(void *impl, const char *path, const char **probe);
} mcp_client_ops;
/* What one stdio downstream child may cost the gateway (config downstream.*;
 * docs/operations.md "Downstream limits"). Set once before clients start; a client copies them when created. */
typedef struct mcp_stdio_limits {
    size_t max_message_bytes;  /* one stdout line; longer ones are dropped as they stream; 4MiB */
    size_t max_parse_bytes;    /* heap one line's parse may use (mcp_wire_parse); 32MiB */
    size_t stderr_bytes_per_s; /* stderr read at most this fast, else paused; 1MiB; 0 = no bound */
    int child_nice;            /* nice value of every child; 10 */
    size_t child_memory_bytes; /* RLIMIT_AS of every child; 0 = not set */
    int child_cpu_seconds;     /* RLIMIT_CPU of every child; 0 = not set */
    int max_starts_per_minute; /* starts of one server definition of one owner; 12; 0 = no bound */
} mcp_stdio_limits;
#define MCP_STDIO_LIMITS_DEFAULT {4u << 20, 32u << 20, 1u << 20, 10, 0, 0, 12}
void mcp_stdio_set_limits(mcp_downstream *d, const mcp_stdio_limits *l);
/* The transports' parts of a downstream context (client_http.c, client_stdio.c), made and
 * freed with it (client_core.c); a transport's new reads cfg->downstream, never NULL there. */
typedef struct mcp_http_shared mcp_http_shared;
typedef struct mcp_stdio_shared mcp_stdio_shared;
mcp_http_shared *mcp_http_shared_new(void);
void mcp_http_shared_free(mcp_http_shared *h);
mcp_stdio_shared *mcp_stdio_shared_new(void);
void mcp_stdio_shared_free(mcp_stdio_shared *s);
struct mcp_downstream {
    _Atomic int refs; /* the owner's and one per client */
    mcp_http_shared *http;
    mcp_stdio_shared *stdio;
};
void *mcp_stdio_new(const mcp_server_config *cfg, const mcp_client_policy *policy,
                    const mcp_client_ops **ops, gg_error *err);
void *mcp_http_new(const mcp_server_config *cfg, const mcp_client_policy *policy,
                   const mcp_client_ops **ops, gg_error *err);

/* ======================================================================================
 * Server section: what graphgate serves over MCP.
 * ====================================================================================== */

#include <stdint.h>
#include "mcp/provider.h"

/* A tools/call's checks, shared by the gateway and `graphgate run` so both answer alike:
 * arguments against inputSchema (err "invalid_params": "Invalid arguments for tool T:
 * /pointer: why") and structuredContent (NULL when the result has none) against outputSchema
 * (err "schema_violation": "Tool T returned output that does not match its outputSchema:
 * ..."). A NULL schema accepts anything. */
bool mcp_tool_check_arguments(const mcp_schema *input, const char *tool, json_t *args, gg_error *err);
bool mcp_tool_check_output(const mcp_schema *output, const char *tool, json_t *structured, gg_error *err);

/* ---- JSON-RPC 2.0 (jsonrpc.c) --------------------------------------------------------- */
enum {
    MCP_PARSE_ERROR = -32700,
    MCP_INVALID_REQUEST = -32600,
    MCP_METHOD_NOT_FOUND = -32601,
    MCP_INVALID_PARAMS = -32602,
    MCP_INTERNAL_ERROR = -32603,
    MCP_SERVER_BUSY = -32000,        /* worker queue full / shutting down */
    MCP_REQUEST_TIMEOUT = -32001,    /* the call ran past the gateway's request timeout */
    MCP_REQUEST_CANCELLED = -32800,
    MCP_RESOURCE_NOT_FOUND = -32002, /* resources/read, subscribe: no such URI (data {uri}) */
    MCP_HEADER_MISMATCH = -32020,    /* 2026-07-28: headers disagree with the body, or missing */
    MCP_MISSING_CAPABILITY = -32021, /* 2026-07-28: data {requiredCapabilities} */
    MCP_URL_ELICITATION_REQUIRED = -32042, /* 2025-11-25: data {elicitations: [url-mode]} */
    MCP_UNSUPPORTED_VERSION = -32022, /* 2026-07-28: data {supported, requested} */
};

typedef enum {
    MCP_MSG_INVALID,      /* error_code/error_message say why; id set when it was valid */
    MCP_MSG_REQUEST,      /* method + id (+ params) */
    MCP_MSG_NOTIFICATION, /* method, no id */
    MCP_MSG_RESPONSE,     /* a client's response to a server request: result or error + id */
} mcp_msg_kind;

/* One classified message; every pointer borrows from the parsed value. */
typedef struct mcp_message {
    mcp_msg_kind kind;
    json_t *id;          /* string or number (or NULL); echoed back with its type */
    const char *method;
    json_t *params;      /* object (or array: rejected at dispatch) or NULL */
    int error_code;
    const char *error_message;
    json_t *result, *error; /* MCP_MSG_RESPONSE: one of them (borrowed) */
} mcp_message;

/* Parse a body into one JSON value (new reference) or NULL with err (code "parse_error"):
 * not JSON, invalid UTF-8, or nested deeper than max_depth (0 = 64). */
json_t *mcp_jsonrpc_parse(const char *buf, size_t len, int max_depth, gg_error *err);
/* Classify one value (not an array) as request/notification/response/invalid. */
void mcp_jsonrpc_classify(json_t *value, mcp_message *out);
/* Serialized messages (heap, compact). id may be NULL (→ null). */
char *mcp_jsonrpc_result(json_t *id, json_t *result);
char *mcp_jsonrpc_result_raw(json_t *id, const char *result_json); /* pre-serialized result */
char *mcp_jsonrpc_error(json_t *id, int code, const char *message, json_t *data /* may be NULL */);
char *mcp_jsonrpc_notification(const char *method, json_t *params);

/* ---- protocol versions and log levels (server.c) ------------------------------------- */
#define MCP_VERSION_LATEST "2025-11-25"
#define MCP_VERSION_DEFAULT "2025-03-26" /* assumed when a client sends no version header */
bool mcp_version_supported(const char *v);          /* 2025-11-25, 2025-06-18, 2025-03-26 */
const char *mcp_version_negotiate(const char *requested); /* itself if supported, else latest */
bool mcp_version_allows_batch(const char *v);       /* only before 2025-06-18 */

/* RFC 5424 levels as MCP names them; MCP_LOG_OFF = no notifications/message at all. */
typedef enum {
    MCP_LOG_DEBUG, MCP_LOG_INFO, MCP_LOG_NOTICE, MCP_LOG_WARNING, MCP_LOG_ERROR,
    MCP_LOG_CRITICAL, MCP_LOG_ALERT, MCP_LOG_EMERGENCY, MCP_LOG_OFF
} mcp_log_level;
int mcp_log_level_parse(const char *name); /* -1 for an unknown name */
const char *mcp_log_level_name(mcp_log_level l);

/* ---- tool results (server.c): providers shape CallToolResults the same way ---------- */
/* An object → structuredContent plus the same JSON as one text block; a string → one text
 * block holding the string itself; anything else → one text block with its JSON. */
json_t *mcp_tool_result_from_value(json_t *value);
json_t *mcp_tool_error_result(const char *message); /* {content:[text], isError:true} */
/* true when b is one MCP content block (text, image, audio, resource, resource_link) with
 * the fields its type requires; else false and why (a sentence) in why. */
bool mcp_content_block_valid(json_t *b, char *why, size_t why_size);

/* ---- the server over one provider (server.c) ------------------------------------------ */
typedef struct mcp_server mcp_server;

typedef struct mcp_server_options {
    size_t page_size; /* tools per tools/list page; 0 = 100 */
} mcp_server_options;

/* Build the server for a provider (takes a reference): lists the tools once, compiles their
 * schemas and pre-serializes the tools/list pages. NULL + err if a schema is invalid. */
mcp_server *mcp_server_new(mcp_provider *provider, const mcp_server_options *opt, gg_error *err);
mcp_server *mcp_server_ref(mcp_server *s);
void mcp_server_unref(mcp_server *s);
/* Whether a reference other than the caller's exists now (a cache that owns one reference
 * asks before dropping it: a server someone else holds is in use). */
bool mcp_server_shared(const mcp_server *s);
mcp_provider *mcp_server_provider(const mcp_server *s);
size_t mcp_server_tool_count(const mcp_server *s);
/* What the server offers beyond tools (for list_changed and resources/updated on a new version). */
bool mcp_server_has_resources(const mcp_server *s);
bool mcp_server_has_prompts(const mcp_server *s);
bool mcp_server_serves_uri(const mcp_server *s, const char *uri);

/* What the transport knows about the request being dispatched. */
typedef struct mcp_request_ctx {
    const char *protocol_version; /* effective version (session's, header's or default) */
    mcp_log_level log_level;      /* the session's logging level (2026-07-28: the request's) */
    bool has_session;
    bool modern;                  /* 2026-07-28, stateless (mcp_modern_check passed) */
    int client_caps;              /* modern: MCP_CLIENT_CAPS_* the request declared */
    /* modern: the key requestStates are sealed with (NULL: no input-required results, the
     * nodes fail for want of a client) and what they are bound to (see reqstate.c) */
    const uint8_t *state_key;
    const char *state_binding;
} mcp_request_ctx;

/* A tool's definition as listed (borrowed) or NULL. */
json_t *mcp_server_tool_def(const mcp_server *s, const char *name);
/* The provider's caching hint (ttlMs 0, private when it gives none). */
void mcp_server_cache_hint(const mcp_server *s, int *ttl_ms, bool *public_scope);

/* ---- the stateless 2026-07-28 revision (stateless.c) -------------------------------------
 * Served on the same endpoints as the session era: a request whose params._meta names a
 * protocol version (or whose MCP-Protocol-Version header is not a session-era version, or
 * whose method is server/discover or subscriptions/listen) is checked with
 * mcp_modern_check and dispatched with mcp_request_ctx.modern; its response body goes
 * through mcp_modern_shape and is sent with mcp_modern_status. */
#define MCP_VERSION_MODERN "2026-07-28"
bool mcp_version_is_modern(const char *v);
json_t *mcp_modern_versions(void); /* new array: supportedVersions */
bool mcp_request_is_modern(json_t *msg, const char *header_version);
/* A request header by name (case-insensitive), or NULL. */
typedef const char *(*mcp_header_fn)(void *user, const char *name);
typedef struct mcp_modern_req {
    int client_caps;         /* MCP_CLIENT_CAPS_* declared in _meta */
    mcp_log_level log_level; /* _meta logLevel, MCP_LOG_OFF when absent */
    char *error;             /* on failure: the JSON-RPC error (heap, the caller frees) */
    int status;              /* on failure: its HTTP status */
} mcp_modern_req;
/* The revision's per-request checks in its order (see stateless.c); false with r->error. */
bool mcp_modern_check(const mcp_server *s, const mcp_message *m, const char *header_version, mcp_header_fn hdr,
                      void *hu, mcp_modern_req *r);
/* A response body (consumed) with resultType on results, ttlMs/cacheScope on cacheable
 * ones and the revision's error codes. */
char *mcp_modern_shape(const mcp_server *s, const char *method, char *body);
/* The HTTP status of a modern response body: 404 for -32601, 400 for request errors. */
int mcp_modern_status(const char *body);

/* ---- requestState (reqstate.c): a waiting run's state sealed for the client to hold ---- */
#define MCP_REQSTATE_MAX (256 * 1024) /* characters of a token */
#define MCP_REQSTATE_TTL_S 600        /* how long a client may take to answer */
/* A token (heap) or NULL (out of memory, or the state is too large). */
char *mcp_reqstate_seal(const uint8_t key[32], const char *binding, json_t *state, int64_t expires);
/* The state (new reference) or NULL with why (static text): malformed, altered, bound to
 * something else, expired, too large. */
json_t *mcp_reqstate_open(const uint8_t key[32], const char *binding, const char *token, const char **why);

typedef struct mcp_call mcp_call;

typedef enum {
    MCP_OUT_RESPONSE, /* body holds a serialized JSON-RPC response */
    MCP_OUT_ACCEPTED, /* notification or response accepted: HTTP 202, no body */
    MCP_OUT_CALL,     /* call holds a tools/call to run on a worker (mcp_call_run) */
} mcp_outcome_kind;

typedef struct mcp_outcome {
    mcp_outcome_kind kind;
    char *body;           /* MCP_OUT_RESPONSE; heap */
    mcp_call *call;       /* MCP_OUT_CALL; owned by the outcome until the transport takes it */
    /* side effects for the transport to apply to the session: */
    bool initialize;      /* initialize succeeded: issue a session for negotiated_version */
    int client_caps;      /* with initialize: MCP_CLIENT_CAPS_* the client declared */
    char negotiated_version[16];
    int set_log_level;    /* >= 0: logging/setLevel asked for this level */
    json_t *cancel_id;    /* notifications/cancelled: the requestId (new reference) */
    int subscribe;        /* resources/subscribe 1, unsubscribe -1: subscribe_uri for the session */
    char *subscribe_uri;  /* heap */
    /* a response to a request this server sent the client (elicit, sample nodes): the
     * transport hands it to mcp_session_deliver (new references; result or error) */
    json_t *response_id, *response_result, *response_error;
    /* a tools/call of a known tool refused before it ran, its arguments failing the tool's
     * inputSchema (or not an object): the tool, the arguments as sent and the refusal's
     * message, for the transport to record (the gateway's history: status invalid_input);
     * NULL otherwise. Heap / new reference. */
    char *refused_tool, *refused_error;
    json_t *refused_args;
} mcp_outcome;

/* Dispatch one classified message. Protocol errors become JSON-RPC error responses; cheap
 * work (initialize, ping, tools/list, argument validation) is done here, the run itself is
 * handed back as out->call. */
void mcp_server_dispatch(mcp_server *s, const mcp_message *msg, const mcp_request_ctx *rc,
                         mcp_outcome *out);
void mcp_outcome_clear(mcp_outcome *out);

/* ---- a tools/call in flight ----------------------------------------------------------- */
/* Receives each serialized notification (progress, log message) emitted before the result,
 * on the worker thread. */
typedef void (*mcp_emit_fn)(void *user, const char *json, size_t len);
void mcp_call_set_emitter(mcp_call *c, mcp_emit_fn fn, void *user);
atomic_int *mcp_call_cancel_flag(mcp_call *c); /* set on notifications/cancelled, shutdown */
/* The run's shared cancel flag the call adopted (mcp_call_ctx.run.adopt_cancel), referenced
 * for the caller (mcp_cancel_cell_unref), or NULL: a task's run parked with a downstream's
 * relayed request keeps it after the call ends (tasks.c). */
mcp_cancel_cell *mcp_call_cancel_cell(mcp_call *c);
const char *mcp_call_tool(const mcp_call *c);
json_t *mcp_call_id(const mcp_call *c);        /* borrowed */
json_t *mcp_call_arguments(const mcp_call *c); /* borrowed */
bool mcp_call_wants_progress(const mcp_call *c);
json_t *mcp_call_history(const mcp_call *c);   /* node records the provider appended */
/* Node records as JSON text instead (see mcp_call_ctx.history.text); set before running. */
void mcp_call_use_history_text(mcp_call *c, size_t max_value_bytes);
/* Bounds on those records for the whole run (0 = none); see mcp_call_ctx.history. */
void mcp_call_bound_history(mcp_call *c, size_t max_records, size_t max_bytes);
char *mcp_call_take_history_text(mcp_call *c);  /* "[...]", caller frees; NULL on OOM */
/* Run the tool (blocking; on a worker) and return the serialized JSON-RPC response. */
char *mcp_call_run(mcp_call *c, const char *request_id, const char *key_id, const char *tenant);
/* Asynchronous run: the call holds no thread while the tool waits downstream. done gets the
 * serialized JSON-RPC response (caller frees) exactly once, on a worker (through resume)
 * or before mcp_call_start returns; request_id, key_id and tenant must stay valid until
 * then. */
typedef void (*mcp_call_done_fn)(void *user, char *response);
typedef struct mcp_call_async {
    void (*resume)(void *resume_user, void (*fn)(void *arg), void *arg); /* see mcp_call_ctx.run */
    void *resume_user;
    double accepted_ms;       /* monotonic; 0 = now */
    mcp_call_done_fn done;
    void *user;
} mcp_call_async;
void mcp_call_start(mcp_call *c, const char *request_id, const char *key_id, const char *tenant,
                    const mcp_call_async *how);
/* The call's W3C trace context: what the client sent in params._meta (invalid when
 * nothing), which the caller may replace (by its header's, by its own span's) before the
 * run starts; the provider sees it as mcp_call_ctx.identity.trace. */
gg_trace_ctx *mcp_call_trace(mcp_call *c);
/* After run: "ok", "error" (isError result), "cancelled" or "failed" (protocol error). */
const char *mcp_call_status(const mcp_call *c);
json_t *mcp_call_result(const mcp_call *c);    /* borrowed CallToolResult or NULL */
const char *mcp_call_error(const mcp_call *c); /* message or NULL */
double mcp_call_duration_ms(const mcp_call *c);
/* A 2026-07-28 call of a task-supporting tool from a client that declared the tasks
 * extension: the transport answers with a task and runs it in the background. */
bool mcp_call_as_task(const mcp_call *c);
/* A request the provider answers through its downstream servers (provider.h forward): not a
 * run of the graph, so not recorded as an execution. */
bool mcp_call_forwarded(const mcp_call *c);
/* The HTTP status of the call's answer when sent as plain JSON: a 2026-07-28 call refused by
 * its provider with a request error (-32602, -32021) is a 400, as the same refusal before
 * the call ran; everything else 200. */
int mcp_call_http_status(const mcp_call *c, const char *body);
/* The error code of a run that failed ("limit", "no_route", ...; "" when none). */
const char *mcp_call_fail_code(const mcp_call *c);
/* Input-required rounds (2026-07-28) keep one execution record: the id the resumed state
 * carries (NULL on a first round; the record id set with mcp_call_set_exec_id goes into the
 * next round's sealed state), and whether the call ended waiting for input. */
const char *mcp_call_round_exec_id(const mcp_call *c);
/* A resumed state's single-use id (32 hex digits; NULL on a first round or a state sealed
 * without one) and, in *round, the round it answers: the gateway claims it in the shared
 * store before the run goes on, so each round is answered once (gg_store_round_claim). */
const char *mcp_call_round_nonce(const mcp_call *c, int *round);
bool mcp_call_input_required(const mcp_call *c);
/* The state a resumed round carries, opened (borrowed; NULL on a first round): the gateway
 * reads where a relay round's run is held (its "holder") to forward the retry there. */
json_t *mcp_call_resume_state(const mcp_call *c);

/* ---- a request forwarded to another replica (forward.c) ------------------------------------
 * mcp_http_raw_start for a request the gateway sends, unchanged, to another replica's internal
 * listener (the holder of a relay round's run): its URL is the gateway's to trust (a sealed
 * state names it), so no egress policy applies; errors name "the other replica", never its
 * URL; a plain answer is bounded at MCP_FORWARD_MAX_BYTES and charged to owner (the tenant).
 * ds: whose downstream.max_parse_bytes applies. See mcp_http_raw for the rest (headers,
 * stream, done, error codes). */
#define MCP_FORWARD_MAX_BYTES (16u << 20)
void mcp_forward_start(mcp_downstream *ds, const char *url, const char *owner, const char *const *headers, const char *body, size_t len,
                       int timeout_ms, atomic_int *cancel, mcp_http_raw_stream_fn stream, mcp_http_raw_done_fn done,
                       void *user);
/* The response for a call that will not run (queue full, shutdown). */
char *mcp_call_refuse(mcp_call *c, int code, const char *message);
/* Inline runs: a pure tool with nothing to stream may be tried on the HTTP thread with a
 * budget; NULL + *over means "run it on a worker after all" (the call is unchanged). */
bool mcp_call_can_inline(const mcp_call *c);
bool mcp_call_may_wait(const mcp_call *c); /* the tool may wait on I/O (not pure) */
char *mcp_call_run_inline(mcp_call *c, const char *request_id, const char *key_id, const char *tenant,
                          double budget_ms, bool *over);
void mcp_call_free(mcp_call *c);

/* ---- sessions (session.c) -------------------------------------------------------------
 * Mcp-Session-Id is a signed token (crypto_auth, HMAC-SHA512-256) binding tenant, graph,
 * key id, protocol version and expiry: any replica with the secret validates it alone.
 * Revocations, the logging level and the calls in flight live in a bounded in-memory
 * table keyed by the token's nonce. */
#define MCP_SESSION_ID_MAX 256
typedef struct mcp_sessions mcp_sessions;

typedef struct mcp_session {
    char tenant[64], graph[64], key_id[64];
    char version[16];
    int64_t expires;   /* unix seconds */
    uint8_t nonce[16];
    mcp_log_level level; /* logging/setLevel level at check time (MCP_LOG_OFF = none) */
} mcp_session;

/* secret: 32 bytes, or NULL for a random one (sessions then end with the process). */
mcp_sessions *mcp_sessions_new(const uint8_t *secret, int64_t ttl_seconds, size_t max_entries);
void mcp_sessions_free(mcp_sessions *ss);
/* Sessions per owner (the endpoint's tenant; on a mount the key): at most max live ones
 * and 4 x max deleted ones not yet expired (0 = no bound; the default). */
void mcp_sessions_set_owner_max(mcp_sessions *ss, size_t max);
/* Stale sessions (tenants.max_sessions never locks a tenant out): a session of an owner
 * with no request for more than idle_seconds and no stream or call holding it (see
 * mcp_session_busy) is forgotten (0 = never), and with evict_lru an initialize at the bound
 * forgets the owner's least recently used such session instead of being refused. A
 * session forgotten so answers "not_found" on this process. Off by default. */
void mcp_sessions_set_idle(mcp_sessions *ss, int64_t idle_seconds, bool evict_lru);
/* Something holds the session (delta +1: a GET stream opened, a call started) or let it go
 * (-1): a held session is never idle nor evicted. A no-op for sessions issued elsewhere. */
void mcp_session_busy(mcp_sessions *ss, const uint8_t nonce[16], int delta);
/* Sessions forgotten because the owner was at its bound / because they were idle. */
void mcp_sessions_forgotten(mcp_sessions *ss, unsigned long long *evicted, unsigned long long *idle);
/* The tenant's live and deleted-but-unexpired sessions issued by this process, and the
 * sessions refused by the bound in all (each may be NULL). */
void mcp_sessions_owner_usage(mcp_sessions *ss, const char *tenant, size_t *live, size_t *revoked,
                              unsigned long long *refused_all);
/* Issue a token into id (MCP_SESSION_ID_MAX bytes); false when the owner is at its bound. */
bool mcp_session_issue(mcp_sessions *ss, const char *tenant, const char *graph,
                       const char *key_id, const char *version, char *id, mcp_session *out);
/* Check a token for this endpoint and key: "not_found" for a bad signature, expiry,
 * revocation, or another tenant's/graph's/key's session (indistinguishable on purpose). */
bool mcp_session_check(mcp_sessions *ss, const char *id, const char *tenant, const char *graph,
                       const char *key_id, mcp_session *out, gg_error *err);
void mcp_session_revoke(mcp_sessions *ss, const mcp_session *s); /* DELETE; stops its runs */
mcp_log_level mcp_session_log_level(mcp_sessions *ss, const mcp_session *s);
void mcp_session_set_log_level(mcp_sessions *ss, const mcp_session *s, mcp_log_level l);
void mcp_session_track_call(mcp_sessions *ss, const mcp_session *s, json_t *request_id,
                            atomic_int *cancel_flag);
void mcp_session_untrack_call(mcp_sessions *ss, const mcp_session *s, json_t *request_id);
bool mcp_session_cancel_call(mcp_sessions *ss, const mcp_session *s, json_t *request_id);
/* The client's capabilities from initialize (KNOWN set once recorded; the table may have
 * forgotten an idle session: then 0, unknown, and requests are sent anyway). */
enum { MCP_CLIENT_CAPS_KNOWN = 1, MCP_CLIENT_CAPS_ELICITATION = 2, MCP_CLIENT_CAPS_SAMPLING = 4, MCP_CLIENT_CAPS_ROOTS = 8,
       MCP_CLIENT_CAPS_TASKS = 16 /* 2026-07-28: capabilities.extensions["io.modelcontextprotocol/tasks"] */,
       MCP_CLIENT_CAPS_ELICITATION_URL = 32 /* elicitation.url: URL-mode elicitations ({} alone is form only) */ };
#define MCP_TASKS_EXTENSION "io.modelcontextprotocol/tasks"
void mcp_session_set_client_caps(mcp_sessions *ss, const mcp_session *s, int caps);
int mcp_session_client_caps(mcp_sessions *ss, const mcp_session *s);
/* resources/subscribe (on) / unsubscribe for the session; false past 64 subscriptions. */
bool mcp_session_subscribe(mcp_sessions *ss, const mcp_session *s, const char *uri, bool on);
json_t *mcp_session_subscriptions(mcp_sessions *ss, const mcp_session *s); /* new array of URIs */
/* Requests this server sent the session's client (elicitation/create, sampling/createMessage),
 * waiting for its answer: at most 16 per session (track → false past it). Whoever removes an
 * entry (deliver, untrack, the session table dropping the session) calls release(u) once;
 * deliver also calls deliver(u, result, error) first (outside the table's lock). */
bool mcp_session_track_request(mcp_sessions *ss, const mcp_session *s, const char *id,
                               void (*deliver)(void *u, json_t *result, json_t *error), void (*release)(void *u),
                               void *u);
void mcp_session_untrack_request(mcp_sessions *ss, const mcp_session *s, const char *id);
/* The client's answer: false when no request of the session has this id (unknown or
 * already answered). */
bool mcp_session_deliver(mcp_sessions *ss, const mcp_session *s, json_t *id, json_t *result, json_t *error);
/* The call may send requests to its client (elicit and sample nodes): on the emitter's
 * stream, answered through the session (mcp_session_deliver). Without it those nodes fail
 * with a clear error. Set before the call starts; sessions and sess must outlive the call. */
void mcp_call_set_client(mcp_call *c, mcp_sessions *sessions, const mcp_session *sess);
/* The call's execution record id (mcp_call_ctx.history.exec_id: graphs it calls record it as their
 * parent); borrowed, must outlive the call. start_ms: the start the record is stored at
 * (history.exec_start_ms; 0 = none). Set before the call starts. */
void mcp_call_set_exec_id(mcp_call *c, const char *exec_id, long long start_ms);
/* The calling key's scopes (mcp_call_ctx.identity.scopes); set before the call starts. */
void mcp_call_set_scopes(mcp_call *c, unsigned scopes);
/* Who makes a call, as graphs see it ($caller): strings borrowed here, copied (cut to fit)
 * by mcp_call_set_caller into the call, so setting it allocates nothing. Never a token. */
typedef struct mcp_caller {
    const char *key_id;                      /* an API key's id; for a token, a hash of issuer + subject */
    const char *issuer, *subject, *client_id; /* an OAuth access token's claims; NULL for an API key */
    const char *scopes;                      /* graphgate scope names, comma-separated */
    const char *session; /* the 2025-11-25 session the call came on (its nonce, 32 hex digits; set by
                            mcp_call_set_client, not by mcp_call_set_caller), or NULL */
} mcp_caller;
void mcp_call_set_caller(mcp_call *c, const mcp_caller *who);
/* What mcp_call_set_caller set (borrowed, lives as long as the call), or NULL. */
const mcp_caller *mcp_call_caller(const mcp_call *c);
/* The caller's own access token (an OAuth principal's, as it came in the Authorization
 * header; at most MCP_SUBJECT_TOKEN_MAX bytes, else ignored): held in memory by the call
 * only, wiped when it is freed, read by providers as mcp_call_ctx.identity.subject_token for a
 * token exchange (RFC 8693). Never recorded, traced or logged. */
#define MCP_SUBJECT_TOKEN_MAX 8192
void mcp_call_set_subject_token(mcp_call *c, const char *token, size_t len);


#endif
