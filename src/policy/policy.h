/* policy.h — the egress policy: which downstream MCP servers a graph may reach (HTTP hosts
 * and ports, stdio commands with their arguments, environment and working directory), with
 * per-tenant grants and the gateway's own listeners kept out of reach.
 *
 * Ownership: a mcp_client_policy is the caller's (its lists borrowed by whatever checks
 * against it); mcp_policy_self and mcp_policy_set are owned handles (_free); the checks
 * borrow their arguments and keep nothing.
 *
 * Threads: a policy and a policy set are immutable once built and read from any thread. A
 * mcp_policy_self is filled from one thread (_add, then _ready) and read from any: entries
 * are published with release stores.
 */
#ifndef GG_POLICY_H
#define GG_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

/* allow_all is local mode (`graphgate run`). Otherwise:
 * - HTTP: the URL's host and port must match a host_allowlist entry: "host" (any port),
 *   "host:port" (that port only), "[v6]" / "[v6]:port" or a bare IPv6 literal; names compare
 *   case-insensitively, IP literals by address. Empty list = no HTTP server at all. Every
 *   address the host is or resolves to is checked again when libcurl connects
 *   (mcp_policy_connect_ok, no DNS rebinding in between): never one of the gateway's own
 *   listeners (self; a wildcard bind covers every local address), and a loopback,
 *   link-local, private, CGNAT, unspecified or multicast address only when the matching
 *   entry names an IP literal or "localhost" (a name is trusted for public addresses only).
 * - stdio: command + args must start with a command_allowlist entry, an argv prefix written
 *   as blank-separated words ("npx -y @modelcontextprotocol/server-filesystem"); the first
 *   word matches the command as written or the absolute path PATH resolves it to. Extra
 *   arguments are free, except that an entry naming no operand ("node", "npx -y") does not
 *   let the next argument be an option ("node -e CODE" is refused). env may not set loader
 *   or interpreter variables (mcp_policy_env_refused); cwd must be an existing absolute
 *   directory inside cwd_root (none allowed when cwd_root is NULL). */
typedef struct mcp_policy_self mcp_policy_self;
typedef struct mcp_client_policy {
    bool allow_all;
    const char *const *command_allowlist; /* NULL-terminated argv prefixes; NULL = none */
    const char *const *host_allowlist;    /* NULL-terminated host entries; NULL = none */
    bool allow_http_plaintext;            /* allow http:// (https:// always allowed) */
    const char *cwd_root;                 /* stdio cwd confined here; NULL = no cwd allowed */
    const mcp_policy_self *self;          /* the gateway's listeners; NULL = none in process */
} mcp_client_policy;

/* err code "policy" when refused. mcp_policy_check_argv checks a stdio server definition:
 * command, args (argv[1..], NULL-terminated, may be NULL), env ("NAME=value" entries,
 * NULL-terminated, may be NULL) and cwd (NULL = none); mcp.h's mcp_policy_check_stdio takes
 * them from a mcp_server_config. mcp_policy_check_command checks a bare command (no args). */
bool mcp_policy_check_argv(const mcp_client_policy *p, const char *command, const char *const *args,
                           const char *const *env, const char *cwd, gg_error *err);
bool mcp_policy_check_command(const mcp_client_policy *p, const char *command, gg_error *err);
/* NULL when a graph may set this "NAME=value", else the reason (static text). */
const char *mcp_policy_env_refused(const char *assignment);
/* err code "policy" when refused, "dns" when the host does not resolve (the connect-time
 * check still applies once it does). */
bool mcp_policy_check_url(const mcp_client_policy *p, const char *url, gg_error *err);
/* The connect-time check of one address (libcurl's CURLOPT_OPENSOCKETFUNCTION) for url. */
struct sockaddr;
bool mcp_policy_connect_ok(const mcp_client_policy *p, const char *url, const struct sockaddr *sa,
                           gg_error *err);
/* True when the address (sockaddr_in/in6) is loopback, link-local, private, CGNAT,
 * unspecified, multicast or IPv4-mapped versions of those. */
bool mcp_policy_address_is_internal(const struct sockaddr *sa);

/* The gateway's own listeners (bound addresses with their real ports). Until _ready every
 * HTTP egress under a policy holding it is refused (the listeners are not known yet). Add
 * from one thread before _ready; read from any. */
mcp_policy_self *mcp_policy_self_new(void);
void mcp_policy_self_free(mcp_policy_self *s);
bool mcp_policy_self_add(mcp_policy_self *s, const struct sockaddr *sa); /* false when full */
void mcp_policy_self_ready(mcp_policy_self *s);

/* A default policy plus per-tenant grants: "TENANT=ENTRY" items add ENTRY to that tenant's
 * command or host allowlist (the default entries still apply). base's lists and the grant
 * strings are borrowed and must outlive the set. NULL + err "invalid_config" for a grant
 * without "TENANT=". */
typedef struct mcp_policy_set mcp_policy_set;
mcp_policy_set *mcp_policy_set_new(const mcp_client_policy *base, const char *const *cmd_grants,
                                   const char *const *host_grants, gg_error *err);
/* The tenant's policy (the default one when it has no grants); valid until _free. */
const mcp_client_policy *mcp_policy_set_get(const mcp_policy_set *s, const char *tenant);
void mcp_policy_set_free(mcp_policy_set *s);

#endif
