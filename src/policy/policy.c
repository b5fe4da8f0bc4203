/* policy.c — which downstream MCP servers a graph may reach: HTTP hosts (host or host:port
 * entries, literal and resolved addresses, never the gateway's own listeners) and stdio
 * commands (argv prefixes, environment and working directory). See policy.h for the rules. */
#include "policy/policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define HOST_MAX 256
#define ARGV_PREFIX_MAX 32

/* ---- addresses ---------------------------------------------------------------------------- */

static bool v4_internal(uint32_t a) { /* host byte order */
    return (a >> 24) == 0 || (a >> 24) == 10 || (a >> 24) == 127 || (a >> 16) == 0xA9FE /* 169.254/16 */ ||
           (a >> 20) == 0xAC1 /* 172.16/12 */ || (a >> 16) == 0xC0A8 /* 192.168/16 */ ||
           (a >> 22) == (100u << 2 | 1) /* 100.64/10 */ || (a >> 28) == 0xE /* multicast */ ||
           (a >> 28) == 0xF /* reserved, broadcast */ || (a >> 8) == 0xC00000 /* 192.0.0/24 */;
}

/* Internal-network test used for HTTP targets (see policy.h for the ranges). */
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

/* An address reduced to comparable bytes: IPv4 (also IPv4-mapped IPv6) as 4 bytes, IPv6 as
 * 16, plus the port. false for other families. */
typedef struct norm_addr {
    int family; /* AF_INET or AF_INET6 */
    unsigned char b[16];
    unsigned port;
} norm_addr;

static bool normalize(const struct sockaddr *sa, norm_addr *n) {
    memset(n, 0, sizeof *n);
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        n->family = AF_INET;
        memcpy(n->b, &s4->sin_addr, 4);
        n->port = ntohs(s4->sin_port);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        n->port = ntohs(s6->sin6_port);
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
            n->family = AF_INET;
            memcpy(n->b, &s6->sin6_addr.s6_addr[12], 4);
        } else {
            n->family = AF_INET6;
            memcpy(n->b, &s6->sin6_addr, 16);
        }
        return true;
    }
    return false;
}

static bool norm_unspecified(const norm_addr *a) {
    size_t len = a->family == AF_INET ? 4 : 16;
    for (size_t i = 0; i < len; i++)
        if (a->b[i]) return false;
    return true;
}

static bool norm_same_ip(const norm_addr *a, const norm_addr *b) {
    return a->family == b->family && memcmp(a->b, b->b, a->family == AF_INET ? 4 : 16) == 0;
}

/* ---- the gateway's own listeners ---------------------------------------------------------- */

#define SELF_MAX 8

struct mcp_policy_self {
    norm_addr addr[SELF_MAX];
    atomic_int n;      /* entries published */
    atomic_bool ready; /* every listener is in: egress may start */
};

mcp_policy_self *mcp_policy_self_new(void) { return calloc(1, sizeof(mcp_policy_self)); }
void mcp_policy_self_free(mcp_policy_self *s) { free(s); }

bool mcp_policy_self_add(mcp_policy_self *s, const struct sockaddr *sa) {
    int n = atomic_load(&s->n);
    if (n >= SELF_MAX || !normalize(sa, &s->addr[n])) return false;
    atomic_store_explicit(&s->n, n + 1, memory_order_release);
    return true;
}

void mcp_policy_self_ready(mcp_policy_self *s) { atomic_store_explicit(&s->ready, true, memory_order_release); }

/* Is a an address of this machine (loopback, unspecified or on one of its interfaces)? */
static bool is_local_address(const norm_addr *a) {
    if (norm_unspecified(a)) return true;
    if (a->family == AF_INET && a->b[0] == 127) return true;
    static const unsigned char v6_loop[16] = {[15] = 1};
    if (a->family == AF_INET6 && memcmp(a->b, v6_loop, 16) == 0) return true;
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0) return true; /* cannot tell: assume it is ours */
    bool local = false;
    for (struct ifaddrs *i = ifs; i && !local; i = i->ifa_next) {
        norm_addr b;
        if (i->ifa_addr && normalize(i->ifa_addr, &b) && norm_same_ip(a, &b)) local = true;
    }
    freeifaddrs(ifs);
    return local;
}

/* Does the address reach one of the gateway's listeners? A wildcard bind (0.0.0.0, ::)
 * listens on every local address of its port; an IPv6 wildcard usually takes IPv4 too. */
static bool is_self(const mcp_policy_self *s, const norm_addr *a) {
    int n = atomic_load_explicit(&s->n, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        const norm_addr *l = &s->addr[i];
        if (l->port != a->port) continue;
        if (norm_unspecified(l)) {
            if (is_local_address(a)) return true;
        } else if (norm_same_ip(l, a) || (norm_unspecified(a))) {
            return true;
        }
    }
    return false;
}

/* ---- host entries and URLs ---------------------------------------------------------------- */

/* An IP literal (brackets already removed) → family and bytes; false for names. */
static bool parse_ip(const char *host, norm_addr *out) {
    struct sockaddr_in s4 = {.sin_family = AF_INET};
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
    if (inet_pton(AF_INET, host, &s4.sin_addr) == 1) return normalize((struct sockaddr *)&s4, out);
    if (inet_pton(AF_INET6, host, &s6.sin6_addr) == 1) return normalize((struct sockaddr *)&s6, out);
    return false;
}

static bool parse_port(const char *s, size_t n, unsigned *port) {
    if (n == 0 || n > 5) return false;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v == 0 || v > 65535) return false;
    *port = v;
    return true;
}

/* "host[:port]" / "[v6][:port]" / bare "v6" (more than one colon) → host (no brackets,
 * trailing dot dropped) and port (0 = not given). */
static bool split_hostport(const char *s, size_t len, char *host, size_t size, unsigned *port) {
    *port = 0;
    const char *h = s, *rest;
    size_t hl;
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close) return false;
        h = s + 1;
        hl = (size_t)(close - h);
        rest = close + 1;
        if (rest < s + len && (*rest != ':' || !parse_port(rest + 1, (size_t)(s + len - rest - 1), port)))
            return false;
    } else {
        const char *colon = memchr(s, ':', len);
        bool several = colon && memchr(colon + 1, ':', (size_t)(s + len - colon - 1));
        hl = colon && !several ? (size_t)(colon - s) : len;
        if (colon && !several && !parse_port(colon + 1, (size_t)(s + len - colon - 1), port)) return false;
    }
    if (hl && h[hl - 1] == '.') hl--;
    if (hl == 0 || hl >= size) return false;
    memcpy(host, h, hl);
    host[hl] = '\0';
    return true;
}

/* An http(s) URL → host, effective port (default 80/443) and scheme. */
static bool url_parts(const char *url, char *host, size_t size, unsigned *port, bool *https) {
    if (!strncasecmp(url, "https://", 8)) *https = true;
    else if (!strncasecmp(url, "http://", 7)) *https = false;
    else return false;
    const char *p = url + (*https ? 8 : 7), *end = p;
    while (*end && *end != '/' && *end != '?' && *end != '#') end++;
    for (const char *q = p; q < end; q++)
        if (*q == '@') p = q + 1; /* userinfo */
    if (!split_hostport(p, (size_t)(end - p), host, size, port)) return false;
    if (!*port) *port = *https ? 443 : 80;
    return true;
}

static bool host_equal(const char *a, const char *b) {
    norm_addr x, y;
    bool ax = parse_ip(a, &x), by = parse_ip(b, &y);
    if (ax || by) return ax && by && norm_same_ip(&x, &y);
    return strcasecmp(a, b) == 0;
}

/* The allowlist entry host:port matches, or NULL. Malformed entries never match. */
static const char *match_host(const char *const *list, const char *host, unsigned port) {
    for (; list && *list; list++) {
        char eh[HOST_MAX];
        unsigned ep;
        if (!split_hostport(*list, strlen(*list), eh, sizeof eh, &ep)) continue;
        if ((ep == 0 || ep == port) && host_equal(eh, host)) return *list;
    }
    return NULL;
}

/* Names are trusted for public addresses only; an internal address must be listed as such
 * (an IP literal or "localhost"), so a name whose DNS a tenant controls cannot be pointed
 * at the private network. */
static bool entry_allows_internal(const char *entry) {
    char eh[HOST_MAX];
    unsigned ep;
    norm_addr a;
    if (!split_hostport(entry, strlen(entry), eh, sizeof eh, &ep)) return false;
    return parse_ip(eh, &a) || strcasecmp(eh, "localhost") == 0;
}

static void format_addr(const norm_addr *a, char *buf, size_t size) {
    char ip[INET6_ADDRSTRLEN] = "?";
    inet_ntop(a->family, a->b, ip, sizeof ip);
    snprintf(buf, size, a->family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, a->port);
}

/* One address the URL's host resolved to (port = the URL's). */
static bool address_ok(const mcp_client_policy *p, const char *entry, const struct sockaddr *sa, gg_error *err) {
    norm_addr a;
    char text[80];
    if (!normalize(sa, &a)) {
        gg_error_set(err, "policy", "address family %d is not allowed", sa->sa_family);
        return false;
    }
    format_addr(&a, text, sizeof text);
    if (p->self && atomic_load_explicit(&p->self->ready, memory_order_acquire) && is_self(p->self, &a)) {
        gg_error_set(err, "policy", "%s is one of the gateway's own listeners; graphs can never call the gateway itself",
                     text);
        return false;
    }
    if (mcp_policy_address_is_internal(sa) && !entry_allows_internal(entry)) {
        gg_error_set(err, "policy",
                     "%s is a loopback, link-local or private address; only an http_hosts entry naming that IP "
                     "(or localhost) allows it", text);
        return false;
    }
    return true;
}

static bool self_ready(const mcp_client_policy *p, gg_error *err) {
    if (!p->self || atomic_load_explicit(&p->self->ready, memory_order_acquire)) return true;
    gg_error_set(err, "policy", "the gateway is still starting; downstream HTTP is not open yet");
    return false;
}

/* URL check before connecting (and at upload): scheme, allowlist entry, then every address
 * the host is or resolves to. Graphs stored earlier load before the listeners are bound:
 * then the own-listener part waits for the connect-time check (mcp_policy_connect_ok),
 * which repeats the address part and refuses everything until the listeners are known. */
bool mcp_policy_check_url(const mcp_client_policy *p, const char *url, gg_error *err) {
    if (!p || p->allow_all) return true;
    char host[HOST_MAX];
    unsigned port;
    bool https;
    if (!url_parts(url, host, sizeof host, &port, &https)) {
        gg_error_set(err, "policy", "url '%s' is not an http(s) URL with a valid host and port", url);
        return false;
    }
    if (!https && !p->allow_http_plaintext) {
        gg_error_set(err, "policy", "url '%s' must use https", url);
        return false;
    }
    const char *entry = match_host(p->host_allowlist, host, port);
    if (!entry) {
        gg_error_set(err, "policy", "host %s%s%s:%u is not in policy.http_hosts (entries are host or host:port)",
                     strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
        return false;
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        gg_error_set(err, "dns", "cannot resolve host '%s': %s", host, gai_strerror(rc));
        return false;
    }
    bool ok = true;
    for (struct addrinfo *ai = res; ai && ok; ai = ai->ai_next) ok = address_ok(p, entry, ai->ai_addr, err);
    freeaddrinfo(res);
    return ok;
}

/* The entry was matched for the URL's port: the socket must go to that port too, whatever
 * moved it (a redirect, Alt-Svc, a CONNECT_TO or proxy setting, a later libcurl feature). */
static bool port_is_urls(const struct sockaddr *sa, unsigned port, gg_error *err) {
    norm_addr a;
    if (!normalize(sa, &a)) {
        gg_error_set(err, "policy", "address family %d is not allowed", sa->sa_family);
        return false;
    }
    if (a.port == port) return true;
    char text[80];
    format_addr(&a, text, sizeof text);
    gg_error_set(err, "policy", "connection to %s is not to the URL's port %u; policy.http_hosts was checked for that port",
                 text, port);
    return false;
}

/* The address libcurl is about to connect to, for the URL being fetched. */
bool mcp_policy_connect_ok(const mcp_client_policy *p, const char *url, const struct sockaddr *sa, gg_error *err) {
    if (!p || p->allow_all) return true;
    char host[HOST_MAX];
    unsigned port;
    bool https;
    const char *entry = url_parts(url, host, sizeof host, &port, &https) ? match_host(p->host_allowlist, host, port)
                                                                           : NULL;
    if (!entry) {
        gg_error_set(err, "policy", "url '%s' is not allowed by policy.http_hosts", url);
        return false;
    }
    return self_ready(p, err) && port_is_urls(sa, port, err) && address_ok(p, entry, sa, err);
}

/* ---- stdio commands ----------------------------------------------------------------------- */

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

/* Split an allowlist entry on blanks into at most ARGV_PREFIX_MAX words (in buf). */
static size_t split_words(const char *entry, char *buf, size_t size, char **words) {
    size_t n = 0;
    snprintf(buf, size, "%s", entry);
    for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w && n < ARGV_PREFIX_MAX; w = strtok_r(NULL, " \t", &save))
        words[n++] = w;
    return n;
}

/* Does argv (command + args) start with the entry's words? The command matches as written
 * or as the absolute path PATH resolves it to. Arguments past the prefix are free, except
 * that when the prefix names no script or package (only the command and options), the next
 * argument may not be an option either: an entry "node" allows "node server.js", never
 * "node -e CODE" or "node --require X". */
static bool argv_matches(const char *entry, const char *command, const char *resolved, const char *const *args) {
    char buf[4096], *w[ARGV_PREFIX_MAX];
    size_t n = split_words(entry, buf, sizeof buf, w);
    if (n == 0 || (strcmp(w[0], command) && !(resolved && !strcmp(w[0], resolved)))) return false;
    size_t nargs = 0;
    while (args && args[nargs]) nargs++;
    if (nargs < n - 1) return false;
    bool names_operand = false;
    for (size_t i = 1; i < n; i++) {
        if (strcmp(w[i], args[i - 1])) return false;
        if (w[i][0] != '-') names_operand = true;
    }
    return names_operand || nargs == n - 1 || args[n - 1][0] != '-';
}

/* Variables that change what a loader or interpreter runs (preloads, module paths, startup
 * code, package sources): a graph may not set them. Compared case-insensitively. */
static const char *const env_prefixes[] = {"LD_", "DYLD_", "NODE_", "NPM_CONFIG_", "PYTHON", "PERL", "RUBY",
                                           "JAVA_", "_JAVA_", "JDK_", "BASH_FUNC_", "UV_", "PIP_", "GIT_",
                                           "DENO_", "BUN_", "COREPACK_", "GLIBC_", "MALLOC_", "GCONV_", NULL};
static const char *const env_names[] = {"PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "IFS",
                                        "CLASSPATH", "LOCPATH", "NLSPATH", "HOSTALIASES", "RES_OPTIONS",
                                        "LOCALDOMAIN", "HOME", "XDG_CONFIG_HOME", "SSL_CERT_FILE",
                                        "SSL_CERT_DIR", NULL};

/* Harmless names under a refused prefix (read by applications, not by the loader). */
static const char *const env_harmless[] = {"NODE_ENV", "PYTHONUNBUFFERED", "PYTHONIOENCODING", NULL};

/* A graph-supplied "NAME=value": NULL when allowed, else why not. */
const char *mcp_policy_env_refused(const char *assignment) {
    const char *eq = strchr(assignment, '=');
    size_t n = eq ? (size_t)(eq - assignment) : strlen(assignment);
    if (n == 0 || !(isalpha((unsigned char)assignment[0]) || assignment[0] == '_'))
        return "is not a valid variable name";
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)assignment[i]) && assignment[i] != '_') return "is not a valid variable name";
    for (const char *const *p = env_harmless; *p; p++)
        if (n == strlen(*p) && !strncmp(assignment, *p, n)) return NULL;
    for (const char *const *p = env_prefixes; *p; p++)
        if (n >= strlen(*p) && !strncasecmp(assignment, *p, strlen(*p)))
            return "changes what a loader or interpreter runs (LD_*, NODE_*, PYTHON*, ... are refused)";
    for (const char *const *p = env_names; *p; p++)
        if (n == strlen(*p) && !strncasecmp(assignment, *p, n))
            return "changes what a loader or interpreter runs (PATH, HOME, BASH_ENV, ... are refused)";
    return NULL;
}

/* cwd must be an existing directory inside the configured root (symlinks resolved). */
static bool cwd_ok(const mcp_client_policy *p, const char *cwd, gg_error *err) {
    if (!p->cwd_root || !*p->cwd_root) {
        gg_error_set(err, "policy", "cwd '%s' is not allowed: policy.stdio_cwd_root is not set", cwd);
        return false;
    }
    char root[PATH_MAX], real[PATH_MAX];
    if (!realpath(p->cwd_root, root)) {
        gg_error_set(err, "policy", "policy.stdio_cwd_root '%s' does not exist", p->cwd_root);
        return false;
    }
    if (cwd[0] != '/' || !realpath(cwd, real)) {
        gg_error_set(err, "policy", "cwd '%s' must be an existing absolute directory inside %s", cwd, root);
        return false;
    }
    size_t n = strlen(root);
    bool inside = !strcmp(root, "/") || (!strncmp(real, root, n) && (real[n] == '\0' || real[n] == '/'));
    if (!inside) {
        gg_error_set(err, "policy", "cwd '%s' is outside policy.stdio_cwd_root (%s)", cwd, root);
        return false;
    }
    return true;
}

/* A stdio server definition: argv prefix, environment, working directory. */
bool mcp_policy_check_argv(const mcp_client_policy *p, const char *command, const char *const *args,
                           const char *const *env, const char *cwd, gg_error *err) {
    if (!p || p->allow_all) return true;
    if (!command) command = "";
    char resolved[4096];
    bool have_resolved = resolve_on_path(command, resolved, sizeof resolved);
    bool listed = false;
    for (const char *const *e = p->command_allowlist; e && *e && !listed; e++)
        listed = argv_matches(*e, command, have_resolved ? resolved : NULL, args);
    if (!listed) {
        gg_error_set(err, "policy",
                     "command '%s' with these arguments is not in the stdio command allowlist "
                     "(entries are argv prefixes: command plus fixed arguments)", command);
        return false;
    }
    for (const char *const *e = env; e && *e; e++) {
        const char *why = mcp_policy_env_refused(*e);
        if (why) {
            const char *eq = strchr(*e, '=');
            gg_error_set(err, "policy", "env %.*s %s", (int)(eq ? eq - *e : (long)strlen(*e)), *e, why);
            return false;
        }
    }
    return !cwd || cwd_ok(p, cwd, err);
}

/* The command alone (no arguments, environment or cwd). */
bool mcp_policy_check_command(const mcp_client_policy *p, const char *command, gg_error *err) {
    return mcp_policy_check_argv(p, command, NULL, NULL, NULL, err);
}

/* ---- per-tenant grants -------------------------------------------------------------------- */

typedef struct tenant_policy {
    char tenant[64];
    mcp_client_policy policy;
    const char **commands, **hosts; /* NULL-terminated; borrow the strings */
} tenant_policy;

struct mcp_policy_set {
    mcp_client_policy base;
    tenant_policy *t;
    size_t n;
};

static size_t count(const char *const *l) {
    size_t n = 0;
    while (l && l[n]) n++;
    return n;
}

/* base's entries plus the grants "tenant=entry" for this tenant, NULL-terminated. */
static const char **merged(const char *const *base, const char *const *grants, const char *tenant) {
    size_t nb = count(base), k = 0, tl = strlen(tenant);
    const char **out = calloc(nb + count(grants) + 1, sizeof *out);
    if (!out) return NULL;
    for (size_t i = 0; i < nb; i++) out[k++] = base[i];
    for (const char *const *g = grants; g && *g; g++)
        if (!strncmp(*g, tenant, tl) && (*g)[tl] == '=') out[k++] = *g + tl + 1;
    return out;
}

static bool grant_tenant(const char *grant, char *tenant, size_t size, gg_error *err) {
    const char *eq = strchr(grant, '=');
    if (!eq || eq == grant || !eq[1] || (size_t)(eq - grant) >= size) {
        gg_error_set(err, "invalid_config", "policy grant '%s' must look like TENANT=ENTRY", grant);
        return false;
    }
    snprintf(tenant, size, "%.*s", (int)(eq - grant), grant);
    return true;
}

static bool set_add_tenant(mcp_policy_set *s, const char *tenant, const char *const *cmd_grants,
                           const char *const *host_grants) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].tenant, tenant)) return true;
    tenant_policy *t = realloc(s->t, (s->n + 1) * sizeof *t);
    if (!t) return false;
    s->t = t;
    tenant_policy *tp = &s->t[s->n];
    memset(tp, 0, sizeof *tp);
    snprintf(tp->tenant, sizeof tp->tenant, "%s", tenant);
    tp->commands = merged(s->base.command_allowlist, cmd_grants, tenant);
    tp->hosts = merged(s->base.host_allowlist, host_grants, tenant);
    s->n++;
    if (!tp->commands || !tp->hosts) return false;
    tp->policy = s->base;
    tp->policy.command_allowlist = tp->commands;
    tp->policy.host_allowlist = tp->hosts;
    return true;
}

/* A malformed entry would never match (fail closed), silently: say so at start instead. */
static bool entries_valid(const char *const *list, bool hosts, bool grants, const char *key, gg_error *err) {
    for (; list && *list; list++) {
        const char *e = grants ? strchr(*list, '=') : NULL;
        e = e ? e + 1 : *list;
        char buf[4096], *w[ARGV_PREFIX_MAX];
        unsigned port;
        bool ok = hosts ? split_hostport(e, strlen(e), buf, HOST_MAX, &port)
                        : strlen(e) < sizeof buf && split_words(e, buf, sizeof buf, w) > 0;
        if (!ok) {
            gg_error_set(err, "invalid_config", "%s: '%s' is not %s", key, *list,
                         hosts ? "host, host:port or [v6]:port" : "a command with optional fixed arguments");
            return false;
        }
    }
    return true;
}

/* The default policy plus per-tenant grants; see policy.h. */
mcp_policy_set *mcp_policy_set_new(const mcp_client_policy *base, const char *const *cmd_grants,
                                   const char *const *host_grants, gg_error *err) {
    if (!entries_valid(base->host_allowlist, true, false, "policy.http_hosts", err) ||
        !entries_valid(base->command_allowlist, false, false, "policy.stdio_commands", err) ||
        !entries_valid(host_grants, true, true, "policy.tenant_http_hosts", err) ||
        !entries_valid(cmd_grants, false, true, "policy.tenant_stdio_commands", err))
        return NULL;
    mcp_policy_set *s = calloc(1, sizeof *s);
    if (!s) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    s->base = *base;
    const char *const *lists[2] = {cmd_grants, host_grants};
    for (int l = 0; l < 2; l++)
        for (const char *const *g = lists[l]; g && *g; g++) {
            char tenant[64];
            if (!grant_tenant(*g, tenant, sizeof tenant, err)) {
                mcp_policy_set_free(s);
                return NULL;
            }
            if (!set_add_tenant(s, tenant, cmd_grants, host_grants)) {
                gg_error_set(err, "oom", "out of memory");
                mcp_policy_set_free(s);
                return NULL;
            }
        }
    return s;
}

const mcp_client_policy *mcp_policy_set_get(const mcp_policy_set *s, const char *tenant) {
    for (size_t i = 0; tenant && i < s->n; i++)
        if (!strcmp(s->t[i].tenant, tenant)) return &s->t[i].policy;
    return &s->base;
}

void mcp_policy_set_free(mcp_policy_set *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->t[i].commands);
        free(s->t[i].hosts);
    }
    free(s->t);
    free(s);
}
