/* bench_history — the cost of recording one run in the execution history.
 *
 * Submits RUNS records of a realistic run (the switch example of bench/gateway: arguments
 * {"value":42}, four nodes entry → switch → transform → exit, result {"result":"high"}) to
 * the real batching writer (gg_history_submit) into a fresh database in a temporary
 * directory, paced at RATE runs a second from one thread, and prints:
 *   - submit: CPU µs a run on the submitting thread, from the executor's history array to a
 *     queued record — once the way the gateway did it before (one gg_exec_record_add_node
 *     a node) and once through the fast path (gg_exec_record_set_node_history);
 *   - writer: the writer thread's CPU µs a run (gg_history_stats.writer_cpu_ns / written);
 *   - reference: in the same invocation, a bare prepared-INSERT loop writing the same runs
 *     in the layout of migrations 0001+0002 (one executions row plus one node_executions
 *     row a node, the layout before 0003) in transactions of the writer's average batch,
 *     and the writer's figure as a ratio of it (machine speed cancels out);
 *   - group commit (history.durability: durable): WAITERS threads in a closed loop, each
 *     submitting a run with gg_history_submit_then and waiting for its commit before the
 *     next, as the gateway's connections do: runs/s, submit-to-commit latency p50/p99,
 *     average batch and writer µs a run.
 *
 *   - saturation: RUNS submitted as fast as possible over four tenants with the per-tenant
 *     history quota enforced meanwhile (the quota keeper deleting): the writer's records/s
 *     on one core (1e6 / its CPU µs a record, the quota keeper's CPU added) and the wall
 *     records/s (GG_BENCH_SAT_NO_QUOTA set: a quota never reached, for comparison).
 *
 * usage: bench_history MIGRATIONS_DIR [RUNS] [RATE] [saturation]   (defaults 100000, 20000;
 *        "saturation": that part alone)
 *
 * With GG_BENCH_PG set (run inside pg_virtualenv: bench/history/run.sh --postgres), the
 * writer and group-commit figures are measured on PostgreSQL instead, each in a database of
 * its own created with createdb (the SQLite-only reference and floor loops are left out).
 */
#include <pthread.h>
#include <dirent.h>
#include <sched.h>
#include <semaphore.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"

static double thread_cpu_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The history array the graph executor hands the gateway for one switch run (inputs are
 * recorded: the gateway's provider asks for them), member order as the executor builds it. */
static json_t *switch_history(long long t) {
    json_t *args = json_pack("{s:i}", "value", 42);
    json_t *ctx1 = json_pack("{s:O}", "entry", args);
    json_t *ctx2 = json_pack("{s:O,s:s}", "entry", args, "switch_node", "high_path");
    json_t *h = json_pack("[{s:i,s:s,s:s,s:I,s:I,s:f,s:O},"
                          " {s:i,s:s,s:s,s:I,s:I,s:f,s:O,s:s},"
                          " {s:i,s:s,s:s,s:I,s:I,s:f,s:O,s:{s:s}},"
                          " {s:i,s:s,s:s,s:I,s:I,s:f,s:{s:s}}]",
                          "executionIndex", 0, "nodeId", "entry", "nodeType", "entry", "startTime", (json_int_t)t,
                          "endTime", (json_int_t)t, "duration", 0.001, "output", args,
                          "executionIndex", 1, "nodeId", "switch_node", "nodeType", "switch", "startTime",
                          (json_int_t)t, "endTime", (json_int_t)t, "duration", 0.002, "input", ctx1, "output",
                          "high_path",
                          "executionIndex", 2, "nodeId", "high_path", "nodeType", "transform", "startTime",
                          (json_int_t)t, "endTime", (json_int_t)t, "duration", 0.003, "input", ctx2, "output",
                          "result", "high",
                          "executionIndex", 3, "nodeId", "exit", "nodeType", "exit", "startTime", (json_int_t)t,
                          "endTime", (json_int_t)t + 1, "duration", 0.001, "output", "result", "high");
    json_decref(ctx2);
    json_decref(ctx1);
    json_decref(args);
    return h;
}

/* The history as executor-shaped objects without the inputs of nodes that succeeded: the
 * text the gateway's graph provider writes while a run goes. */
static char *history_text(json_t *hist) {
    json_t *copy = json_deep_copy(hist);
    size_t i;
    json_t *n;
    json_array_foreach(copy, i, n) if (!json_object_get(n, "error")) json_object_del(n, "input");
    char *t = json_dumps(copy, JSON_COMPACT);
    json_decref(copy);
    return t;
}

/* The same in the stored positional form with absolute times (what that provider could
 * write instead). */
static char *history_positional(json_t *hist) {
    json_t *pos = json_array();
    size_t i;
    json_t *n;
    json_array_foreach(hist, i, n) {
        json_t *row = json_pack("[O,O,O,O,O,O,O]", json_object_get(n, "executionIndex"), json_object_get(n, "nodeId"),
                                json_object_get(n, "nodeType"), json_object_get(n, "startTime"),
                                json_object_get(n, "endTime"), json_object_get(n, "duration"),
                                json_object_get(n, "output") ? json_object_get(n, "output") : json_null());
        json_array_append_new(pos, row);
    }
    char *t = json_dumps(pos, JSON_COMPACT);
    json_decref(pos);
    return t;
}

typedef enum { PATH_NODES, PATH_FAST, PATH_TEXT, PATH_POSITIONAL } submit_path;

/* The record as the gateway builds it when a run ends, and its submission. */
static bool submit_one(gg_history *h, json_t *args, json_t *result, json_t *hist, char *text, submit_path path) {
    /* the structs path is the way before everything else too: an id by system call */
    gg_exec_record *r = path == PATH_NODES
                            ? gg_exec_record_new("bench", "switch", 1, "test_switch", "2aa75f896173af27", args)
                            : gg_history_record_new(h, "bench", "switch", 1, "test_switch", "2aa75f896173af27", args);
    if (!r) return false;
    r->status = GG_EXEC_SUCCEEDED;
    r->finished_ms = r->started_ms;
    r->duration_ms = 0.0034;
    r->result = json_incref(result);
    if (path == PATH_NODES) {
        size_t i;
        json_t *n;
        json_array_foreach(hist, i, n) {
            json_t *err = json_object_get(n, "error");
            gg_node_exec_record *nr = gg_exec_record_add_node(
                r, json_string_value(json_object_get(n, "nodeId")), json_string_value(json_object_get(n, "nodeType")),
                json_integer_value(json_object_get(n, "startTime")), json_integer_value(json_object_get(n, "endTime")),
                err ? json_incref(json_object_get(n, "input")) : NULL, json_incref(json_object_get(n, "output")),
                err ? "error" : NULL);
            if (nr) nr->duration_ms = json_number_value(json_object_get(n, "duration"));
        }
    } else if (path == PATH_FAST) {
        gg_exec_record_set_node_history(r, json_incref(hist), false);
    } else {
        gg_exec_record_set_nodes_json(r, text);
    }
    return gg_history_submit(h, r);
}

typedef struct figures {
    double submit_us, writer_us, avg_batch;
    unsigned long long written, dropped;
} figures;

static int make_tmpdir(char *dir, size_t size) {
    snprintf(dir, size, "%s/gg-bench-history.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static bool pg_mode(void) { return getenv("GG_BENCH_PG") && *getenv("GG_BENCH_PG"); }

static gg_store *open_db(const char *dir, const char *name, const char *migrations) {
    char path[4200], url[160] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (pg_mode()) { /* writer-fast.db → database bench_writer_fast */
        char db[64], cmd[200];
        snprintf(db, sizeof db, "bench_%.*s", (int)(strcspn(name, ".") < 40 ? strcspn(name, ".") : 40), name);
        for (char *p = db; *p; p++) if (*p == '-') *p = '_';
        snprintf(cmd, sizeof cmd, "dropdb --if-exists %s && createdb %s", db, db);
        if (system(cmd) != 0) { fprintf(stderr, "bench_history: %s failed\n", cmd); return NULL; }
        snprintf(url, sizeof url, "postgresql:///%s", db);
    }
    gg_error err = GG_ERROR_INIT;
    gg_store_options o = {.path = path, .url = url[0] ? url : NULL};
    gg_store *s = gg_store_open(&o, &err);
    if (!s || !gg_store_migrate(s, migrations, NULL, &err) || !gg_store_tenant_create(s, "bench", &err)) {
        fprintf(stderr, "bench_history: %s: %s\n", path, err.message);
        gg_error_clear(&err);
        gg_store_close(s);
        return NULL;
    }
    return s;
}

/* Submit runs paced at rate through the real writer; fills f. */
static bool run_writer(const char *dir, const char *name, const char *migrations, long runs, double rate,
                       submit_path path, figures *f) {
    gg_store *s = open_db(dir, name, migrations);
    if (!s) return false;
    gg_error err = GG_ERROR_INIT;
    gg_history *h = gg_history_start(s, NULL, &err);
    if (!h) {
        fprintf(stderr, "bench_history: %s\n", err.message);
        gg_error_clear(&err);
        gg_store_close(s);
        return false;
    }
    json_t *args = json_pack("{s:i}", "value", 42), *result = json_pack("{s:s}", "result", "high");
    memset(f, 0, sizeof *f);
    enum { CHUNK = 50 };
    json_t *hist[CHUNK];
    char *text[CHUNK];
    double t0 = mono_ms();
    for (long i = 0; i < runs; i += CHUNK) {
        int k = runs - i < CHUNK ? (int)(runs - i) : CHUNK;
        for (int j = 0; j < k; j++) { /* the executor's part (and the provider's text) */
            hist[j] = switch_history(gg_wall_ms());
            text[j] = path == PATH_TEXT ? history_text(hist[j]) : path == PATH_POSITIONAL ? history_positional(hist[j]) : NULL;
        }
        double c0 = thread_cpu_us(); /* a chunk at a time: the clock itself is a system call */
        for (int j = 0; j < k; j++) submit_one(h, args, result, hist[j], text[j], path);
        f->submit_us += thread_cpu_us() - c0;
        for (int j = 0; j < k; j++) json_decref(hist[j]);
        double ahead = t0 + (double)(i + k) * 1000.0 / rate - mono_ms(); /* pace: never ahead of rate */
        if (ahead > 0) usleep((useconds_t)(ahead * 1000));
    }
    gg_history_flush(h);
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    f->written = st.written;
    f->dropped = st.dropped;
    f->submit_us /= (double)runs;
    f->writer_us = (double)st.writer_cpu_ns / 1e3 / (double)(st.written ? st.written : 1);
    f->avg_batch = (double)st.written / (double)(st.batches ? st.batches : 1);
    json_decref(args);
    json_decref(result);
    gg_history_stop(h);
    gg_store_close(s);
    return true;
}

static bool copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    bool ok = a && b;
    while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0) ok = fwrite(buf, 1, n, b) == n;
    if (a) fclose(a);
    if (b && fclose(b) != 0) ok = false;
    return ok;
}

#define CHECK(x) do { if ((x) != SQLITE_OK) { fprintf(stderr, "bench_history: %s\n", sqlite3_errmsg(db)); goto out; } } while (0)

/* The yardstick: the same runs as plain INSERTs into the 0001+0002 layout (executions row
 * + four node_executions rows in one multi-row INSERT), texts serialized beforehand, batch
 * rows a transaction. Returns CPU µs a run, or -1. */
static double run_reference(const char *dir, const char *srcmig, long runs, long batch) {
    char mig[4200], from[4200], to[4300];
    snprintf(mig, sizeof mig, "%s/migrations-0002", dir);
    if (mkdir(mig, 0700) != 0) return -1;
    const char *files[] = {"0001_initial.sql", "0002_history_write_path.sql"};
    for (int i = 0; i < 2; i++) {
        snprintf(from, sizeof from, "%s/%s", srcmig, files[i]);
        snprintf(to, sizeof to, "%s/%s", mig, files[i]);
        if (!copy_file(from, to)) return -1;
    }
    gg_store *s = open_db(dir, "reference.db", mig);
    if (!s) return -1;
    gg_store_close(s);
    char path[4200];
    snprintf(path, sizeof path, "%s/reference.db", dir);
    sqlite3 *db = NULL;
    sqlite3_stmt *ex = NULL, *nd = NULL;
    double us = -1;
    if (sqlite3_open(path, &db) != SQLITE_OK) goto out;
    CHECK(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", NULL, NULL, NULL));
    CHECK(sqlite3_prepare_v2(db,
                             "INSERT INTO executions(id, tenant, graph, version, tool, key_id, status, started_at,"
                             " finished_at, duration_ms, arguments, result, error)"
                             " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,NULL)", -1, &ex, NULL));
    CHECK(sqlite3_prepare_v2(db,
                             "INSERT INTO node_executions(execution_id, execution_index, node_id, node_type,"
                             " started_at, finished_at, duration_ms, input, output, error) VALUES"
                             " (?1,0,'entry','entry',?2,?2,0.001,NULL,'{\"value\":42}',NULL),"
                             " (?1,1,'switch_node','switch',?2,?2,0.002,NULL,'\"high_path\"',NULL),"
                             " (?1,2,'high_path','transform',?2,?2,0.003,NULL,'{\"result\":\"high\"}',NULL),"
                             " (?1,3,'exit','exit',?2,?2,0.001,NULL,'{\"result\":\"high\"}',NULL)", -1, &nd, NULL));
    double c0 = thread_cpu_us();
    for (long i = 0; i < runs; i++) {
        if (i % batch == 0) CHECK(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL));
        char id[33];
        gg_exec_id_new(id);
        long long t = gg_wall_ms();
        sqlite3_bind_text(ex, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(ex, 2, "bench", -1, SQLITE_STATIC);
        sqlite3_bind_text(ex, 3, "switch", -1, SQLITE_STATIC);
        sqlite3_bind_int(ex, 4, 1);
        sqlite3_bind_text(ex, 5, "test_switch", -1, SQLITE_STATIC);
        sqlite3_bind_text(ex, 6, "2aa75f896173af27", -1, SQLITE_STATIC);
        sqlite3_bind_text(ex, 7, "succeeded", -1, SQLITE_STATIC);
        sqlite3_bind_int64(ex, 8, t);
        sqlite3_bind_int64(ex, 9, t);
        sqlite3_bind_double(ex, 10, 0.0034);
        sqlite3_bind_text(ex, 11, "{\"value\":42}", -1, SQLITE_STATIC);
        sqlite3_bind_text(ex, 12, "{\"result\":\"high\"}", -1, SQLITE_STATIC);
        if (sqlite3_step(ex) != SQLITE_DONE) { CHECK(SQLITE_ERROR); }
        sqlite3_reset(ex);
        sqlite3_bind_text(nd, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(nd, 2, t);
        if (sqlite3_step(nd) != SQLITE_DONE) { CHECK(SQLITE_ERROR); }
        sqlite3_reset(nd);
        if (i % batch == batch - 1 || i == runs - 1) CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL));
    }
    us = (thread_cpu_us() - c0) / (double)runs;
out:
    sqlite3_finalize(ex);
    sqlite3_finalize(nd);
    sqlite3_close(db);
    return us;
}

/* The floor of the current layout: one plain single-row INSERT a run of exactly what the
 * writer stores for it (texts as gg_history_submit serializes them), batch runs a
 * transaction, on a fresh database of every migration. What the writer spends above it
 * is its own overhead (queue, statements, checks). Returns CPU µs a run, or -1. */
static double run_floor(const char *dir, const char *mig, long runs, long batch) {
    gg_store *s = open_db(dir, "floor.db", mig);
    if (!s) return -1;
    gg_store_close(s);
    char path[4200];
    snprintf(path, sizeof path, "%s/floor.db", dir);
    sqlite3 *db = NULL;
    sqlite3_stmt *ex = NULL;
    double us = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) goto out;
    CHECK(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", NULL, NULL, NULL));
    CHECK(sqlite3_prepare_v2(db,
                             "INSERT INTO executions(id, tenant, graph, version, tool, key_id, status, started_at,"
                             " finished_at, duration_ms, arguments, result, error, nodes)"
                             " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,NULL,?13)", -1, &ex, NULL));
    static const char nodes[] =
        "[[0,\"entry\",\"entry\",0,0,0.001,{\"value\":42}],[1,\"switch_node\",\"switch\",0,0,0.002,"
        "\"high_path\"],[2,\"high_path\",\"transform\",0,0,0.003,{\"result\":\"high\"}],"
        "[3,\"exit\",\"exit\",0,1,0.001,{\"result\":\"high\"}]]";
    double c0 = thread_cpu_us();
    for (long i = 0; i < runs; i++) {
        if (i % batch == 0) CHECK(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL));
        char id[33];
        gg_exec_id_new(id);
        long long t = gg_wall_ms();
        sqlite3_bind_text(ex, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(ex, 2, "bench", -1, SQLITE_STATIC);
        sqlite3_bind_text(ex, 3, "switch", -1, SQLITE_STATIC);
        sqlite3_bind_int(ex, 4, 1);
        sqlite3_bind_text(ex, 5, "test_switch", -1, SQLITE_STATIC);
        sqlite3_bind_text(ex, 6, "2aa75f896173af27", -1, SQLITE_STATIC);
        sqlite3_bind_text(ex, 7, "succeeded", -1, SQLITE_STATIC);
        sqlite3_bind_int64(ex, 8, t);
        sqlite3_bind_int64(ex, 9, t);
        sqlite3_bind_double(ex, 10, 0.0034);
        sqlite3_bind_text(ex, 11, "{\"value\":42}", -1, SQLITE_STATIC);
        sqlite3_bind_text(ex, 12, "{\"result\":\"high\"}", -1, SQLITE_STATIC);
        sqlite3_bind_text(ex, 13, nodes, -1, SQLITE_STATIC);
        if (sqlite3_step(ex) != SQLITE_DONE) { CHECK(SQLITE_ERROR); }
        sqlite3_reset(ex);
        if (i % batch == batch - 1 || i == runs - 1) CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL));
    }
    us = (thread_cpu_us() - c0) / (double)runs;
out:
    sqlite3_finalize(ex);
    sqlite3_close(db);
    return us;
}

static void rm_tree(const char *dir) {
    char cmd[4300];
    /* only our own mkdtemp directory; no shell: remove known names */
    const char *names[] = {"writer-nodes.db", "writer-fast.db", "writer-text.db", "writer-pos.db", "reference.db",
                           "floor.db", "group-commit-1.db", "group-commit-64.db", "saturation.db"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        for (int k = 0; k < 3; k++) {
            snprintf(cmd, sizeof cmd, "%s/%s%s", dir, names[i], k == 0 ? "" : k == 1 ? "-wal" : "-shm");
            unlink(cmd);
        }
    const char *files[] = {"0001_initial.sql", "0002_history_write_path.sql"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s/migrations-0002/%s", dir, files[i]);
        unlink(cmd);
    }
    snprintf(cmd, sizeof cmd, "%s/migrations-0002", dir);
    rmdir(cmd);
    rmdir(dir);
}

/* ---- group commit: closed-loop waiters ------------------------------------------------ */

typedef struct waiter {
    gg_history *h;
    sem_t done;
    bool ok;
    double stop_ms;
    long n;
    double *lat;         /* ms, up to cap */
    long cap;
} waiter;

static void on_commit(void *user, bool ok) {
    waiter *w = user;
    w->ok = ok;
    sem_post(&w->done);
}

static void *waiter_main(void *arg) {
    waiter *w = arg;
    json_t *args = json_pack("{s:i}", "value", 42), *result = json_pack("{s:s}", "result", "high");
    while (mono_ms() < w->stop_ms && w->n < w->cap) {
        json_t *hist = switch_history(gg_wall_ms());
        gg_exec_record *r = gg_history_record_new(w->h, "bench", "switch", 1, "test_switch", "2aa75f896173af27", args);
        r->status = GG_EXEC_SUCCEEDED;
        r->finished_ms = r->started_ms;
        r->result = json_incref(result);
        gg_exec_record_set_nodes_json(r, history_positional(hist));
        json_decref(hist);
        double t = mono_ms();
        gg_history_submit_then(w->h, r, on_commit, w);
        while (sem_wait(&w->done) != 0) {}
        w->lat[w->n++] = mono_ms() - t;
        if (!w->ok) break;
    }
    json_decref(args);
    json_decref(result);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct gc_figures {
    double rps, p50, p99, avg_batch, writer_us;
    unsigned long long written;
} gc_figures;

static bool run_group_commit(const char *dir, const char *mig, int nwait, double secs, gc_figures *g) {
    char name[64];
    snprintf(name, sizeof name, "group-commit-%d.db", nwait);
    gg_store *s = open_db(dir, name, mig);
    if (!s) return false;
    gg_error err = GG_ERROR_INIT;
    gg_history *h = gg_history_start(s, NULL, &err);
    if (!h) {
        gg_store_close(s);
        return false;
    }
    waiter *w = calloc((size_t)nwait, sizeof *w);
    pthread_t *th = calloc((size_t)nwait, sizeof *th);
    long cap = 400000;
    double t0 = mono_ms();
    for (int i = 0; i < nwait; i++) {
        w[i].h = h;
        sem_init(&w[i].done, 0, 0);
        w[i].stop_ms = t0 + secs * 1000;
        w[i].cap = cap;
        w[i].lat = malloc((size_t)cap * sizeof *w[i].lat);
        pthread_create(&th[i], NULL, waiter_main, &w[i]);
    }
    long total = 0;
    for (int i = 0; i < nwait; i++) {
        pthread_join(th[i], NULL);
        total += w[i].n;
    }
    double elapsed = mono_ms() - t0;
    double *all = malloc((size_t)(total ? total : 1) * sizeof *all);
    long k = 0;
    for (int i = 0; i < nwait; i++) {
        memcpy(all + k, w[i].lat, (size_t)w[i].n * sizeof *all);
        k += w[i].n;
        free(w[i].lat);
        sem_destroy(&w[i].done);
    }
    qsort(all, (size_t)total, sizeof *all, cmp_double);
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    g->rps = (double)total * 1000.0 / elapsed;
    g->p50 = total ? all[total / 2] : 0;
    g->p99 = total ? all[(long)((double)total * 0.99)] : 0;
    g->written = st.written;
    g->avg_batch = (double)st.written / (double)(st.batches ? st.batches : 1);
    g->writer_us = (double)st.writer_cpu_ns / 1e3 / (double)(st.written ? st.written : 1);
    free(all);
    free(w);
    free(th);
    gg_history_stop(h);
    gg_store_close(s);
    return total > 0;
}

/* ---- saturation: the writer never waits for work, the quota keeper deleting -------------- */

/* CPU µs used so far by this process's threads named name (/proc/self/task/N/comm): the
 * quota keeper keeps no CPU figure of its own. Clock ticks, so runs of seconds. */
static double named_threads_cpu_us(const char *name) {
    DIR *d = opendir("/proc/self/task");
    double us = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[300], comm[64] = "", stat[1024];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *fp = fopen(path, "r");
        if (!fp) continue;
        bool match = fgets(comm, sizeof comm, fp) && strncmp(comm, name, strlen(name)) == 0 && comm[strlen(name)] == '\n';
        fclose(fp);
        if (!match) continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        if (!(fp = fopen(path, "r"))) continue;
        size_t n = fread(stat, 1, sizeof stat - 1, fp);
        fclose(fp);
        stat[n] = 0;
        const char *p = strrchr(stat, ')'); /* fields after the command name: state is 3rd */
        unsigned long long ut = 0, st = 0;
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
            us += (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
    }
    if (d) closedir(d);
    return us;
}

typedef struct sat_figures {
    double wall_rps, writer_us, quota_us, submit_us, avg_batch, secs;
    unsigned long long written, dropped, quota_dropped, passes;
} sat_figures;

#define SAT_TENANTS 4

/* Runs submitted as fast as one thread can (the texts made beforehand, as the gateway's
 * provider does while a run goes; a full queue is waited out, not dropped), spread over
 * SAT_TENANTS tenants whose per-tenant quota (runs / 8 rows) the quota keeper enforces
 * every 100 ms from its own thread and connection, as `serve` runs it. The writer's
 * records/s on one core is 1e6 / its CPU µs a record; the wall figure is bounded by the
 * submitting thread too on a machine with few cores. */
static bool run_saturation(const char *dir, const char *mig, long runs, sat_figures *f) {
    gg_store *s = open_db(dir, "saturation.db", mig);
    if (!s) return false;
    gg_error err = GG_ERROR_INIT;
    const char *tenants[SAT_TENANTS] = {"bench", "bench-b", "bench-c", "bench-d"};
    for (int i = 1; i < SAT_TENANTS; i++)
        if (!gg_store_tenant_create(s, tenants[i], &err)) {
            fprintf(stderr, "bench_history: %s\n", err.message);
            gg_error_clear(&err);
            gg_store_close(s);
            return false;
        }
    gg_history *h = gg_history_start(s, NULL, &err);
    /* GG_BENCH_SAT_NO_QUOTA: a quota never reached (the keeper's passes, no deletes) */
    long long quota = getenv("GG_BENCH_SAT_NO_QUOTA") ? runs * 10LL : runs / 8 > 0 ? runs / 8 : 1;
    gg_history_quota_options qo = {.max_rows = quota, .interval_ms = 100};
    gg_history_quota *q = h ? gg_history_quota_start(s, &qo, &err) : NULL;
    if (!q) {
        fprintf(stderr, "bench_history: %s\n", err.message);
        gg_error_clear(&err);
        gg_history_stop(h);
        gg_store_close(s);
        return false;
    }
    json_t *args = json_pack("{s:i}", "value", 42), *result = json_pack("{s:s}", "result", "high");
    json_t *hist = switch_history(gg_wall_ms());
    char *text = history_positional(hist);
    json_decref(hist);
    memset(f, 0, sizeof *f);
    gg_history_stats st0;
    gg_history_get_stats(h, &st0);
    double t0 = mono_ms(), c0 = thread_cpu_us(), waited = 0;
    for (long i = 0; i < runs; i++) {
        while (!gg_history_has_room(h)) { /* back-pressure, as the gateway applies it */
            double w0 = thread_cpu_us();
            sched_yield();
            waited += thread_cpu_us() - w0;
        }
        gg_exec_record *r = gg_history_record_new(h, tenants[i % SAT_TENANTS], "switch", 1, "test_switch",
                                                  "2aa75f896173af27", args);
        if (!r) break;
        r->status = GG_EXEC_SUCCEEDED;
        r->finished_ms = r->started_ms;
        r->duration_ms = 0.0034;
        r->result = json_incref(result);
        gg_exec_record_set_nodes_json(r, strdup(text));
        gg_history_submit(h, r);
    }
    f->submit_us = (thread_cpu_us() - c0 - waited) / (double)runs;
    gg_history_flush(h);
    f->secs = (mono_ms() - t0) / 1000.0;
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    gg_history_quota_now(q); /* one more pass, so the last runs are pruned too */
    gg_history_quota_stats qs;
    gg_history_quota_get_stats(q, &qs);
    f->quota_us = named_threads_cpu_us("gg-quota");
    f->written = st.written - st0.written;
    f->dropped = st.dropped;
    f->quota_dropped = qs.dropped;
    f->passes = qs.passes;
    f->wall_rps = (double)f->written / f->secs;
    f->writer_us = (double)(st.writer_cpu_ns - st0.writer_cpu_ns) / 1e3 / (double)(f->written ? f->written : 1);
    f->quota_us /= (double)(f->written ? f->written : 1);
    f->avg_batch = (double)(st.written - st0.written) / (double)(st.batches - st0.batches ? st.batches - st0.batches : 1);
    free(text);
    json_decref(args);
    json_decref(result);
    gg_history_quota_stop(q);
    gg_history_stop(h);
    gg_store_close(s);
    return f->written > 0;
}

static void print_saturation(long runs, const sat_figures *f) {
    printf("saturation (not paced), %ld runs over %d tenants, quota %lld rows each (keeper every 100 ms):\n", runs,
           SAT_TENANTS, getenv("GG_BENCH_SAT_NO_QUOTA") ? runs * 10LL : runs / 8 > 0 ? runs / 8 : 1);
    printf("%-34s %8.0f records/s on one core (writer %5.2f + quota keeper %5.2f us/record)   wall %8.0f records/s\n"
           "%-34s submit %5.2f us/run   batch %6.0f   written %llu dropped %llu   quota dropped %llu in %llu passes\n",
           "  writer + quota deletes", 1e6 / (f->writer_us + f->quota_us), f->writer_us, f->quota_us, f->wall_rps, "",
           f->submit_us, f->avg_batch, f->written, f->dropped, f->quota_dropped, f->passes);
}

static void print(const char *what, const figures *f, double ref) {
    printf("%-34s submit %6.2f us/run   writer %6.2f us/run (%.2fx reference)   batch %6.0f   written %llu dropped %llu\n",
           what, f->submit_us, f->writer_us, f->writer_us / ref, f->avg_batch, f->written, f->dropped);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_history MIGRATIONS_DIR [RUNS] [RATE]\n");
        return 2;
    }
    const char *mig = argv[1];
    long runs = argc > 2 ? atol(argv[2]) : 100000;
    double rate = argc > 3 ? atof(argv[3]) : 20000;
    if (runs < 1 || rate <= 0) return 2;
    char dir[4096];
    if (make_tmpdir(dir, sizeof dir) != 0) { perror("mkdtemp"); return 1; }
    figures nodes, fast, text, pos;
    sat_figures sat;
    if (argc > 4 && strcmp(argv[4], "saturation") == 0) {
        bool sok = run_saturation(dir, mig, runs, &sat);
        rm_tree(dir);
        if (!sok) return 1;
        print_saturation(runs, &sat);
        return sat.dropped ? 1 : 0;
    }
    if (pg_mode()) {
        gc_figures gc1, gc64;
        bool pok = run_writer(dir, "writer-fast.db", mig, runs, rate, PATH_FAST, &fast) &&
                   run_group_commit(dir, mig, 1, 2.0, &gc1) && run_group_commit(dir, mig, 64, 3.0, &gc64);
        rm_tree(dir);
        if (!pok) return 1;
        printf("PostgreSQL: %ld runs at %.0f runs/s (4-node switch run, every run recorded)\n", runs, rate);
        print("writer, fast path (history array)", &fast, fast.writer_us);
        const gc_figures *g[2] = {&gc1, &gc64};
        const char *names[2] = {"   1 waiter", "  64 waiters"};
        for (int i = 0; i < 2; i++)
            printf("%-34s %8.0f runs/s   commit latency p50 %6.2f ms  p99 %6.2f ms   batch %6.1f   writer %6.2f us/run\n",
                   names[i], g[i]->rps, g[i]->p50, g[i]->p99, g[i]->avg_batch, g[i]->writer_us);
        return fast.dropped ? 1 : 0;
    }
    bool ok = run_writer(dir, "writer-nodes.db", mig, runs, rate, PATH_NODES, &nodes) &&
              run_writer(dir, "writer-fast.db", mig, runs, rate, PATH_FAST, &fast) &&
              run_writer(dir, "writer-text.db", mig, runs, rate, PATH_TEXT, &text) &&
              run_writer(dir, "writer-pos.db", mig, runs, rate, PATH_POSITIONAL, &pos);
    double ref = ok ? run_reference(dir, mig, runs, (long)(nodes.avg_batch + 0.5)) : -1;
    double floor_us = ok ? run_floor(dir, mig, runs, (long)(fast.avg_batch + 0.5)) : -1;
    gc_figures gc1, gc64;
    bool gc_ok = ok && run_group_commit(dir, mig, 1, 2.0, &gc1) && run_group_commit(dir, mig, 64, 3.0, &gc64);
    bool sat_ok = ok && run_saturation(dir, mig, runs, &sat);
    rm_tree(dir);
    if (!ok || ref <= 0) return 1;
    printf("%ld runs at %.0f runs/s (4-node switch run, every run recorded)\n", runs, rate);
    printf("%-34s                      %6.2f us/run\n", "reference: bare INSERTs, 0002 layout", ref);
    printf("%-34s                      %6.2f us/run (%.2fx reference)\n", "floor: bare INSERTs, current layout",
           floor_us, floor_us / ref);
    print("writer, record with node structs", &nodes, ref);
    print("writer, fast path (history array)", &fast, ref);
    print("writer, executor-shaped JSON text", &text, ref);
    print("writer, positional JSON text", &pos, ref);
    if (gc_ok) {
        printf("group commit (durable), closed loop of waiters, commit window 1 ms:\n");
        const gc_figures *g[2] = {&gc1, &gc64};
        const char *names[2] = {"   1 waiter", "  64 waiters"};
        for (int i = 0; i < 2; i++)
            printf("%-34s %8.0f runs/s   commit latency p50 %6.2f ms  p99 %6.2f ms   batch %6.1f   writer %6.2f us/run\n",
                   names[i], g[i]->rps, g[i]->p50, g[i]->p99, g[i]->avg_batch, g[i]->writer_us);
    }
    if (sat_ok) print_saturation(runs, &sat);
    return nodes.dropped || fast.dropped || text.dropped || pos.dropped || !gc_ok || !sat_ok || sat.dropped ? 1 : 0;
}
