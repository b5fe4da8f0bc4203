/* Allocation-failure test of the JSONata compiler: each expression of the conformance
 * suite (every third one) is compiled once per allocation it makes, with exactly that
 * allocation failing. Each run must end in an error (never a half-built expression) and
 * leave no allocation behind. malloc/calloc/realloc/free are replaced (glibc supports
 * this and routes strdup etc. through them), so the test skips under AddressSanitizer,
 * which owns those symbols; the sanitizer build's leak checks cover the other paths. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonata/jsonata.h"

#if defined(__SANITIZE_ADDRESS__)
int main(void) {
    puts("SKIP: allocation-failure injection is incompatible with AddressSanitizer");
    return 77;
}
#else
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t a, size_t b);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

/* The injection state; only this test's main thread allocates while it is active. */
static struct {
    int active;
    long fail_at, calls, live;
} inj;

static int inject(void) {
    if (!inj.active) return 0;
    return ++inj.calls == inj.fail_at;
}
void *malloc(size_t n) {
    if (inject()) return NULL;
    void *p = __libc_malloc(n);
    if (p && inj.active) inj.live++;
    return p;
}
void *calloc(size_t a, size_t b) {
    if (inject()) return NULL;
    void *p = __libc_calloc(a, b);
    if (p && inj.active) inj.live++;
    return p;
}
void *realloc(void *o, size_t n) {
    if (inject()) return NULL;
    void *p = __libc_realloc(o, n);
    if (p && !o && inj.active) inj.live++;
    return p;
}
void free(void *p) {
    if (p && inj.active) inj.live--;
    __libc_free(p);
}

/* Compiles x once per allocation, failing that allocation; returns the problems found. */
static int check_expr(const char *x, long *runs) {
    int bad = 0;
    for (inj.fail_at = 1; inj.fail_at < 100000; inj.fail_at++) {
        gg_error err = GG_ERROR_INIT;
        inj.calls = 0;
        inj.live = 0;
        inj.active = 1;
        jsonata_expr *e = jsonata_compile(x, NULL, &err);
        int failed = gg_error_is_set(&err);
        jsonata_free(e);
        gg_error_clear(&err);
        inj.active = 0;
        (*runs)++;
        if (inj.calls < inj.fail_at) break; /* no allocation was failed: done */
        if (inj.live != 0) { printf("FAIL leak of %ld at allocation %ld: %s\n", inj.live, inj.fail_at, x); bad++; }
        if (e && failed) { printf("FAIL expression and error at allocation %ld: %s\n", inj.fail_at, x); bad++; }
        if (!e && !failed) { printf("FAIL no error at allocation %ld: %s\n", inj.fail_at, x); bad++; }
    }
    return bad;
}

int main(void) {
    jsonata_alloc_cache_close(); /* every allocation and free reaches the hooks above */
    const char *conf = getenv("GG_CONFORMANCE_DIR"), *shared = getenv("GG_SHARED");
    char dir[4096];
    if (conf && *conf) snprintf(dir, sizeof dir, "%s/jsonata/groups", conf);
    else snprintf(dir, sizeof dir, "%s/conformance/jsonata/groups", shared && *shared ? shared : "../shared");
    DIR *d = opendir(dir);
    if (!d) {
        printf("SKIP: the JSONata test suite's expressions not found in %s (set GG_CONFORMANCE_DIR or GG_SHARED; "
               "docs/internals.md: where the conformance suites come from)\n", dir);
        return 77;
    }
    int passed = 0, failed = 0, k = 0;
    long runs = 0;
    struct dirent *g;
    while ((g = readdir(d))) {
        if (g->d_name[0] == '.') continue;
        char gdir[4600];
        snprintf(gdir, sizeof gdir, "%s/%s", dir, g->d_name);
        DIR *cd = opendir(gdir);
        if (!cd) continue;
        struct dirent *c;
        while ((c = readdir(cd))) {
            if (!strstr(c->d_name, ".json")) continue;
            char path[5200];
            snprintf(path, sizeof path, "%s/%s", gdir, c->d_name);
            json_t *doc = json_load_file(path, 0, NULL), *one = NULL, *cases = doc, *cs;
            if (!json_is_array(doc)) { one = json_array(); json_array_append(one, doc); cases = one; }
            size_t i;
            json_array_foreach(cases, i, cs) {
                const char *x = json_string_value(json_object_get(cs, "expr"));
                if (!x || k++ % 3) continue;
                if (check_expr(x, &runs)) failed++;
                else passed++;
            }
            json_decref(one);
            json_decref(doc);
        }
        closedir(cd);
    }
    closedir(d);
    printf("%ld compiles with one failing allocation\n%d passed, %d failed\n", runs, passed, failed);
    return failed || passed == 0 ? 1 : 0;
}
#endif
