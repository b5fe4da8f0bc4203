/* test_policy.c — the downstream policy (src/policy/policy.c): host and host:port entries,
 * IPv6, the empty list, the gateway's own listeners (also behind a wildcard bind), the
 * connect-time address check, argv prefixes, environment, cwd and per-tenant grants. */
#include <arpa/inet.h>
#include <check.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp/mcp.h"
#include "../check_main.h"

static bool url_ok(const mcp_client_policy *p, const char *url) {
    gg_error e = GG_ERROR_INIT;
    bool ok = mcp_policy_check_url(p, url, &e);
    gg_error_clear(&e);
    return ok;
}

/* The refusal message of a URL check ("" when allowed), in a static buffer. */
static const char *url_why(const mcp_client_policy *p, const char *url) {
    static char buf[512];
    gg_error e = GG_ERROR_INIT;
    buf[0] = '\0';
    if (!mcp_policy_check_url(p, url, &e)) snprintf(buf, sizeof buf, "%s: %s", e.code, e.message ? e.message : "");
    gg_error_clear(&e);
    return buf;
}

static struct sockaddr_in v4(const char *ip, unsigned port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, ip, &a.sin_addr);
    return a;
}

static struct sockaddr_in6 v6(const char *ip, unsigned port) {
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    inet_pton(AF_INET6, ip, &a.sin6_addr);
    return a;
}

START_TEST(host_and_port_entries) {
    const char *hosts[] = {"127.0.0.1:9000", "localhost", "[::1]:9100", "API.example.com:8443", NULL};
    mcp_client_policy p = {.host_allowlist = hosts, .allow_http_plaintext = true};
    ck_assert(url_ok(&p, "http://127.0.0.1:9000/mcp"));
    ck_assert_msg(strstr(url_why(&p, "http://127.0.0.1:9001/mcp"), "not in policy.http_hosts"), "%s",
                  url_why(&p, "http://127.0.0.1:9001/mcp"));
    ck_assert(!url_ok(&p, "http://127.0.0.1/mcp")); /* port 80 is not 9000 */
    ck_assert(url_ok(&p, "http://localhost:1234/x")); /* "host" = any port */
    ck_assert(url_ok(&p, "http://LOCALHOST./x"));
    ck_assert(url_ok(&p, "http://[::1]:9100/mcp"));
    ck_assert(!url_ok(&p, "http://[::1]:9101/mcp"));
    ck_assert(url_ok(&p, "http://[0:0:0:0:0:0:0:1]:9100/mcp")); /* IPs compare as addresses */
    /* userinfo cannot smuggle a listed host in */
    ck_assert(!url_ok(&p, "http://127.0.0.1:9000@10.0.0.1:9000/"));
    ck_assert(!url_ok(&p, "ftp://127.0.0.1:9000/"));
    ck_assert(!url_ok(&p, "http://127.0.0.1:99999/"));
    /* a bare IPv6 literal entry matches any port */
    const char *bare6[] = {"::1", NULL};
    mcp_client_policy q = {.host_allowlist = bare6, .allow_http_plaintext = true};
    ck_assert(url_ok(&q, "http://[::1]:5/"));
    ck_assert(url_ok(&q, "http://[::1]/"));
    /* https only unless plaintext is allowed */
    p.allow_http_plaintext = false;
    ck_assert(!url_ok(&p, "http://127.0.0.1:9000/mcp"));
}
END_TEST

START_TEST(empty_list_means_none) {
    mcp_client_policy p = {.allow_http_plaintext = true};
    /* refused before any name resolution: a public name is not reachable either */
    ck_assert(strstr(url_why(&p, "https://example.com/mcp"), "policy: host example.com:443 is not in"));
    ck_assert(!url_ok(&p, "http://127.0.0.1:8080/mcp"));
    const char *none[] = {NULL};
    p.host_allowlist = none;
    ck_assert(!url_ok(&p, "https://example.com/mcp"));
    mcp_client_policy local = {.allow_all = true};
    ck_assert(url_ok(&local, "http://127.0.0.1:8080/mcp"));
}
END_TEST

START_TEST(names_reach_public_addresses_only) {
    /* The connect-time check sees the address libcurl really connects to (DNS rebinding). */
    const char *hosts[] = {"mcp.example.com", "10.1.2.3:443", NULL};
    mcp_client_policy p = {.host_allowlist = hosts};
    gg_error e = GG_ERROR_INIT;
    struct sockaddr_in pub = v4("93.184.216.34", 443), priv = v4("10.0.0.1", 443), meta = v4("169.254.169.254", 443);
    ck_assert(mcp_policy_connect_ok(&p, "https://mcp.example.com/mcp", (struct sockaddr *)&pub, &e));
    ck_assert(!mcp_policy_connect_ok(&p, "https://mcp.example.com/mcp", (struct sockaddr *)&priv, &e));
    ck_assert_str_eq(e.code, "policy");
    ck_assert(strstr(e.message, "10.0.0.1:443 is a loopback, link-local or private address"));
    gg_error_clear(&e);
    ck_assert(!mcp_policy_connect_ok(&p, "https://mcp.example.com/mcp", (struct sockaddr *)&meta, &e));
    gg_error_clear(&e);
    struct sockaddr_in6 mapped = v6("::ffff:127.0.0.1", 443);
    ck_assert(!mcp_policy_connect_ok(&p, "https://mcp.example.com/mcp", (struct sockaddr *)&mapped, &e));
    gg_error_clear(&e);
    /* an entry naming the private IP allows exactly that */
    struct sockaddr_in listed = v4("10.1.2.3", 443);
    ck_assert(mcp_policy_connect_ok(&p, "https://10.1.2.3/mcp", (struct sockaddr *)&listed, &e));
    ck_assert(url_ok(&p, "https://10.1.2.3/mcp"));
    ck_assert(!url_ok(&p, "https://10.1.2.4/mcp"));
    /* a URL not on the list never connects */
    ck_assert(!mcp_policy_connect_ok(&p, "https://other.example.com/", (struct sockaddr *)&pub, &e));
    gg_error_clear(&e);
}
END_TEST

/* The entry was matched for the URL's port: a socket to any other port (a redirect, an
 * alternate service) is refused at connect time, even to an address the entry allows. */
START_TEST(connect_port_is_the_urls) {
    const char *hosts[] = {"127.0.0.1:8080", "mcp.example.com", NULL};
    mcp_client_policy p = {.host_allowlist = hosts, .allow_http_plaintext = true};
    gg_error e = GG_ERROR_INIT;
    struct sockaddr_in same = v4("127.0.0.1", 8080), other = v4("127.0.0.1", 22);
    ck_assert(mcp_policy_connect_ok(&p, "http://127.0.0.1:8080/mcp", (struct sockaddr *)&same, &e));
    ck_assert(!mcp_policy_connect_ok(&p, "http://127.0.0.1:8080/mcp", (struct sockaddr *)&other, &e));
    ck_assert_str_eq(e.code, "policy");
    ck_assert(strstr(e.message, "127.0.0.1:22 is not to the URL's port 8080"));
    gg_error_clear(&e);
    /* an entry without a port: the URL's (default) port still holds for the socket */
    struct sockaddr_in pub443 = v4("93.184.216.34", 443), pub8443 = v4("93.184.216.34", 8443);
    ck_assert(mcp_policy_connect_ok(&p, "https://mcp.example.com/mcp", (struct sockaddr *)&pub443, &e));
    ck_assert(!mcp_policy_connect_ok(&p, "https://mcp.example.com/mcp", (struct sockaddr *)&pub8443, &e));
    gg_error_clear(&e);
    struct sockaddr_in6 mapped = v6("::ffff:127.0.0.1", 8081);
    ck_assert(!mcp_policy_connect_ok(&p, "http://127.0.0.1:8080/mcp", (struct sockaddr *)&mapped, &e));
    gg_error_clear(&e);
}
END_TEST

START_TEST(own_listeners_never_reachable) {
    mcp_policy_self *self = mcp_policy_self_new();
    ck_assert_ptr_nonnull(self);
    const char *hosts[] = {"127.0.0.1", "127.0.0.2", "localhost", "::1", NULL};
    mcp_client_policy p = {.host_allowlist = hosts, .allow_http_plaintext = true, .self = self};
    /* before the listeners are known, graphs still load, but nothing connects */
    ck_assert(url_ok(&p, "http://127.0.0.1:4000/"));
    gg_error e0 = GG_ERROR_INIT;
    struct sockaddr_in early = v4("127.0.0.1", 4000);
    ck_assert(!mcp_policy_connect_ok(&p, "http://127.0.0.1:4000/", (struct sockaddr *)&early, &e0));
    ck_assert(strstr(e0.message, "still starting"));
    gg_error_clear(&e0);
    struct sockaddr_in pub = v4("127.0.0.1", 4000), any = v4("0.0.0.0", 4001);
    ck_assert(mcp_policy_self_add(self, (struct sockaddr *)&pub));
    ck_assert(mcp_policy_self_add(self, (struct sockaddr *)&any));
    mcp_policy_self_ready(self);
    ck_assert(strstr(url_why(&p, "http://127.0.0.1:4000/internal/mcp/b/victim"), "gateway's own listeners"));
    ck_assert(url_ok(&p, "http://127.0.0.1:4002/mcp")); /* another loopback port is listed */
    /* the wildcard bind covers every local address of its port */
    ck_assert(!url_ok(&p, "http://127.0.0.1:4001/"));
    ck_assert(strstr(url_why(&p, "http://127.0.0.2:4001/"), "own listeners")); /* listed, but ours */
    ck_assert(url_ok(&p, "http://127.0.0.2:4000/")); /* the specific bind is 127.0.0.1 only */
    ck_assert(!url_ok(&p, "http://localhost:4001/"));
    ck_assert(!url_ok(&p, "http://[::1]:4001/"));
    gg_error e = GG_ERROR_INIT;
    struct sockaddr_in6 mapped = v6("::ffff:127.0.0.1", 4000);
    ck_assert(!mcp_policy_connect_ok(&p, "http://localhost:4000/", (struct sockaddr *)&mapped, &e));
    ck_assert(strstr(e.message, "own listeners"));
    gg_error_clear(&e);
    struct sockaddr_in zero = v4("0.0.0.0", 4000);
    ck_assert(!mcp_policy_connect_ok(&p, "http://127.0.0.1:4000/", (struct sockaddr *)&zero, &e));
    gg_error_clear(&e);
    mcp_policy_self_free(self);
}
END_TEST

static bool stdio_ok(const mcp_client_policy *p, const char *command, const char *const *args,
                     const char *const *env, const char *cwd, char *why, size_t size) {
    mcp_server_config cfg = {.transport = MCP_TRANSPORT_STDIO, .command = command, .args = args, .env = env,
                             .cwd = cwd};
    gg_error e = GG_ERROR_INIT;
    bool ok = mcp_policy_check_stdio(p, &cfg, &e);
    if (why) snprintf(why, size, "%s", e.message ? e.message : "");
    if (!ok) ck_assert_str_eq(e.code, "policy");
    gg_error_clear(&e);
    return ok;
}

START_TEST(argv_prefixes) {
    const char *cmds[] = {"npx -y @modelcontextprotocol/server-filesystem", "node", "python3  -m  mcp_server", NULL};
    mcp_client_policy p = {.command_allowlist = cmds};
    char why[512];
    const char *fs[] = {"-y", "@modelcontextprotocol/server-filesystem", "/data", "--flag", NULL};
    ck_assert(stdio_ok(&p, "npx", fs, NULL, NULL, why, sizeof why));
    const char *other[] = {"-y", "evil-package", NULL};
    ck_assert(!stdio_ok(&p, "npx", other, NULL, NULL, why, sizeof why));
    ck_assert(strstr(why, "argv prefixes"));
    ck_assert(!stdio_ok(&p, "npx", NULL, NULL, NULL, why, sizeof why));
    /* bare "node": a script, never an option first */
    const char *script[] = {"/opt/server.js", "--port", "3", NULL};
    ck_assert(stdio_ok(&p, "node", script, NULL, NULL, why, sizeof why));
    ck_assert(stdio_ok(&p, "node", NULL, NULL, NULL, why, sizeof why));
    const char *eval[] = {"-e", "require('child_process').execSync('id')", NULL};
    ck_assert(!stdio_ok(&p, "node", eval, NULL, NULL, why, sizeof why));
    const char *req[] = {"--require", "/tmp/x.js", "/opt/server.js", NULL};
    ck_assert(!stdio_ok(&p, "node", req, NULL, NULL, why, sizeof why));
    const char *dash[] = {"-", NULL};
    ck_assert(!stdio_ok(&p, "node", dash, NULL, NULL, why, sizeof why));
    /* words split on any run of blanks */
    const char *py[] = {"-m", "mcp_server", "-v", NULL};
    ck_assert(stdio_ok(&p, "python3", py, NULL, NULL, why, sizeof why));
    const char *pyc[] = {"-c", "import os", NULL};
    ck_assert(!stdio_ok(&p, "python3", pyc, NULL, NULL, why, sizeof why));
    /* the operator may list an option prefix explicitly */
    const char *cmds2[] = {"node -e", NULL};
    mcp_client_policy q = {.command_allowlist = cmds2};
    ck_assert(stdio_ok(&q, "node", eval, NULL, NULL, why, sizeof why));
    ck_assert(!mcp_policy_check_command(&q, "bash", NULL));
    ck_assert(mcp_policy_check_command(&p, "node", NULL));
}
END_TEST

START_TEST(environment) {
    const char *cmds[] = {"node /opt/server.js", NULL};
    mcp_client_policy p = {.command_allowlist = cmds};
    const char *args[] = {"/opt/server.js", NULL};
    char why[512];
    const char *fine[] = {"API_TOKEN=x", "LOG_LEVEL=debug", NULL};
    ck_assert(stdio_ok(&p, "node", args, fine, NULL, why, sizeof why));
    const char *bad[] = {"LD_PRELOAD=/tmp/evil.so", "LD_LIBRARY_PATH=/tmp", "NODE_OPTIONS=--require /tmp/x",
                         "PYTHONPATH=/tmp", "PYTHONSTARTUP=/tmp/x.py", "PATH=/tmp", "BASH_ENV=/tmp/x",
                         "npm_config_script_shell=/tmp/x", "ld_preload=x", "PERL5OPT=-d", "DYLD_INSERT_LIBRARIES=x",
                         "JAVA_TOOL_OPTIONS=-javaagent:x", "BAD-NAME=1", "=x", NULL};
    for (size_t i = 0; bad[i]; i++) {
        const char *one[] = {bad[i], NULL};
        ck_assert_msg(!stdio_ok(&p, "node", args, one, NULL, why, sizeof why), "%s", bad[i]);
        ck_assert_msg(strstr(why, "env "), "%s: %s", bad[i], why);
        ck_assert_ptr_nonnull(mcp_policy_env_refused(bad[i]));
    }
    ck_assert_ptr_null(mcp_policy_env_refused("HOMEPAGE=x"));
    ck_assert_ptr_null(mcp_policy_env_refused("NODE_ENV=production"));
    ck_assert_ptr_null(mcp_policy_env_refused("PYTHONUNBUFFERED=1"));
    ck_assert_ptr_nonnull(mcp_policy_env_refused("NODE_ENVX=1"));
    mcp_client_policy local = {.allow_all = true};
    const char *pre[] = {"LD_PRELOAD=/tmp/evil.so", NULL};
    ck_assert(stdio_ok(&local, "node", args, pre, NULL, NULL, 0));
}
END_TEST

START_TEST(cwd_confined) {
    char root[] = "/tmp/gg-policy-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(root));
    char inside[PATH_MAX], link[PATH_MAX], why[512];
    snprintf(inside, sizeof inside, "%s/work", root);
    snprintf(link, sizeof link, "%s/escape", root);
    ck_assert_int_eq(mkdir(inside, 0700), 0);
    ck_assert_int_eq(symlink("/", link), 0);
    const char *cmds[] = {"node /opt/server.js", NULL};
    const char *args[] = {"/opt/server.js", NULL};
    mcp_client_policy p = {.command_allowlist = cmds};
    ck_assert(!stdio_ok(&p, "node", args, NULL, inside, why, sizeof why)); /* no root configured */
    ck_assert(strstr(why, "stdio_cwd_root is not set"));
    p.cwd_root = root;
    ck_assert(stdio_ok(&p, "node", args, NULL, inside, why, sizeof why));
    ck_assert(stdio_ok(&p, "node", args, NULL, root, why, sizeof why));
    ck_assert(!stdio_ok(&p, "node", args, NULL, "/etc", why, sizeof why));
    ck_assert(strstr(why, "outside"));
    ck_assert(!stdio_ok(&p, "node", args, NULL, link, why, sizeof why)); /* symlink out */
    char dotdot[PATH_MAX];
    snprintf(dotdot, sizeof dotdot, "%s/work/../..", root);
    ck_assert(!stdio_ok(&p, "node", args, NULL, dotdot, why, sizeof why));
    ck_assert(!stdio_ok(&p, "node", args, NULL, "work", why, sizeof why)); /* relative */
    unlink(link);
    rmdir(inside);
    rmdir(root);
}
END_TEST

START_TEST(tenant_grants) {
    const char *hosts[] = {"a.example", NULL};
    const char *cmds[] = {"node /opt/base.js", NULL};
    const char *host_grants[] = {"acme=127.0.0.1:9000", "acme=b.example:443", NULL};
    const char *cmd_grants[] = {"beta=node /opt/beta.js", NULL};
    mcp_client_policy base = {.host_allowlist = hosts, .command_allowlist = cmds, .allow_http_plaintext = true};
    gg_error e = GG_ERROR_INIT;
    mcp_policy_set *s = mcp_policy_set_new(&base, cmd_grants, host_grants, &e);
    ck_assert_ptr_nonnull(s);
    const mcp_client_policy *acme = mcp_policy_set_get(s, "acme"), *beta = mcp_policy_set_get(s, "beta"),
                            *other = mcp_policy_set_get(s, "other");
    ck_assert(url_ok(acme, "http://127.0.0.1:9000/mcp"));
    ck_assert(!url_ok(beta, "http://127.0.0.1:9000/mcp"));
    ck_assert(!url_ok(other, "http://127.0.0.1:9000/mcp"));
    ck_assert(!url_ok(mcp_policy_set_get(s, "acm"), "http://127.0.0.1:9000/mcp"));
    const char *beta_args[] = {"/opt/beta.js", NULL}, *base_args[] = {"/opt/base.js", NULL};
    ck_assert(stdio_ok(beta, "node", beta_args, NULL, NULL, NULL, 0));
    ck_assert(stdio_ok(beta, "node", base_args, NULL, NULL, NULL, 0)); /* defaults still apply */
    ck_assert(!stdio_ok(acme, "node", beta_args, NULL, NULL, NULL, 0));
    mcp_policy_set_free(s);
    const char *bad_hosts[] = {"api.example.com:44x", NULL}, *blank[] = {"   ", NULL};
    mcp_client_policy typo = {.host_allowlist = bad_hosts};
    ck_assert_ptr_null(mcp_policy_set_new(&typo, NULL, NULL, &e));
    ck_assert(strstr(e.message, "policy.http_hosts: 'api.example.com:44x' is not host, host:port"));
    gg_error_clear(&e);
    mcp_client_policy empty_cmd = {.command_allowlist = blank};
    ck_assert_ptr_null(mcp_policy_set_new(&empty_cmd, NULL, NULL, &e));
    gg_error_clear(&e);
    const char *bad_grant[] = {"acme=[::1", NULL};
    ck_assert_ptr_null(mcp_policy_set_new(&base, NULL, bad_grant, &e));
    ck_assert(strstr(e.message, "policy.tenant_http_hosts"));
    gg_error_clear(&e);
    const char *broken[] = {"no-tenant-here", NULL};
    ck_assert_ptr_null(mcp_policy_set_new(&base, broken, NULL, &e));
    ck_assert_str_eq(e.code, "invalid_config");
    gg_error_clear(&e);
}
END_TEST

START_TEST(clients_enforce_the_policy) {
    /* a stdio client refuses the definition before anything is spawned */
    const char *cmds[] = {"node", NULL};
    const char *env[] = {"LD_PRELOAD=/tmp/evil.so", NULL};
    const char *args[] = {"/opt/server.js", NULL};
    mcp_client_policy p = {.command_allowlist = cmds, .allow_http_plaintext = true};
    mcp_downstream *ds = mcp_downstream_new(); /* the clients' context (a refused one holds none) */
    ck_assert_ptr_nonnull(ds);
    mcp_server_config st = {.transport = MCP_TRANSPORT_STDIO, .name = "s", .command = "node", .args = args, .env = env,
                            .downstream = ds};
    gg_error e = GG_ERROR_INIT;
    ck_assert_ptr_null(mcp_client_new(&st, &p, &e));
    ck_assert_str_eq(e.code, "policy");
    gg_error_clear(&e);
    const char *eval[] = {"-e", "1", NULL};
    st.env = NULL;
    st.args = eval;
    ck_assert_ptr_null(mcp_client_new(&st, &p, &e));
    gg_error_clear(&e);

    /* the HTTP client checks the address it connects to, not only the one checked before:
     * here a listener the policy learns about after the client was created (from the
     * connect-time check's view, what a DNS answer changing in between looks like) */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = v4("127.0.0.1", 0);
    socklen_t len = sizeof a;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 4), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", (unsigned)ntohs(a.sin_port));
    mcp_policy_self *self = mcp_policy_self_new();
    mcp_policy_self_ready(self);
    const char *hosts[] = {"127.0.0.1", NULL};
    mcp_client_policy hp = {.host_allowlist = hosts, .allow_http_plaintext = true, .self = self};
    mcp_server_config ht = {.transport = MCP_TRANSPORT_HTTP, .name = "h", .url = url, .timeout_ms = 2000, .downstream = ds};
    mcp_client *c = mcp_client_new(&ht, &hp, &e);
    ck_assert_ptr_nonnull(c);
    ck_assert(mcp_policy_self_add(self, (struct sockaddr *)&a));
    json_t *r = mcp_client_request(c, "tools/list", NULL, 2000, NULL, &e);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(e.message, "refused by policy"), "%s", e.message);
    gg_error_clear(&e);
    ck_assert_int_lt(accept(fd, NULL, NULL), 0); /* nothing ever connected */
    mcp_client_free(c);
    mcp_downstream_free(ds);
    mcp_policy_self_free(self);
    close(fd);
}
END_TEST

int main(void) {
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("policy");
    tcase_add_test(tc, host_and_port_entries);
    tcase_add_test(tc, empty_list_means_none);
    tcase_add_test(tc, names_reach_public_addresses_only);
    tcase_add_test(tc, own_listeners_never_reachable);
    tcase_add_test(tc, connect_port_is_the_urls);
    tcase_add_test(tc, argv_prefixes);
    tcase_add_test(tc, environment);
    tcase_add_test(tc, cwd_confined);
    tcase_add_test(tc, tenant_grants);
    tcase_add_test(tc, clients_enforce_the_policy);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
