/* caserun — runs request→response case files (tests/cases/NAME.case, format in
 * tests/cases/README.md) against a real `graphgate serve` it starts on loopback ports the
 * kernel picks, with a fresh database per file. Each case is one HTTP request and the
 * response it must get; setup directives (% lines) create tenants and keys through the
 * CLI, upload graphs and open MCP sessions through the HTTP API, so a file stands alone.
 *
 *   caserun FILE.case...     (GG_BUILDDIR, GG_SRCDIR, GG_BIN as for the shell tests)
 *
 * Prints "ok - …" / "not ok - …" per case (a failure shows FILE:LINE, the case as written,
 * why it failed and the response received) and ends with "N passed, N failed". Stopping the
 * server cleanly (exit 0, no sanitizer report on its stderr) is one more check per file. */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <jansson.h>
#include <regex.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

extern char **environ;

/* the running server, killed when the runner itself is interrupted (make's timeout, ^C) so
 * no serve outlives its test */
static volatile sig_atomic_t g_server_pid;

static void on_fatal_signal(int sig) {
    if (g_server_pid > 0) kill((pid_t)g_server_pid, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

#define MAX_VARS 64
#define MAX_LINES 256
#define MAX_ARGS 32
#define BODY_SHOW 1500

typedef struct {
    char *name, *value;
} var;

typedef struct {
    int line;   /* 1-based line in the file */
    char *text; /* without the newline */
} src_line;

typedef struct {
    const char *file;
    char tmp[4096], db[4200], bin[4096], srcdir[4096];
    pid_t pid;
    char pub[256], intl[256];
    char *serve_args[MAX_ARGS];
    int nserve_args;
    char *serve_env[MAX_ARGS]; /* NAME=VALUE set for the next start, unset at the stop */
    int nserve_env;
    var vars[MAX_VARS];
    int nvars;
    char *defaults[MAX_ARGS]; /* %header lines, "Name: value" */
    int ndefaults;
    int passed, failed;
} runner;

typedef struct {
    long status;
    gg_strbuf headers; /* raw header lines of the last response (after redirects: none) */
    gg_strbuf body;
} response;

/* ---- small helpers --------------------------------------------------------------------- */

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    gg_strbuf b = GG_STRBUF_INIT;
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) gg_strbuf_append(&b, chunk, n);
    fclose(f);
    if (len) *len = b.len;
    if (!b.data) return strdup("");
    return gg_strbuf_take(&b);
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

static void check(runner *r, bool ok, const char *desc, const char *why) {
    if (ok) {
        r->passed++;
        printf("ok - %s\n", desc);
    } else {
        r->failed++;
        printf("not ok - %s\n", desc);
        if (why && *why) printf("%s", why);
    }
    fflush(stdout);
}

/* a path in a directive or a <file line: relative to the source tree */
static void src_path(const runner *r, const char *p, char *out, size_t size) {
    if (p[0] == '/') snprintf(out, size, "%s", p);
    else snprintf(out, size, "%s/%s", r->srcdir, p);
}

/* ---- variables ------------------------------------------------------------------------- */

static const char *var_get(const runner *r, const char *name, size_t n) {
    for (int i = 0; i < r->nvars; i++)
        if (strlen(r->vars[i].name) == n && !memcmp(r->vars[i].name, name, n)) return r->vars[i].value;
    return NULL;
}

static void var_set(runner *r, const char *name, const char *value) {
    for (int i = 0; i < r->nvars; i++)
        if (!strcmp(r->vars[i].name, name)) {
            free(r->vars[i].value);
            r->vars[i].value = strdup(value);
            return;
        }
    if (r->nvars == MAX_VARS) return;
    r->vars[r->nvars].name = strdup(name);
    r->vars[r->nvars++].value = strdup(value);
}

/* $NAME and ${NAME} replaced by their values, $$ by $; an unknown name is an error (a typo
 * must not silently send "$kye" as a key) */
static char *subst(const runner *r, const char *s, gg_strbuf *err) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "");
    for (const char *p = s; *p;) {
        if (*p != '$') {
            gg_strbuf_putc(&b, *p++);
            continue;
        }
        if (p[1] == '$') {
            gg_strbuf_putc(&b, '$');
            p += 2;
            continue;
        }
        bool brace = p[1] == '{';
        const char *n0 = p + 1 + brace, *n1 = n0;
        while (isalnum((unsigned char)*n1) || *n1 == '_') n1++;
        if (n1 == n0 || (brace && *n1 != '}')) {
            gg_strbuf_putc(&b, *p++);
            continue;
        }
        const char *v = var_get(r, n0, (size_t)(n1 - n0));
        if (!v) gg_strbuf_printf(err, "  # unknown variable $%.*s\n", (int)(n1 - n0), n0);
        else gg_strbuf_puts(&b, v);
        p = n1 + brace;
    }
    return gg_strbuf_take(&b);
}

/* ---- processes: the server and the CLI -------------------------------------------------- */

static int spawn(runner *r, char *const argv[], const char *out, const char *errf, pid_t *pid) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, errf, O_WRONLY | O_CREAT | O_APPEND, 0600);
    int rc = posix_spawn(pid, r->bin, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

static bool sanitizer_report(const char *path) {
    char *s = read_file(path, NULL);
    bool found = s && (strstr(s, "ERROR: AddressSanitizer") || strstr(s, "ERROR: LeakSanitizer") ||
                       strstr(s, "runtime error:") || strstr(s, "WARNING: ThreadSanitizer"));
    free(s);
    return found;
}

/* graphgate ARGS... --db DB; stdout returned (caller frees), NULL with a message on failure */
static char *cli(runner *r, char **args, int nargs, gg_strbuf *err) {
    char *argv[MAX_ARGS + 4];
    int n = 0;
    argv[n++] = r->bin;
    for (int i = 0; i < nargs && n < MAX_ARGS; i++) argv[n++] = args[i];
    argv[n++] = "--db";
    argv[n++] = r->db;
    argv[n] = NULL;
    char out[4200], errf[4200];
    snprintf(out, sizeof out, "%s/cli.out", r->tmp);
    snprintf(errf, sizeof errf, "%s/cli.err", r->tmp);
    unlink(errf);
    pid_t pid;
    int status = -1;
    if (spawn(r, argv, out, errf, &pid) != 0 || waitpid(pid, &status, 0) < 0) status = -1;
    char *e = read_file(errf, NULL);
    if (status != 0 || sanitizer_report(errf)) {
        gg_strbuf_printf(err, "  # graphgate %s … exited %d: %.400s\n", args[0], WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                         e ? e : "");
        free(e);
        return NULL;
    }
    free(e);
    return read_file(out, NULL);
}

/* the two base URLs from the lines "  public   http://…/" and "  internal http://…/" */
static bool read_urls(runner *r, const char *out) {
    char *s = read_file(out, NULL);
    if (!s) return false;
    r->pub[0] = r->intl[0] = '\0';
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        char word[32], url[256];
        if (sscanf(line, " %31s %255s", word, url) != 2 || strncmp(url, "http://", 7)) continue;
        size_t n = strlen(url);
        if (n && url[n - 1] == '/') url[n - 1] = '\0';
        if (!strcmp(word, "public")) snprintf(r->pub, sizeof r->pub, "%s", url);
        if (!strcmp(word, "internal")) snprintf(r->intl, sizeof r->intl, "%s", url);
    }
    free(s);
    return r->pub[0] && r->intl[0];
}

static long http_get_status(const char *url);

/* wait (bounded) until serve printed both URLs and /health answers */
static bool server_ready(runner *r, const char *out) {
    /* 60 s: a loaded 2-core machine running sanitizer builds has taken over 10 s to start
     * a server that starts in ~40 ms when idle; the bound costs nothing when healthy */
    for (int i = 0; i < 1200; i++) {
        if (read_urls(r, out)) break;
        if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
            r->pid = 0;
            return false;
        }
        sleep_ms(50);
    }
    char health[300];
    snprintf(health, sizeof health, "%s/health", r->pub);
    for (int i = 0; r->pub[0] && i < 200; i++) {
        if (http_get_status(health) == 200) return true;
        sleep_ms(50);
    }
    return false;
}

static bool server_start(runner *r, gg_strbuf *err) {
    char *argv[MAX_ARGS + 10];
    int n = 0;
    argv[n++] = r->bin;
    argv[n++] = "serve";
    argv[n++] = "--db";
    argv[n++] = r->db;
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--internal-listen";
    argv[n++] = "127.0.0.1:0";
    for (int i = 0; i < r->nserve_args; i++) argv[n++] = r->serve_args[i];
    argv[n] = NULL;
    for (int i = 0; i < r->nserve_env; i++) putenv(r->serve_env[i]);
    char out[4200], errf[4200];
    snprintf(out, sizeof out, "%s/serve.out", r->tmp);
    snprintf(errf, sizeof errf, "%s/serve.err", r->tmp);
    if (spawn(r, argv, out, errf, &r->pid) != 0) {
        gg_strbuf_printf(err, "  # cannot run %s: %s\n", r->bin, strerror(errno));
        r->pid = 0;
        return false;
    }
    g_server_pid = r->pid;
    if (server_ready(r, out)) {
        var_set(r, "PUB", r->pub);
        var_set(r, "INT", r->intl);
        return true;
    }
    char *e = read_file(errf, NULL);
    gg_strbuf_printf(err, "  # serve did not start; stderr: %.800s\n", e ? e : "");
    free(e);
    return false;
}

/* SIGTERM and a bounded wait: one check (exit 0, no sanitizer report) */
static void server_stop(runner *r) {
    if (!r->pid) return;
    kill(r->pid, SIGTERM);
    int status = -1;
    pid_t got = 0;
    for (int i = 0; i < 600 && got == 0; i++) {
        got = waitpid(r->pid, &status, WNOHANG);
        if (got == 0) sleep_ms(50);
    }
    if (got == 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, &status, 0);
    }
    r->pid = 0;
    g_server_pid = 0;
    r->pub[0] = r->intl[0] = '\0';
    for (int i = 0; i < r->nserve_env; i++) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(r->serve_env[i], "="), r->serve_env[i]);
        unsetenv(name);
    }
    char errf[4200], desc[4300];
    snprintf(errf, sizeof errf, "%s/serve.err", r->tmp);
    bool clean = got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !sanitizer_report(errf);
    gg_strbuf why = GG_STRBUF_INIT;
    if (!clean) {
        char *e = read_file(errf, NULL);
        size_t n = e ? strlen(e) : 0;
        gg_strbuf_printf(&why, "  # exit status %d; end of serve stderr:\n%s\n", status, e ? e + (n > 3000 ? n - 3000 : 0) : "");
        free(e);
    }
    snprintf(desc, sizeof desc, "%s: the server stops cleanly (exit 0, no sanitizer report)", r->file);
    check(r, clean, desc, why.data);
    gg_strbuf_free(&why);
    /* the next server's stderr starts empty, so a report is charged to the right file */
    unlink(errf);
}

/* ---- HTTP ------------------------------------------------------------------------------ */

static size_t on_data(char *p, size_t size, size_t n, void *ud) {
    gg_strbuf *b = ud;
    gg_strbuf_append(b, p, size * n);
    return size * n;
}

static long http_get_status(const char *url) {
    CURL *c = curl_easy_init();
    gg_strbuf sink = GG_STRBUF_INIT;
    long status = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 2L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    gg_strbuf_free(&sink);
    return status;
}

static bool has_header(struct curl_slist *h, const char *name, size_t n) {
    for (; h; h = h->next)
        if (!strncasecmp(h->data, name, n) && (h->data[n] == ':' || h->data[n] == ';')) return true;
    return false;
}

/* one request; headers are "Name: value" lines (the case's own first, then the %header
 * defaults it does not override) */
static bool http(const char *method, const char *url, struct curl_slist *hdrs, const gg_strbuf *body, bool has_body,
                 response *res, gg_strbuf *err) {
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD")) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (has_body || strcmp(method, "GET")) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data ? body->data : "");
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &res->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &res->headers);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->status);
    else gg_strbuf_printf(err, "  # %s %s: %s\n", method, url, curl_easy_strerror(rc));
    curl_easy_cleanup(c);
    gg_strbuf_puts(&res->body, "");
    gg_strbuf_puts(&res->headers, "");
    return rc == CURLE_OK;
}

/* the value of response header NAME (a copy), NULL when absent */
static char *resp_header(const response *res, const char *name) {
    size_t n = strlen(name);
    for (const char *p = res->headers.data; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len > n && !strncasecmp(p, name, n) && p[n] == ':') {
            char *v = strndup(p + n + 1, len - n - 1);
            char *t = trim(v);
            memmove(v, t, strlen(t) + 1);
            return v;
        }
        p += len + (eol != NULL);
    }
    return NULL;
}

/* ---- JSON patterns ----------------------------------------------------------------------- */

/* match PAT against ACT (NULL: absent). Strings "$any", "$absent", "$string", "$number",
 * "$integer", "$boolean", "$object", "$array", "$null" and "$re:ERE" are patterns ("$$…"
 * is a literal "$…"); SUBSET lets objects hold keys the pattern does not name. */
static bool match(const json_t *pat, const json_t *act, bool subset, const char *path, gg_strbuf *why);

static bool is_any(const json_t *v) { return v != NULL; }
static bool is_string(const json_t *v) { return json_is_string(v); }
static bool is_number(const json_t *v) { return json_is_number(v); }
static bool is_integer(const json_t *v) { return json_is_integer(v); }
static bool is_boolean(const json_t *v) { return json_is_boolean(v); }
static bool is_object(const json_t *v) { return json_is_object(v); }
static bool is_array(const json_t *v) { return json_is_array(v); }
static bool is_null(const json_t *v) { return json_is_null(v); }

static const struct {
    const char *name;
    bool (*test)(const json_t *);
} type_patterns[] = {{"$any", is_any},         {"$string", is_string}, {"$number", is_number}, {"$integer", is_integer},
                     {"$boolean", is_boolean}, {"$object", is_object}, {"$array", is_array},   {"$null", is_null}};

static bool match_regex(const char *ere, const json_t *act, const char *path, gg_strbuf *why) {
    regex_t re;
    if (regcomp(&re, ere, REG_EXTENDED | REG_NOSUB)) {
        gg_strbuf_printf(why, "  # %s: bad regular expression %s\n", path, ere);
        return false;
    }
    bool ok = json_is_string(act) && regexec(&re, json_string_value(act), 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

/* the pattern S (a string starting with one $) against ACT (NULL: absent) */
static bool match_special(const char *s, const json_t *act, const char *path, gg_strbuf *why) {
    if (!strcmp(s, "$absent")) {
        if (act) gg_strbuf_printf(why, "  # %s: present, expected absent\n", path);
        return !act;
    }
    if (!act) {
        gg_strbuf_printf(why, "  # %s: absent, expected %s\n", path, s);
        return false;
    }
    int known = !strncmp(s, "$re:", 4);
    bool ok = known && match_regex(s + 4, act, path, why);
    for (size_t i = 0; !known && i < sizeof type_patterns / sizeof type_patterns[0]; i++)
        if (!strcmp(s, type_patterns[i].name)) {
            known = 1;
            ok = type_patterns[i].test(act);
        }
    if (!known) /* a string starting with one $ is always a pattern: a typo must not compare */
        gg_strbuf_printf(why, "  # %s: unknown pattern %s (a literal $ is written $$)\n", path, s);
    else if (!ok) {
        char *a = json_dumps(act, JSON_ENCODE_ANY | JSON_COMPACT);
        gg_strbuf_printf(why, "  # %s: %.300s does not match %s\n", path, a ? a : "?", s);
        free(a);
    }
    return ok;
}

static bool match_object(const json_t *pat, const json_t *act, bool subset, const char *path, gg_strbuf *why) {
    bool ok = true;
    const char *k;
    json_t *v;
    char sub[1024];
    json_object_foreach((json_t *)pat, k, v) {
        snprintf(sub, sizeof sub, "%s.%s", path, k);
        ok &= match(v, json_object_get(act, k), subset, sub, why);
    }
    if (subset) return ok;
    json_object_foreach((json_t *)act, k, v) if (!json_object_get(pat, k)) {
        gg_strbuf_printf(why, "  # %s.%s: not expected\n", path, k);
        ok = false;
    }
    return ok;
}

static bool match(const json_t *pat, const json_t *act, bool subset, const char *path, gg_strbuf *why) {
    if (json_is_string(pat) && json_string_value(pat)[0] == '$' && json_string_value(pat)[1] != '$')
        return match_special(json_string_value(pat), act, path, why);
    if (!act) {
        gg_strbuf_printf(why, "  # %s: absent\n", path);
        return false;
    }
    if (json_is_object(pat) && json_is_object(act)) return match_object(pat, act, subset, path, why);
    if (json_is_array(pat) && json_is_array(act)) {
        if (json_array_size(pat) != json_array_size(act)) {
            gg_strbuf_printf(why, "  # %s: %zu elements, expected %zu\n", path, json_array_size(act), json_array_size(pat));
            return false;
        }
        bool ok = true;
        char sub[1024];
        for (size_t i = 0; i < json_array_size(pat); i++) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            ok &= match(json_array_get(pat, i), json_array_get(act, i), subset, sub, why);
        }
        return ok;
    }
    bool ok;
    if (json_is_number(pat) && json_is_number(act)) ok = json_number_value(pat) == json_number_value(act);
    else if (json_is_string(pat) && json_is_string(act) && json_string_value(pat)[0] == '$')
        ok = !strcmp(json_string_value(pat) + 1, json_string_value(act)); /* "$$x" is "$x" */
    else ok = json_equal((json_t *)pat, (json_t *)act);
    if (!ok) {
        char *a = json_dumps(act, JSON_ENCODE_ANY | JSON_COMPACT), *e = json_dumps(pat, JSON_ENCODE_ANY | JSON_COMPACT);
        gg_strbuf_printf(why, "  # %s: %.300s, expected %.300s\n", path[0] ? path : ".", a ? a : "?", e ? e : "?");
        free(a);
        free(e);
    }
    return ok;
}

/* a jq-style path (.a.b[0]["c d"]) applied to V; *rest is set after the path. NULL when a
 * step is missing. */
static const json_t *path_get(const json_t *v, const char *p, const char **rest, bool *bad) {
    *bad = false;
    if (*p != '.') {
        *bad = true;
        return NULL;
    }
    if (p[1] == '\0' || isspace((unsigned char)p[1])) {
        *rest = p + 1;
        return v;
    }
    while (*p == '.' || *p == '[') {
        if (*p == '.') p++;
        if (*p == '[' && p[1] == '"') {
            const char *end = strchr(p + 2, '"');
            if (!end || end[1] != ']') break;
            char key[512];
            snprintf(key, sizeof key, "%.*s", (int)(end - p - 2), p + 2);
            v = v ? json_object_get(v, key) : NULL;
            p = end + 2;
        } else if (*p == '[') {
            char *end;
            long i = strtol(p + 1, &end, 10);
            if (*end != ']') break;
            v = v && i >= 0 ? json_array_get(v, (size_t)i) : NULL;
            p = end + 1;
        } else {
            const char *s = p;
            while (isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '$') p++;
            if (p == s) break;
            char key[512];
            snprintf(key, sizeof key, "%.*s", (int)(p - s), s);
            v = v ? json_object_get(v, key) : NULL;
        }
    }
    *bad = !(*p == '\0' || isspace((unsigned char)*p));
    *rest = p;
    return v;
}

/* the JSON a response carries: the body, or for an SSE stream the last data: event */
static json_t *response_json(const response *res, gg_strbuf *why) {
    const char *s = res->body.data ? res->body.data : "";
    char *ct = resp_header(res, "Content-Type");
    const char *start = s;
    size_t len = strlen(s);
    if (ct && !strncmp(ct, "text/event-stream", 17)) {
        const char *d = NULL;
        for (const char *p = s; (p = strstr(p, "data:")); p += 5)
            if (p == s || p[-1] == '\n') d = p;
        if (d) {
            start = d + 5;
            len = strcspn(start, "\n");
        }
    }
    free(ct);
    json_error_t e;
    json_t *j = json_loadb(start, len, JSON_DECODE_ANY, &e);
    if (!j) gg_strbuf_printf(why, "  # the body is not JSON: %s\n", e.text);
    return j;
}

/* ---- cases ------------------------------------------------------------------------------- */

typedef struct {
    src_line *lines;
    int n;
} block;

static void show_block(const block *b) {
    for (int i = 0; i < b->n; i++) printf("  | %s\n", b->lines[i].text);
}

static void show_response(const response *res) {
    printf("  actual: HTTP %ld\n", res->status);
    const char *h = res->headers.data ? res->headers.data : "";
    for (const char *p = h; *p;) {
        size_t len = strcspn(p, "\r\n");
        if (len && strncmp(p, "HTTP/", 5)) printf("  < %.*s\n", (int)len, p);
        p += len;
        while (*p == '\r' || *p == '\n') p++;
    }
    size_t n = res->body.len;
    printf("  < %.*s%s\n", (int)(n > BODY_SHOW ? BODY_SHOW : n), res->body.data ? res->body.data : "",
           n > BODY_SHOW ? " … (truncated)" : "");
}

/* body pieces: "< text" lines (joined by newlines), "<hex HH…", "<file PATH", "<repeat N TEXT" */
static bool body_piece(runner *r, const char *t, gg_strbuf *body, bool *last_text, gg_strbuf *err) {
    if (!strncmp(t, "<hex", 4)) {
        for (const char *p = t + 4; *p;) {
            while (isspace((unsigned char)*p)) p++;
            if (!*p) break;
            unsigned v;
            int used;
            if (sscanf(p, "%2x%n", &v, &used) != 1) return gg_strbuf_printf(err, "  # bad hex: %s\n", p), false;
            gg_strbuf_putc(body, (char)v);
            p += used;
        }
        *last_text = false;
    } else if (!strncmp(t, "<file ", 6)) {
        char name[4096], path[4300];
        snprintf(name, sizeof name, "%s", t + 6);
        src_path(r, trim(name), path, sizeof path);
        size_t n;
        char *s = read_file(path, &n);
        if (!s) return gg_strbuf_printf(err, "  # cannot read %s\n", path), false;
        gg_strbuf_append(body, s, n);
        free(s);
        *last_text = false;
    } else if (!strncmp(t, "<repeat ", 8)) {
        char *end;
        long n = strtol(t + 8, &end, 10);
        if (n < 0 || n > 100000000 || *end != ' ') return gg_strbuf_printf(err, "  # bad <repeat: %s\n", t), false;
        for (long i = 0; i < n; i++) gg_strbuf_puts(body, end + 1);
        *last_text = false;
    } else if (t[0] == '<' && (t[1] == ' ' || t[1] == '\0')) {
        char *s = subst(r, t[1] ? t + 2 : "", err);
        if (*last_text) gg_strbuf_putc(body, '\n');
        gg_strbuf_puts(body, s);
        free(s);
        *last_text = true;
    } else return gg_strbuf_printf(err, "  # unknown body line: %s\n", t), false;
    return true;
}

typedef struct {
    const char *method;
    char *url;
    struct curl_slist *hdrs;
    gg_strbuf body;
    bool has_body;
} request;

static bool build_request(runner *r, const block *b, int *i, request *q, gg_strbuf *err) {
    char *line = subst(r, b->lines[*i].text, err);
    char *sp = strchr(line, ' ');
    if (!sp) {
        gg_strbuf_printf(err, "  # a request line is METHOD PATH\n");
        free(line);
        return false;
    }
    *sp = '\0';
    char *target = trim(sp + 1);
    bool internal = !strncmp(target, "internal:", 9);
    if (internal) target += 9;
    gg_strbuf u = GG_STRBUF_INIT;
    gg_strbuf_printf(&u, "%s%s", internal ? r->intl : r->pub, target);
    q->url = gg_strbuf_take(&u);
    q->method = strdup(line);
    free(line);
    bool last_text = false;
    for ((*i)++; *i < b->n; (*i)++) {
        const char *t = b->lines[*i].text;
        if (t[0] == '#') continue;
        if (t[0] == '%')
            return gg_strbuf_printf(err, "  # a directive inside a case (directives come before its request line)\n"), false;
        if (t[0] == '>' || t[0] == '=' || t[0] == '~' || t[0] == '.' || t[0] == '|') break;
        if (t[0] == '<') {
            if (!body_piece(r, t, &q->body, &last_text, err)) return false;
            q->has_body = true;
            continue;
        }
        if (!strchr(t, ':') || t[0] == ':' || isspace((unsigned char)t[0]))
            return gg_strbuf_printf(err, "  # not a header line (Name: value): %s\n", t), false;
        char *h = subst(r, t, err);
        q->hdrs = curl_slist_append(q->hdrs, h);
        free(h);
    }
    for (int d = 0; d < r->ndefaults; d++) {
        size_t n = strcspn(r->defaults[d], ":");
        if (has_header(q->hdrs, r->defaults[d], n)) continue;
        char *h = subst(r, r->defaults[d], err);
        q->hdrs = curl_slist_append(q->hdrs, h);
        free(h);
    }
    return err->len == 0;
}

/* collect the lines that start with C (after "C ") joined by newlines, from index I on */
static char *joined(const block *b, int from, char c) {
    gg_strbuf s = GG_STRBUF_INIT;
    bool any = false;
    for (int i = from; i < b->n; i++) {
        const char *t = b->lines[i].text;
        if (t[0] != c) continue;
        if (any) gg_strbuf_putc(&s, '\n');
        gg_strbuf_puts(&s, t[1] ? t + 2 : "");
        any = true;
    }
    if (!any) return NULL;
    gg_strbuf_puts(&s, "");
    return gg_strbuf_take(&s);
}

static bool expect_json(const char *text, const json_t *body, bool subset, gg_strbuf *why) {
    json_error_t e;
    json_t *pat = json_loads(text, JSON_DECODE_ANY, &e);
    if (!pat) return gg_strbuf_printf(why, "  # the expected JSON does not parse: %s\n", e.text), false;
    bool ok = body && match(pat, body, subset, "", why);
    json_decref(pat);
    return ok;
}

/* "> 200", "> Name: glob" or "> !Name" */
static bool expect_header(const char *t, const response *res, gg_strbuf *why) {
    const char *v = t + 1 + strspn(t + 1, " ");
    if (isdigit((unsigned char)*v)) {
        long want = strtol(v, NULL, 10);
        if (res->status != want) gg_strbuf_printf(why, "  # status %ld, expected %ld\n", res->status, want);
        return res->status == want;
    }
    bool absent = *v == '!';
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(v + absent, ":"), v + absent);
    char *got = resp_header(res, trim(name));
    bool ok;
    if (absent) ok = !got;
    else {
        const char *glob = strchr(v, ':');
        glob = glob ? glob + 1 : "*";
        while (*glob == ' ') glob++;
        ok = got && fnmatch(glob, got, 0) == 0;
    }
    if (!ok) gg_strbuf_printf(why, "  # header %s: %s%s\n", name, got ? got : "(absent)", absent ? ", expected absent" : "");
    free(got);
    return ok;
}

/* ".a.b[0] PATTERN" */
static bool expect_path(const char *t, const json_t *body, gg_strbuf *why) {
    const char *rest;
    bool bad;
    const json_t *v = path_get(body, t, &rest, &bad);
    if (bad) return gg_strbuf_printf(why, "  # bad path in: %s\n", t), false;
    if (!body) return false;
    json_error_t e;
    json_t *pat = json_loads(rest, JSON_DECODE_ANY, &e);
    if (!pat) return gg_strbuf_printf(why, "  # the expected JSON does not parse: %s\n", e.text), false;
    char path[256];
    snprintf(path, sizeof path, "%.*s", (int)(rest - t), t);
    bool ok = match(pat, v, true, path, why);
    json_decref(pat);
    return ok;
}

static bool expect_line(const char *t, const response *res, const json_t *body, gg_strbuf *why) {
    switch (t[0]) {
    case '>': return expect_header(t, res, why);
    case '.': return expect_path(t, body, why);
    case '=': case '~': case '|': case '#': return true; /* whole-body lines: check_response */
    default: return gg_strbuf_printf(why, "  # not an expectation line: %s\n", t), false;
    }
}

/* every expectation from line I on against the response */
static bool check_response(const block *b, int i, const response *res, gg_strbuf *why) {
    bool wants_json = false, has_status = false;
    for (int k = i; k < b->n; k++) {
        const char *t = b->lines[k].text;
        wants_json |= strchr("=~.", t[0]) != NULL;
        has_status |= t[0] == '>' && isdigit((unsigned char)t[1 + strspn(t + 1, " ")]);
    }
    /* every case states the status it expects: a case without one could not fail */
    if (!has_status) gg_strbuf_printf(why, "  # no expected status line (> NNN)\n");
    json_t *body = wants_json ? response_json(res, why) : NULL;
    bool ok = has_status && (!wants_json || body);
    for (int k = i; k < b->n; k++) ok &= expect_line(b->lines[k].text, res, body, why);
    char *exact = joined(b, i, '='), *subset = joined(b, i, '~'), *raw = joined(b, i, '|');
    if (exact) ok &= expect_json(exact, body, false, why);
    if (subset) ok &= expect_json(subset, body, true, why);
    if (raw && strcmp(raw, res->body.data ? res->body.data : "")) {
        gg_strbuf_printf(why, "  # the body differs from the | lines\n");
        ok = false;
    }
    free(exact);
    free(subset);
    free(raw);
    json_decref(body);
    return ok;
}

static void run_case(runner *r, const block *b, int start, const char *desc) {
    request q = {0};
    q.body = (gg_strbuf)GG_STRBUF_INIT;
    response res = {0, GG_STRBUF_INIT, GG_STRBUF_INIT};
    gg_strbuf why = GG_STRBUF_INIT;
    int i = start;
    bool ok = build_request(r, b, &i, &q, &why) && http(q.method, q.url, q.hdrs, &q.body, q.has_body, &res, &why) &&
              check_response(b, i, &res, &why);
    char name[1200];
    snprintf(name, sizeof name, "%s (%s:%d)", desc, r->file, b->lines[start].line);
    check(r, ok, name, NULL);
    if (!ok) {
        show_block(b);
        printf("%s", why.data ? why.data : "");
        if (res.status) show_response(&res);
    }
    free((char *)q.method);
    free(q.url);
    curl_slist_free_all(q.hdrs);
    gg_strbuf_free(&q.body);
    gg_strbuf_free(&res.body);
    gg_strbuf_free(&res.headers);
    gg_strbuf_free(&why);
}

/* ---- directives ---------------------------------------------------------------------------- */

static int split_words(char *s, char **w, int max) {
    int n = 0;
    for (char *t = strtok(s, " \t"); t && n < max; t = strtok(NULL, " \t")) w[n++] = t;
    return n;
}

static bool ensure_server(runner *r, gg_strbuf *err) { return r->pid || server_start(r, err); }

/* %graph KEY TENANT GRAPH FILE: PUT the file through the admin API (200 or 201) */
static bool dir_graph(runner *r, char **w, int nw, const char *rest, gg_strbuf *err) {
    (void)nw, (void)rest;
    char path[4300], url[1024], auth[600];
    src_path(r, w[4], path, sizeof path);
    size_t n;
    char *yaml = read_file(path, &n);
    if (!yaml) return gg_strbuf_printf(err, "  # cannot read %s\n", path), false;
    const char *key = var_get(r, w[1], strlen(w[1]));
    snprintf(url, sizeof url, "%s/admin/tenants/%s/graphs/%s", r->pub, w[2], w[3]);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", key ? key : "");
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Content-Type: application/yaml");
    gg_strbuf body = {yaml, n, n + 1, false, false};
    response res = {0, GG_STRBUF_INIT, GG_STRBUF_INIT};
    bool ok = http("PUT", url, h, &body, true, &res, err);
    if (ok && res.status != 200 && res.status != 201) {
        gg_strbuf_printf(err, "  # PUT %s → %ld %.600s\n", url, res.status, res.body.data);
        ok = false;
    }
    curl_slist_free_all(h);
    free(yaml);
    gg_strbuf_free(&res.body);
    gg_strbuf_free(&res.headers);
    return ok;
}

/* %session VAR KEY PATH [VERSION]: initialize over MCP, VAR = the Mcp-Session-Id */
static bool dir_session(runner *r, char **w, int n, const char *rest, gg_strbuf *err) {
    (void)rest;
    char url[1024], auth[600], body[512];
    const char *key = var_get(r, w[2], strlen(w[2]));
    snprintf(url, sizeof url, "%s%s", r->pub, w[3]);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", key ? key : "");
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
             "\"capabilities\":{},\"clientInfo\":{\"name\":\"caserun\",\"version\":\"1\"}}}",
             n > 4 ? w[4] : "2025-11-25");
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    gg_strbuf b = {body, strlen(body), sizeof body, false, true};
    response res = {0, GG_STRBUF_INIT, GG_STRBUF_INIT};
    bool ok = http("POST", url, h, &b, true, &res, err);
    char *sid = ok ? resp_header(&res, "Mcp-Session-Id") : NULL;
    if (ok && !sid) gg_strbuf_printf(err, "  # initialize %s → %ld without a session: %.600s\n", url, res.status, res.body.data);
    if (sid) var_set(r, w[1], sid);
    free(sid);
    curl_slist_free_all(h);
    gg_strbuf_free(&res.body);
    gg_strbuf_free(&res.headers);
    return sid != NULL;
}

static bool dir_serve(runner *r, char **w, int n, const char *rest, gg_strbuf *err) {
    (void)rest, (void)err;
    server_stop(r);
    for (int i = 0; i < r->nserve_args; i++) free(r->serve_args[i]);
    for (int i = 0; i < r->nserve_env; i++) free(r->serve_env[i]);
    r->nserve_args = r->nserve_env = 0;
    for (int i = 1; i < n && i < MAX_ARGS; i++) {
        if (w[i][0] != '-' && strchr(w[i], '=')) r->serve_env[r->nserve_env++] = strdup(w[i]);
        else r->serve_args[r->nserve_args++] = strdup(w[i]);
    }
    return true;
}

static bool dir_tenant(runner *r, char **w, int n, const char *rest, gg_strbuf *err) {
    (void)n, (void)rest;
    char *args[] = {"tenant", "create", w[1]};
    char *out = cli(r, args, 3, err);
    free(out);
    return out != NULL;
}

static bool dir_key(runner *r, char **w, int n, const char *rest, gg_strbuf *err) {
    (void)n, (void)rest;
    char *args[] = {"key", "create", "--tenant", w[2], "--scopes", w[3]};
    char *out = cli(r, args, 6, err), *k = out ? strstr(out, "gg_") : NULL;
    if (k) {
        k[strcspn(k, " \r\n")] = '\0';
        var_set(r, w[1], k);
    } else if (out) gg_strbuf_printf(err, "  # no key printed: %s\n", out);
    free(out);
    return k != NULL;
}

/* %revoke VAR: `graphgate key revoke` of the key in $VAR (its id is the part between the
 * first two underscores: gg_<id>_<secret>); the variable keeps the revoked key */
static bool dir_revoke(runner *r, char **w, int n, const char *rest, gg_strbuf *err) {
    (void)n, (void)rest;
    const char *key = var_get(r, w[1], strlen(w[1]));
    char id[128];
    if (!key || strncmp(key, "gg_", 3) || sscanf(key + 3, "%127[^_]", id) != 1)
        return gg_strbuf_printf(err, "  # %%revoke: $%s is not a key\n", w[1]), false;
    char *args[] = {"key", "revoke", id};
    char *out = cli(r, args, 3, err);
    free(out);
    return out != NULL;
}

/* %set VAR value: the value is the rest of the line, spaces included */
static bool dir_set(runner *r, char **w, int n, const char *rest, gg_strbuf *err) {
    (void)n;
    char *val = subst(r, rest + strspn(rest, " \t") + strlen(w[1]), err);
    var_set(r, w[1], trim(val));
    free(val);
    return err->len == 0;
}

/* %header Name: value — stored as written: its $vars are read at each request */
static bool dir_header(runner *r, char **w, int n, const char *rest, gg_strbuf *err) {
    (void)w, (void)n;
    const char *h = rest + strspn(rest, " \t");
    size_t nl = strcspn(h, ":");
    if (h[nl] != ':') return gg_strbuf_printf(err, "  # %%header Name: value\n"), false;
    for (int d = 0; d < r->ndefaults; d++)
        if (!strncasecmp(r->defaults[d], h, nl) && r->defaults[d][nl] == ':') {
            free(r->defaults[d]);
            r->defaults[d--] = r->defaults[--r->ndefaults];
        }
    if (!h[nl + 1 + strspn(h + nl + 1, " \t")]) return true; /* "Name:" drops it */
    if (r->ndefaults == MAX_ARGS) return gg_strbuf_printf(err, "  # too many %%header lines\n"), false;
    r->defaults[r->ndefaults++] = strdup(h);
    return true;
}

static const struct {
    const char *name;
    int min, max;      /* words, the name included */
    bool server;       /* needs the server running */
    bool raw;          /* $vars are not replaced in the line first */
    bool (*run)(runner *, char **, int, const char *, gg_strbuf *);
} directives[] = {
    {"tenant", 2, 2, false, false, dir_tenant}, {"key", 4, 4, false, false, dir_key},
    {"graph", 5, 5, true, false, dir_graph},   {"session", 4, 5, true, false, dir_session},
    {"set", 2, MAX_ARGS, false, true, dir_set}, {"header", 2, MAX_ARGS, false, true, dir_header},
    {"serve", 1, MAX_ARGS, false, false, dir_serve}, {"revoke", 2, 2, false, false, dir_revoke},
};

static bool directive(runner *r, const char *text, gg_strbuf *err) {
    const char *body = text + 1 + strspn(text + 1, " \t");
    size_t wl = strcspn(body, " \t");
    for (size_t i = 0; i < sizeof directives / sizeof directives[0]; i++) {
        if (strlen(directives[i].name) != wl || strncmp(body, directives[i].name, wl)) continue;
        char *line = directives[i].raw ? strdup(body) : subst(r, body, err), *w[MAX_ARGS];
        int n = split_words(line, w, MAX_ARGS);
        bool ok = err->len == 0; /* else an unknown $variable, already in err */
        if (ok && (n < directives[i].min || n > directives[i].max)) {
            gg_strbuf_printf(err, "  # %%%s takes %d to %d words\n", directives[i].name, directives[i].min - 1,
                             directives[i].max - 1);
            ok = false;
        }
        ok = ok && (!directives[i].server || ensure_server(r, err)) && directives[i].run(r, w, n, body + wl, err);
        free(line);
        return ok;
    }
    gg_strbuf_printf(err, "  # unknown directive: %s\n", text);
    return false;
}

/* ---- files ----------------------------------------------------------------------------------- */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* one block: its % directives in order, then its case (when it has a request line) */
static bool run_block(runner *r, const block *b) {
    gg_strbuf desc = GG_STRBUF_INIT;
    for (int i = 0; i < b->n; i++) {
        const char *t = b->lines[i].text;
        if (t[0] == '#') {
            if (desc.len) gg_strbuf_putc(&desc, ' ');
            gg_strbuf_puts(&desc, trim((char *)t + 1));
            continue;
        }
        if (t[0] == '%') {
            gg_strbuf err = GG_STRBUF_INIT;
            if (!directive(r, t, &err)) {
                char name[600];
                snprintf(name, sizeof name, "setup %s (%s:%d)", t, r->file, b->lines[i].line);
                check(r, false, name, err.data);
                gg_strbuf_free(&err);
                gg_strbuf_free(&desc);
                return false;
            }
            gg_strbuf_free(&err);
            continue;
        }
        gg_strbuf err = GG_STRBUF_INIT;
        if (!ensure_server(r, &err)) {
            check(r, false, "the server starts", err.data);
            gg_strbuf_free(&err);
            gg_strbuf_free(&desc);
            return false;
        }
        gg_strbuf_free(&err);
        run_case(r, b, i, desc.len ? desc.data : b->lines[i].text);
        break;
    }
    gg_strbuf_free(&desc);
    return true;
}

static void run_file(runner *r, const char *file) {
    r->file = file;
    char *text = read_file(file, NULL);
    if (!text) {
        check(r, false, file, "  # cannot read the file\n");
        return;
    }
    src_line lines[MAX_LINES];
    block b = {lines, 0};
    int lineno = 0;
    bool go = true;
    for (char *p = text, *eol; go && p; p = eol ? eol + 1 : NULL) {
        eol = strchr(p, '\n');
        if (eol) *eol = '\0';
        lineno++;
        bool blank = p[strspn(p, " \t\r")] == '\0';
        if (!blank && b.n == MAX_LINES) {
            char name[600];
            snprintf(name, sizeof name, "%s:%d: a block of at most %d lines", file, lines[0].line, MAX_LINES);
            check(r, false, name, NULL);
            break;
        }
        if (!blank) {
            size_t n = strlen(p);
            if (n && p[n - 1] == '\r') p[n - 1] = '\0';
            lines[b.n++] = (src_line){lineno, p};
        }
        if ((blank || !eol) && b.n) {
            go = run_block(r, &b);
            b.n = 0;
        }
    }
    server_stop(r);
    free(text);
}

/* the environment must not leak configuration into the server */
static void clean_environment(void) {
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e && !again; e++)
            if (!strncmp(*e, "GRAPHGATE_", 10)) {
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
                unsetenv(name);
                again = 1;
            }
    }
}

/* one file in its own temporary directory (database, serve output), removed afterwards */
static bool run_file_in_tmp(runner *r, const char *file) {
    const char *tmpdir = getenv("TMPDIR");
    snprintf(r->tmp, sizeof r->tmp, "%s/gg-case.XXXXXX", tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(r->tmp)) {
        printf("cannot create a temporary directory: %s\n", strerror(errno));
        r->failed++;
        return false;
    }
    snprintf(r->db, sizeof r->db, "%s/gg.db", r->tmp);
    var_set(r, "SRCDIR", r->srcdir);
    run_file(r, file);
    if (!getenv("GG_KEEP_TMP")) nftw(r->tmp, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    for (int v = 0; v < r->nvars; v++) free(r->vars[v].name), free(r->vars[v].value);
    for (int d = 0; d < r->ndefaults; d++) free(r->defaults[d]);
    for (int a = 0; a < r->nserve_args; a++) free(r->serve_args[a]);
    for (int a = 0; a < r->nserve_env; a++) free(r->serve_env[a]);
    r->nvars = r->ndefaults = r->nserve_args = r->nserve_env = 0;
    return true;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: caserun FILE.case...\n");
        return 2;
    }
    runner r = {0};
    const char *build = getenv("GG_BUILDDIR"), *src = getenv("GG_SRCDIR"), *bin = getenv("GG_BIN");
    snprintf(r.srcdir, sizeof r.srcdir, "%s", src ? src : ".");
    if (bin) snprintf(r.bin, sizeof r.bin, "%s", bin);
    else snprintf(r.bin, sizeof r.bin, "%s/src/graphgate", build ? build : ".");
    clean_environment();
    signal(SIGINT, on_fatal_signal);
    signal(SIGTERM, on_fatal_signal);
    signal(SIGHUP, on_fatal_signal);
    if (access(r.bin, X_OK)) {
        printf("graphgate not built at %s\n0 passed, 1 failed\n", r.bin);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (int i = 1; i < argc && run_file_in_tmp(&r, argv[i]); i++) continue;
    curl_global_cleanup();
    printf("%d passed, %d failed\n", r.passed, r.failed);
    return r.failed ? 1 : 0;
}
