/* Unit tests for the configuration loader: defaults, YAML keys, errors with positions,
 * and the file < environment < flags override order. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "../check_main.h"

static char path[64];

static void write_config(const char *text) {
    snprintf(path, sizeof path, "/tmp/gg-config-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void load_expect_error(const char *text, int line, int col, const char *needle) {
    write_config(text);
    gg_config c;
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_config_init(&c, &err));
    ck_assert(!gg_config_load_file(&c, path, &err));
    ck_assert_str_eq(err.code, "invalid_config");
    ck_assert_str_eq(err.path, path);
    ck_assert_msg(err.line == line && err.column == col, "%s: got %d:%d want %d:%d (%s)", text, err.line, err.column,
                  line, col, err.message);
    ck_assert_msg(strstr(err.message, needle), "'%s' not in '%s'", needle, err.message);
    gg_error_clear(&err);
    gg_config_free(&c);
    unlink(path);
}

START_TEST(defaults_are_safe) {
    gg_config c;
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_config_init(&c, &err));
    ck_assert_str_eq(c.listen, "127.0.0.1:8080");
    ck_assert_str_eq(c.internal_listen, "127.0.0.1:8081");
    ck_assert_int_eq(c.body_limit, 1024 * 1024);
    ck_assert_int_eq(c.origins.n, 0);
    ck_assert_int_eq(c.policy_stdio_commands.n, 0);
    ck_assert(gg_config_validate(&c, &err));
    gg_config_free(&c);
}
END_TEST

START_TEST(file_sets_every_kind_of_value) {
    write_config("# comment\n"
                 "listen: 0.0.0.0:9000\n"
                 "internal_listen: \"\"\n"
                 "workers: 8\n"
                 "body_limit: 2MiB\n"
                 "shutdown_timeout: 1500ms\n"
                 "http:\n"
                 "  origins: [\"https://a.example\", \"https://b.example\"]\n"
                 "  allowed_hosts:\n"
                 "    - gw.example\n"
                 "database:\n"
                 "  path: /tmp/x.db\n"
                 "  busy_timeout: 2s\n"
                 "log:\n"
                 "  level: debug\n"
                 "  access: false\n"
                 "rate_limit: {rate: 12.5, burst: 40}\n"
                 "history:\n"
                 "  max_age: 7d\n"
                 "  max_count: 5000\n"
                 "policy:\n"
                 "  stdio_commands: [/usr/bin/node]\n"
                 "specs:\n"
                 "session:\n"
                 "  secret: ~\n");
    gg_config c;
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_config_init(&c, &err));
    ck_assert_msg(gg_config_load_file(&c, path, &err), "%s", err.message);
    ck_assert_str_eq(c.listen, "0.0.0.0:9000");
    ck_assert_str_eq(c.internal_listen, "");
    ck_assert_int_eq(c.workers, 8);
    ck_assert_int_eq(c.body_limit, 2 * 1024 * 1024);
    ck_assert_int_eq(c.shutdown_timeout_ms, 1500);
    ck_assert_int_eq(c.origins.n, 2);
    ck_assert_str_eq(c.origins.items[1], "https://b.example");
    ck_assert_int_eq(c.allowed_hosts.n, 1);
    ck_assert_str_eq(c.db_path, "/tmp/x.db");
    ck_assert_int_eq(c.busy_timeout_ms, 2000);
    ck_assert_int_eq(c.log_level, GG_LOG_DEBUG);
    ck_assert(!c.access_log);
    ck_assert(c.rate_limit_rate == 12.5);
    ck_assert_int_eq(c.rate_limit_burst, 40);
    ck_assert_int_eq(c.history_max_age_ms, 7LL * 86400000);
    ck_assert_int_eq(c.history_max_count, 5000);
    ck_assert_str_eq(c.policy_stdio_commands.items[0], "/usr/bin/node");
    ck_assert_ptr_null(c.session_secret);
    ck_assert_str_eq(c.config_file, path);
    ck_assert(gg_config_validate(&c, &err));
    gg_config_free(&c);
    unlink(path);
}
END_TEST

START_TEST(bad_keys_rejected_with_position) {
    load_expect_error("listen: 127.0.0.1:1\nlisen: x\n", 2, 1, "unknown configuration key 'lisen'");
    load_expect_error("database:\n  path: a.db\n  pth: b\n", 3, 3, "'database.pth'");
    load_expect_error("workers: many\n", 1, 10, "workers: 'many' is not an integer");
    load_expect_error("workers: 5000\n", 1, 10, "out of range");
    load_expect_error("body_limit: 1 potato\n", 1, 13, "not a size");
    load_expect_error("http:\n  origins: https://x\n", 2, 12, "must be a list");
    load_expect_error("listen: [a, b]\n", 1, 9, "single value");
    load_expect_error("log: debug\n", 1, 6, "must be a mapping");
    load_expect_error("listen: 1\n  bad indent: [\n", 2, 13, "YAML");
    load_expect_error("- a\n- b\n", 1, 1, "mapping of settings");
    load_expect_error("http:\n  origins:\n    - {a: 1}\n", 3, 7, "list items must be strings");
}
END_TEST

/* A key given twice is an error at the second with the first's position in the message,
 * at any level; the same name in two different sections is not a duplicate. */
START_TEST(duplicate_keys_rejected_with_both_positions) {
    load_expect_error("workers: 2\nqueue_size: 10\nworkers: 4\n", 3, 1, "duplicate key 'workers' (first at line 1, column 1)");
    load_expect_error("log:\n  level: debug\n  file: x.log\n  level: info\n", 4, 3,
                      "duplicate key 'log.level' (first at line 2, column 3)");
    load_expect_error("log:\n  level: debug\nworkers: 1\nlog:\n  access: false\n", 4, 1,
                      "duplicate key 'log' (first at line 1, column 1)");
    write_config("history:\n  durability: async\nlog:\n  level: warn\n");
    gg_config c;
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_config_init(&c, &err));
    ck_assert_msg(gg_config_load_file(&c, path, &err), "%s", err.message);
    ck_assert_str_eq(c.history_durability, "async");
    gg_config_free(&c);
    unlink(path);
    /* durability: only the two modes */
    ck_assert(gg_config_init(&c, &err));
    ck_assert(gg_config_set(&c, "history.durability", "sometimes", &err));
    ck_assert(!gg_config_validate(&c, &err));
    ck_assert_msg(strstr(err.message, "history.durability"), "%s", err.message);
    gg_error_clear(&err);
    gg_config_free(&c);
}
END_TEST

/* gg_config_diff names exactly the keys that differ, secrets masked. */
static void count_diff(void *user, const char *key, const char *old_value, const char *new_value) {
    gg_strbuf *b = user;
    gg_strbuf_printf(b, "%s:%s>%s;", key, old_value, new_value);
}

START_TEST(config_diff_names_changed_keys) {
    gg_config a, b;
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_config_init(&a, &err));
    ck_assert(gg_config_init(&b, &err));
    gg_strbuf out = GG_STRBUF_INIT;
    ck_assert_int_eq(gg_config_diff(&a, &b, count_diff, &out), 0);
    ck_assert(gg_config_set(&b, "log.level", "debug", &err));
    ck_assert(gg_config_set(&b, "session.secret", "0123456789abcdef0123456789abcdef", &err));
    ck_assert_int_eq(gg_config_diff(&a, &b, count_diff, &out), 2);
    ck_assert_str_eq(out.data, "log.level:info>debug;session.secret:null>\"********\";");
    gg_strbuf_free(&out);
    gg_config_free(&a);
    gg_config_free(&b);
}
END_TEST

START_TEST(env_then_flags_override_file) {
    write_config("listen: 127.0.0.1:7000\nworkers: 3\ndatabase:\n  path: file.db\n");
    char *envp[] = {"GRAPHGATE_WORKERS=5", "GRAPHGATE_DATABASE_PATH=env.db", "GRAPHGATE_HTTP_ORIGINS=https://a, https://b",
                    "GRAPHGATE_SOMETHING_ELSE=1", "PATH=/bin", NULL};
    gg_config c;
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_config_init(&c, &err));
    ck_assert(gg_config_load_file(&c, path, &err));
    ck_assert(gg_config_apply_env(&c, envp, &err));
    ck_assert_str_eq(c.listen, "127.0.0.1:7000"); /* file, untouched by env */
    ck_assert_int_eq(c.workers, 5);               /* env over file */
    ck_assert_str_eq(c.db_path, "env.db");
    ck_assert_int_eq(c.origins.n, 2);
    ck_assert_str_eq(c.origins.items[1], "https://b");
    ck_assert(gg_config_set(&c, "database.path", "flag.db", &err)); /* flag over env */
    ck_assert_str_eq(c.db_path, "flag.db");
    ck_assert(!gg_config_set(&c, "no.such", "1", &err));
    ck_assert_str_eq(err.code, "invalid_config");
    gg_error_clear(&err);
    char *bad_env[] = {"GRAPHGATE_WORKERS=lots", NULL};
    ck_assert(!gg_config_apply_env(&c, bad_env, &err));
    ck_assert_str_eq(err.path, "GRAPHGATE_WORKERS");
    gg_error_clear(&err);
    gg_config_free(&c);
    unlink(path);
}
END_TEST

START_TEST(cli_options_and_validation) {
    write_config("workers: 3\n");
    setenv("GRAPHGATE_WORKERS", "4", 1);
    gg_config c;
    char *argv[] = {"tenant", "create", "--config", path, "--db=/tmp/flag.db", "acme", NULL};
    char *rest[8];
    int n = 0;
    ck_assert_int_eq(gg_cli_load_config(&c, 6, argv, "tenant", rest, &n), GG_EXIT_OK);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(rest[0], "tenant");
    ck_assert_str_eq(rest[1], "create");
    ck_assert_str_eq(rest[2], "acme");
    ck_assert_str_eq(c.db_path, "/tmp/flag.db");
    ck_assert_int_eq(c.workers, 4);
    gg_config_free(&c);
    unsetenv("GRAPHGATE_WORKERS");
    char *argv2[] = {"tenant", "--db", NULL};
    ck_assert_int_eq(gg_cli_load_config(&c, 2, argv2, "tenant", rest, &n), GG_EXIT_USAGE);
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_config_init(&c, &err));
    ck_assert(gg_config_set(&c, "listen", "nonsense", &err));
    ck_assert(!gg_config_validate(&c, &err));
    gg_error_clear(&err);
    ck_assert(gg_config_set(&c, "listen", "[::1]:8080", &err));
    ck_assert(gg_config_set(&c, "session.secret", "short", &err));
    ck_assert(!gg_config_validate(&c, &err));
    gg_error_clear(&err);
    gg_config_free(&c);
    unlink(path);
    char dir[4096];
    ck_assert(gg_config_find_data_dir(NULL, "migrations", dir, sizeof dir, &err));
    ck_assert(strstr(dir, "migrations") != NULL);
    ck_assert(!gg_config_find_data_dir("/nonexistent/dir", "migrations", dir, sizeof dir, &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
}
END_TEST

/* deploy/graphgate.yaml documents every key with its default: loading it must give
 * exactly the defaults, and every key must appear in it. */
START_TEST(example_file_matches_defaults) {
    const char *src = getenv("GG_SRCDIR");
    char example[1024];
    snprintf(example, sizeof example, "%s/deploy/graphgate.yaml", src ? src : "..");
    gg_config a, b;
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_config_init(&a, &err));
    ck_assert(gg_config_init(&b, &err));
    ck_assert_msg(gg_config_load_file(&b, example, &err), "%s:%d:%d %s", example, err.line, err.column, err.message);
    char *da = NULL, *db = NULL;
    size_t la = 0, lb = 0;
    FILE *fa = open_memstream(&da, &la), *fb = open_memstream(&db, &lb);
    gg_config_dump(&a, fa);
    gg_config_dump(&b, fb);
    fclose(fa);
    fclose(fb);
    ck_assert_str_eq(da, db);
    /* Every key of the dump is spelled out in the example. */
    FILE *f = fopen(example, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 18]; /* the whole example: a key past a short buffer would be "missing" */
    size_t n = fread(text, 1, sizeof text - 1, f);
    ck_assert_msg(feof(f), "deploy/graphgate.yaml is larger than the test's buffer");
    text[n] = '\0';
    fclose(f);
    for (char *line = strtok(da, "\n"); line; line = strtok(NULL, "\n")) {
        char *colon = strchr(line, ':');
        *colon = '\0';
        const char *leaf = strrchr(line, '.') ? strrchr(line, '.') + 1 : line;
        char pat[128];
        snprintf(pat, sizeof pat, "%s:", leaf);
        ck_assert_msg(strstr(text, pat), "deploy/graphgate.yaml lacks %s", line);
    }
    free(da);
    free(db);
    gg_config_free(&a);
    gg_config_free(&b);
}
END_TEST

int main(void) {
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, defaults_are_safe);
    tcase_add_test(tc, file_sets_every_kind_of_value);
    tcase_add_test(tc, bad_keys_rejected_with_position);
    tcase_add_test(tc, duplicate_keys_rejected_with_both_positions);
    tcase_add_test(tc, config_diff_names_changed_keys);
    tcase_add_test(tc, env_then_flags_override_file);
    tcase_add_test(tc, cli_options_and_validation);
    tcase_add_test(tc, example_file_matches_defaults);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
