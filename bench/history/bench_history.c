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
 *     records/s (GG_BENCH_SAT_NO_QUOTA set: a quota never reached, for comparison). The
 *     records carry the node text the gateway's provider writes for the switch example
 *     (GG_BENCH_SAT_BEFORE set: as it wrote it until 2026-11-29, see gateway_text), each
 *     run's the same; GG_BENCH_SAT_VARIED set: every run's arguments, switch branch, result
 *     and durations its own (random values as real calls carry: what compressed rows hold
 *     less of than identical records, see varied_record).
 *
 *   - layouts (issue 31, alone): the saturation line with and without quota deletes, then
 *     bare loops of a candidate layout where a batch is the unit of storage (one
 *     history_batches row per commit and tenant, see "candidate layout" below) with the same
 *     records, and the readers' costs in both layouts (get by id, newest 50 of a tenant).
 *
 *   - reads: a saturation run, then the store's readers over what it stored (get by id
 *     with a tenant and without, newest 50 of a tenant and of all), CPU µs each.
 *
 * usage: bench_history MIGRATIONS_DIR [RUNS] [RATE] [saturation|reads|layouts|batch]
 *        (defaults 100000, 20000; "saturation", "layouts": that part alone; "reads": the
 *        saturation part and the readers; "batch": the candidate layout's write loops alone;
 *        GG_BENCH_KEEP set: the temporary directory and its databases are kept, and named)
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
#include <sys/resource.h>
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

/* The switch example's node text as the gateway's provider writes it (src/graph/provider.c
 * put_record: inputs kept, durations in ms to the µs): since 2026-11-30 node times as ms
 * after the run's start and the context inputs as "$context"; `before`: as it wrote them
 * until then (unix ms, the context copied into each input). */
static char *gateway_text(bool before) {
    char *s = NULL;
    long long t = before ? gg_wall_ms() : 0;
    const char *c1 = before ? "{\"entry\":{\"value\":42}}" : "\"$context\"";
    const char *c2 = before ? "{\"switch_node\":\"high_path\",\"entry\":{\"value\":42}}" : "\"$context\"";
    int n = asprintf(&s,
                     "[[0,\"entry\",\"entry\",%lld,%lld,0.001,{\"value\":42}],"
                     "[1,\"switch_node\",\"switch\",%lld,%lld,0.005,\"high_path\",%s],"
                     "[2,\"high_path\",\"transform\",%lld,%lld,0.008,{\"result\":\"high\"},%s],"
                     "[3,\"exit\",\"exit\",%lld,%lld,0,{\"result\":\"high\"}]]",
                     t, t, t, t, c1, t, t, c2, t, t + 1);
    return n < 0 ? NULL : s;
}

/* Run i of a varied saturation: arguments {"value": a random integer, "user": 16 random hex
 * digits}, the branch and result following the value, {"result": "high"|"low", "score": a
 * random integer}, random sub-ms durations; *args and *result new references, *nodes the
 * node text as gateway_text writes it (ms after the start, "$context" inputs), malloc'd. */
static void varied_record(unsigned long long *rng, json_t **args, json_t **result, char **nodes) {
    unsigned long long x = *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
    long long value = (long long)(x >> 33) % 1000000;
    char user[17];
    snprintf(user, sizeof user, "%016llx", (x ^ (x >> 29)) * 0xBF58476D1CE4E5B9ULL);
    bool high = value >= 500000;
    long long score = (long long)((x >> 11) % 100000);
    *args = json_pack("{s:I,s:s}", "value", (json_int_t)value, "user", user);
    *result = json_pack("{s:s,s:I}", "result", high ? "high" : "low", "score", (json_int_t)score);
    const char *branch = high ? "high_path" : "low_path";
    int d1 = (int)(x % 9) + 1, d2 = (int)((x >> 8) % 9) + 1, d3 = (int)((x >> 16) % 900) + 100;
    if (asprintf(nodes,
                 "[[0,\"entry\",\"entry\",0,0,0.00%d,{\"value\":%lld,\"user\":\"%s\"}],"
                 "[1,\"switch_node\",\"switch\",0,0,0.00%d,\"%s\",\"$context\"],"
                 "[2,\"%s\",\"transform\",0,0,0.%03d,{\"result\":\"%s\",\"score\":%lld},\"$context\"],"
                 "[3,\"exit\",\"exit\",0,1,0,{\"result\":\"%s\",\"score\":%lld}]]",
                 d1, value, user, d2, branch, branch, d3, high ? "high" : "low", score, high ? "high" : "low",
                 score) < 0)
        *nodes = NULL;
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
    /* since 0019 executions is a view over history_batches: the one-row-a-run table of 0013
     * (its floor, for comparison; the batch layout's floor is the "batch" mode's loops) */
    CHECK(sqlite3_exec(db,
                       "DROP VIEW IF EXISTS executions; CREATE TABLE IF NOT EXISTS executions (id TEXT PRIMARY KEY,"
                       " tenant TEXT NOT NULL, graph TEXT NOT NULL, version INTEGER NOT NULL, tool TEXT NOT NULL,"
                       " key_id TEXT, status TEXT NOT NULL, started_at INTEGER NOT NULL, finished_at INTEGER,"
                       " duration_ms REAL, arguments TEXT, result TEXT, error TEXT, nodes TEXT, trace_id TEXT,"
                       " parent_id TEXT); CREATE INDEX IF NOT EXISTS executions_tenant_started ON"
                       " executions(tenant, started_at)",
                       NULL, NULL, NULL));
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
    if (getenv("GG_BENCH_KEEP")) { /* the databases kept for a look (sqlite3, perf of one reader) */
        fprintf(stderr, "bench_history: kept %s\n", dir);
        return;
    }
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

/* The per-tenant quota of the saturation runs: runs / 8, or one never reached. */
static long long sat_quota(long runs, bool no_quota) { return no_quota ? runs * 10LL : runs / 8 > 0 ? runs / 8 : 1; }

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
static bool run_saturation(const char *dir, const char *name, const char *mig, long runs, bool no_quota,
                           sat_figures *f) {
    gg_store *s = open_db(dir, name, mig);
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
    /* no_quota: a quota never reached (the keeper's passes, no deletes) */
    long long quota = sat_quota(runs, no_quota);
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
    char *text = gateway_text(getenv("GG_BENCH_SAT_BEFORE") != NULL);
    bool varied = getenv("GG_BENCH_SAT_VARIED") != NULL;
    unsigned long long rng = 0x9E3779B97F4A7C15ULL;
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
        json_t *a = args, *res = result;
        char *nodes = NULL;
        if (varied) varied_record(&rng, &a, &res, &nodes);
        gg_exec_record *r = gg_history_record_new(h, tenants[i % SAT_TENANTS], "switch", 1, "test_switch",
                                                  "2aa75f896173af27", a);
        if (!r) break;
        r->status = GG_EXEC_SUCCEEDED;
        r->finished_ms = r->started_ms;
        r->duration_ms = varied ? 0.001 * (double)(rng % 5000) : 0.0034;
        r->result = json_incref(res);
        gg_exec_record_set_nodes_json(r, varied ? nodes : strdup(text));
        if (varied) {
            json_decref(a);
            json_decref(res);
        }
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

static void print_saturation(long runs, bool no_quota, const sat_figures *f) {
    printf("saturation (not paced), %ld runs over %d tenants, quota %lld rows each (keeper every 100 ms):\n", runs,
           SAT_TENANTS, sat_quota(runs, no_quota));
    printf("%-34s %8.0f records/s on one core (writer %5.2f + quota keeper %5.2f us/record)   wall %8.0f records/s\n"
           "%-34s submit %5.2f us/run   batch %6.0f   written %llu dropped %llu   quota dropped %llu in %llu passes\n",
           no_quota ? "  writer, quota never reached" : "  writer + quota deletes", 1e6 / (f->writer_us + f->quota_us),
           f->writer_us, f->quota_us, f->wall_rps, "", f->submit_us, f->avg_batch, f->written, f->dropped, f->quota_dropped, f->passes);
}

/* ---- reads: the store's readers over what the real writer stored --------------------------
 *
 * After a saturation run (quota on unless GG_BENCH_SAT_NO_QUOTA), the database is opened
 * again through the store and read as the admin API and the console read it, CPU µs each:
 * gg_store_execution_get of ids of tenant "bench" picked at random, with the tenant and
 * without (an admin's get: every tenant's rows in the id's window), and
 * gg_store_executions_list's newest READS_LIMIT of "bench" and of all tenants. The ids come
 * from paging through "bench"'s listing once. Fails when a get misses its run. */

#define READS_GETS 1000
#define READS_LIMIT 50

typedef struct reads_figures {
    double get_us, get_admin_us, list_us, list_all_us;
    long ids, found, found_admin;
    long long rows, avg_bytes, max_bytes; /* history_batches rows and their bodies */
} reads_figures;

/* The rows the writer left and their sizes (what a reader copies). */
static void reads_rows_stats(const char *path, reads_figures *r) {
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*), avg(bytes), max(bytes) FROM history_batches", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        r->rows = sqlite3_column_int64(st, 0);
        r->avg_bytes = sqlite3_column_int64(st, 1);
        r->max_bytes = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Up to max ids of tenant's runs, newest first; -1 on error. */
static long reads_ids(gg_store *s, const char *tenant, char (*ids)[33], long max) {
    gg_error err = GG_ERROR_INIT;
    char cur[100] = "";
    long n = 0;
    for (;;) {
        gg_exec_filter f = {.limit = 1000, .cursor = cur[0] ? cur : NULL};
        json_t *page = gg_store_executions_list(s, tenant, &f, &err);
        if (!page) {
            fprintf(stderr, "bench_history: list: %s\n", err.message);
            gg_error_clear(&err);
            return -1;
        }
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(page, "executions"), i, e) if (n < max)
            snprintf(ids[n++], 33, "%s", json_string_value(json_object_get(e, "id")));
        json_t *next = json_object_get(page, "next_cursor");
        bool more = json_is_string(next) && n < max;
        if (more) snprintf(cur, sizeof cur, "%s", json_string_value(next));
        json_decref(page);
        if (!more) return n;
    }
}

/* n gets of ids at random (tenant NULL: an admin's); the number found. */
static long reads_gets(gg_store *s, const char *tenant, char (*ids)[33], long nids, unsigned *seed, double *us) {
    gg_error err = GG_ERROR_INIT;
    long found = 0;
    double c0 = thread_cpu_us();
    for (int i = 0; i < READS_GETS; i++) {
        json_t *e = gg_store_execution_get(s, tenant, ids[rand_r(seed) % nids], &err);
        found += e != NULL;
        json_decref(e);
        gg_error_clear(&err);
    }
    *us = (thread_cpu_us() - c0) / READS_GETS;
    return found;
}

static double reads_lists(gg_store *s, const char *tenant, int times) {
    gg_error err = GG_ERROR_INIT;
    gg_exec_filter f = {.limit = READS_LIMIT};
    double c0 = thread_cpu_us();
    for (int i = 0; i < times; i++) {
        json_decref(gg_store_executions_list(s, tenant, &f, &err));
        gg_error_clear(&err);
    }
    return (thread_cpu_us() - c0) / times;
}

static bool run_reads(const char *dir, const char *name, reads_figures *r) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    gg_error err = GG_ERROR_INIT;
    gg_store_options o = {.path = path, .must_exist = true};
    gg_store *s = gg_store_open(&o, &err);
    long max = 1 << 20;
    char (*ids)[33] = s ? malloc((size_t)max * sizeof *ids) : NULL;
    memset(r, 0, sizeof *r);
    if (!ids) {
        fprintf(stderr, "bench_history: %s: %s\n", path, s ? "out of memory" : err.message);
        gg_error_clear(&err);
        gg_store_close(s);
        return false;
    }
    r->ids = reads_ids(s, "bench", ids, max);
    unsigned seed = 7;
    if (r->ids > 0) {
        r->found = reads_gets(s, "bench", ids, r->ids, &seed, &r->get_us);
        r->found_admin = reads_gets(s, NULL, ids, r->ids, &seed, &r->get_admin_us);
        r->list_us = reads_lists(s, "bench", READS_GETS);
        r->list_all_us = reads_lists(s, NULL, READS_GETS / 5);
    }
    free(ids);
    gg_store_close(s);
    reads_rows_stats(path, r);
    return r->ids > 0 && r->found == READS_GETS && r->found_admin == READS_GETS;
}

static void print_reads(const reads_figures *r) {
    printf("rows left: %lld, body %lld B on average, %lld B at most\n", r->rows, r->avg_bytes, r->max_bytes);
    printf("reads of what the writer stored (%ld runs of tenant \"bench\"), CPU us each:\n"
           "  get by id %7.2f   get by id, admin (any tenant) %7.2f   found %ld + %ld of %d\n"
           "  newest %d of \"bench\" %7.2f   newest %d of all tenants %7.2f\n",
           r->ids, r->get_us, r->get_admin_us, r->found, r->found_admin, 2 * READS_GETS, READS_LIMIT, r->list_us,
           READS_LIMIT, r->list_all_us);
}

/* ---- candidate layout: a batch as the unit of storage (issue 31) ---------------------------
 *
 * history_batches holds ONE row per (commit, tenant): that tenant's records of the commit in
 * one body, oldest start first (a row is cut where its starts would span more than
 * BL_SPAN_MS, and optionally at a size). No per-run index: a run is found by the start
 * time its id carries (12 hex digits of ms), so the rows that can hold a run started at t
 * have last_ms in [t, t + BL_SPAN_MS] and first_ms <= t. A run written twice (running,
 * then its final state in a later commit) has two versions; readers take the one in the
 * highest rowid. The quota is enforced by the writer itself, in the commit
 * that takes a tenant over it: whole oldest rows deleted, the next one trimmed, down to
 * 90 % as the keeper does today. history_usage.bytes counts body bytes here.
 *
 * Bare loops (no queue; the records and their ids made before the clock starts), the same
 * records as the saturation mode (the positional node text, four tenants, quota runs / 8),
 * starts from a synthetic clock at BL_MODEL_RATE runs a ms (the gateway at 8 cores). */

#define BL_SPAN_MS 10       /* the runs of one row started within this many ms of each other */
#define BL_MODEL_RATE 200.0 /* runs a ms on the synthetic clock: 200k calls/s */
#define BL_TWICE_EVERY 100  /* one run in this many: running in one commit, final in the next */

static const char BL_SCHEMA[] =
    "CREATE TABLE history_batches (rowid INTEGER PRIMARY KEY, tenant TEXT NOT NULL, first_ms INTEGER NOT NULL,"
    " last_ms INTEGER NOT NULL, n INTEGER NOT NULL, bytes INTEGER NOT NULL, body BLOB NOT NULL);"
    "CREATE INDEX history_batches_tenant ON history_batches(tenant, last_ms, first_ms)";

typedef enum { BODY_LP, BODY_JSONL } body_format;

/* What the writer has of a run (its queue item's fields). */
typedef struct bl_run {
    char id[33];
    int tenant;
    gg_exec_status status;
    int version;
    long long started, finished, dur_us;
    const char *s[9]; /* graph tool key_id error arguments result nodes trace_id parent_id; NULL = none */
} bl_run;

typedef struct bl_buf {
    unsigned char *p;
    size_t len, cap;
} bl_buf;

static bool bl_reserve(bl_buf *b, size_t more) {
    if (b->len + more <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->len + more) cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) return false;
    b->p = p;
    b->cap = cap;
    return true;
}

static void put_u32(unsigned char *p, unsigned long v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_i64(unsigned char *p, long long v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)((unsigned long long)v >> (8 * i));
}
static unsigned long get_u32(const unsigned char *p) {
    return (unsigned long)p[0] | (unsigned long)p[1] << 8 | (unsigned long)p[2] << 16 | (unsigned long)p[3] << 24;
}
static long long get_i64(const unsigned char *p) {
    unsigned long long v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return (long long)v;
}

/* Length-prefixed record, little-endian: u32 length of the rest, u8 status, u32 version,
 * i64 started, i64 finished, i64 duration µs, the 32-character id, then the nine texts as
 * u32 length (0xffffffff = NULL) and bytes. */
#define LP_HEAD 65
#define LP_NULL 0xffffffffUL

static bool lp_append(bl_buf *b, const bl_run *r) {
    size_t len[9], total = LP_HEAD;
    for (int i = 0; i < 9; i++) total += 4 + (len[i] = r->s[i] ? strlen(r->s[i]) : 0);
    if (!bl_reserve(b, total)) return false;
    unsigned char *p = b->p + b->len;
    put_u32(p, total - 4);
    p[4] = (unsigned char)r->status;
    put_u32(p + 5, (unsigned long)r->version);
    put_i64(p + 9, r->started);
    put_i64(p + 17, r->finished);
    put_i64(p + 25, r->dur_us);
    memcpy(p + 33, r->id, 32);
    p += LP_HEAD;
    for (int i = 0; i < 9; i++) {
        put_u32(p, r->s[i] ? len[i] : LP_NULL);
        memcpy(p + 4, r->s[i] ? r->s[i] : "", len[i]);
        p += 4 + len[i];
    }
    b->len += total;
    return true;
}

/* A record of a body, decoded in place (texts point into the body, not terminated). */
typedef struct lp_view {
    gg_exec_status status;
    int version;
    long long started, finished, dur_us;
    const char *id;
    const char *s[9];
    size_t len[9];
} lp_view;

/* Decode the record at p (left bytes remain); its size, or 0 when malformed. */
static size_t lp_decode(const unsigned char *p, size_t left, lp_view *v) {
    if (left < LP_HEAD) return 0;
    size_t total = get_u32(p) + 4;
    if (total > left || total < LP_HEAD + 36) return 0;
    v->status = (gg_exec_status)p[4];
    v->version = (int)get_u32(p + 5);
    v->started = get_i64(p + 9);
    v->finished = get_i64(p + 17);
    v->dur_us = get_i64(p + 25);
    v->id = (const char *)p + 33;
    const unsigned char *q = p + LP_HEAD, *end = p + total;
    for (int i = 0; i < 9; i++) {
        if (end - q < 4) return 0;
        unsigned long n = get_u32(q);
        q += 4;
        v->s[i] = n == LP_NULL ? NULL : (const char *)q;
        v->len[i] = n == LP_NULL ? 0 : n;
        if ((size_t)(end - q) < v->len[i]) return 0;
        q += v->len[i];
    }
    return total;
}

/* JSON lines: ["id",status,started,finished,duration_us,version,"graph","tool","key_id"|null,
 * "error"|null,arguments,result,nodes,"trace_id"|null,"parent_id"|null] and a newline. The
 * JSON texts go in as they are; status is one digit, so started begins at byte 38. */
static unsigned char *jl_int(unsigned char *p, long long v) {
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do tmp[n++] = (char)('0' + u % 10); while ((u /= 10) != 0);
    if (v < 0) *p++ = '-';
    while (n) *p++ = (unsigned char)tmp[--n];
    return p;
}

static unsigned char *jl_str(unsigned char *p, const char *s) {
    static const char hex[] = "0123456789abcdef";
    if (!s) return memcpy(p, "null", 4), p + 4;
    *p++ = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = c;
        } else if (c < 0x20) {
            memcpy(p, "\\u00", 4);
            p[4] = (unsigned char)hex[c >> 4];
            p[5] = (unsigned char)hex[c & 15];
            p += 6;
        } else {
            *p++ = c;
        }
    }
    *p++ = '"';
    return p;
}

static unsigned char *jl_raw(unsigned char *p, const char *s) {
    size_t n = s ? strlen(s) : 4;
    memcpy(p, s ? s : "null", n);
    return p + n;
}

static bool jl_append(bl_buf *b, const bl_run *r) {
    size_t need = 128;
    for (int i = 0; i < 9; i++) need += 6 * (r->s[i] ? strlen(r->s[i]) : 4) + 3;
    if (!bl_reserve(b, need)) return false;
    unsigned char *p = b->p + b->len;
    *p++ = '[';
    char id[33];
    memcpy(id, r->id, 33);
    p = jl_str(p, id);
    *p++ = ',';
    *p++ = (unsigned char)('0' + r->status);
    long long nums[4] = {r->started, r->finished, r->dur_us, r->version};
    for (int i = 0; i < 4; i++) {
        *p++ = ',';
        p = jl_int(p, nums[i]);
    }
    for (int i = 0; i < 9; i++) { /* names and the error are strings, the rest JSON texts */
        *p++ = ',';
        p = i < 4 || i > 6 ? jl_str(p, r->s[i]) : jl_raw(p, r->s[i]);
    }
    *p++ = ']';
    *p++ = '\n';
    b->len = (size_t)(p - b->p);
    return true;
}

/* Bytes of the first `drop` records of a body, and the start of the record after them. */
static size_t body_cut(const unsigned char *body, size_t len, body_format fmt, long long drop,
                       long long *next_started) {
    size_t off = 0;
    *next_started = 0;
    for (long long i = 0; i < drop && off < len; i++) {
        if (fmt == BODY_LP) {
            lp_view v;
            size_t n = lp_decode(body + off, len - off, &v);
            if (!n) return len;
            off += n;
        } else {
            const unsigned char *nl = memchr(body + off, '\n', len - off);
            off = nl ? (size_t)(nl - body) + 1 : len;
        }
    }
    if (off + 39 < len) *next_started = fmt == BODY_LP ? get_i64(body + off + 9) : atoll((const char *)body + off + 38);
    return off;
}

typedef struct bl_conn {
    sqlite3 *db;
    sqlite3_stmt *ins, *use, *oldest, *del, *body, *trim, *drop;
} bl_conn;

static void bl_close(bl_conn *c) {
    sqlite3_stmt *st[] = {c->ins, c->use, c->oldest, c->del, c->body, c->trim, c->drop};
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++) sqlite3_finalize(st[i]);
    sqlite3_close(c->db);
    memset(c, 0, sizeof *c);
}

/* A database of every migration with the bench's tenants, and history_batches. */
static bool bl_open(const char *dir, const char *name, const char *mig, bool create, int page_size, bl_conn *c) {
    memset(c, 0, sizeof *c);
    if (create) {
        gg_store *s = open_db(dir, name, mig);
        gg_error err = GG_ERROR_INIT;
        const char *more[] = {"bench-b", "bench-c", "bench-d"};
        for (int i = 0; s && i < 3; i++)
            if (!gg_store_tenant_create(s, more[i], &err)) {
                fprintf(stderr, "bench_history: %s\n", err.message);
                gg_error_clear(&err);
                gg_store_close(s);
                return false;
            }
        if (!s) return false;
        gg_store_close(s);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sqlite3 *db = NULL;
    const char *sql[] = {
        "INSERT INTO history_batches(tenant, first_ms, last_ms, n, bytes, body) VALUES (?1,?2,?3,?4,?5,?6)",
        "UPDATE history_usage SET rows = rows + ?2, bytes = bytes + ?3 WHERE tenant = ?1 RETURNING rows",
        "SELECT rowid, n, bytes FROM history_batches WHERE tenant = ?1 ORDER BY last_ms, first_ms, rowid",
        "DELETE FROM history_batches WHERE rowid = ?1",
        "SELECT body FROM history_batches WHERE rowid = ?1",
        "UPDATE history_batches SET first_ms = ?2, n = n - ?3, bytes = bytes - ?4, body = ?5 WHERE rowid = ?1",
        "UPDATE history_usage SET rows = rows - ?2, bytes = bytes - ?3, dropped = dropped + ?2,"
        " dropped_bytes = dropped_bytes + ?3 WHERE tenant = ?1"};
    sqlite3_stmt **st[] = {&c->ins, &c->use, &c->oldest, &c->del, &c->body, &c->trim, &c->drop};
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) goto fail;
    db = c->db;
    char resize[160]; /* a page size is set on a database out of WAL mode, by a VACUUM */
    snprintf(resize, sizeof resize, "PRAGMA journal_mode=DELETE; PRAGMA page_size=%d; VACUUM", page_size);
    if ((create && page_size && sqlite3_exec(db, resize, NULL, NULL, NULL) != SQLITE_OK) ||
        sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF;"
                         " PRAGMA temp_store=MEMORY", NULL, NULL, NULL) != SQLITE_OK ||
        (create && sqlite3_exec(db, BL_SCHEMA, NULL, NULL, NULL) != SQLITE_OK))
        goto fail;
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
        if (sqlite3_prepare_v2(db, sql[i], -1, st[i], NULL) != SQLITE_OK) goto fail;
    return true;
fail:
    fprintf(stderr, "bench_history: %s: %s\n", path, db ? sqlite3_errmsg(db) : "cannot open");
    bl_close(c);
    return false;
}

static bool bl_step_done(bl_conn *c, sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE) return true;
    fprintf(stderr, "bench_history: %s\n", sqlite3_errmsg(c->db));
    return false;
}

typedef struct bl_figures {
    double writer_us, quota_us;  /* CPU µs a run: everything the commits did, and the quota's part */
    double sys_us, encode_us;    /* of which in the kernel (WAL, checkpoint); encoding the bodies alone */
    long long rows, inserted, kept, deleted, max_span_ms, bodies; /* rows left, rows written, their bytes */
} bl_figures;

/* Inside the writer's transaction: tenant over quota (holding rows records) loses its oldest
 * rows, and a trimmed one, down to low. */
static bool bl_enforce(bl_conn *c, const char *tenant, long long rows, long long low, body_format fmt, bl_buf *tmp,
                       long long *deleted) {
    long long need = rows - low, gone = 0, gone_bytes = 0, trim_id = 0, trim_n = 0;
    size_t nids = 0, cap = 0;
    long long *ids = NULL;
    sqlite3_bind_text(c->oldest, 1, tenant, -1, SQLITE_STATIC);
    while (need > 0 && sqlite3_step(c->oldest) == SQLITE_ROW) {
        long long n = sqlite3_column_int64(c->oldest, 1);
        if (n > need) {
            trim_id = sqlite3_column_int64(c->oldest, 0);
            trim_n = need;
            break;
        }
        if (nids == cap) {
            long long *more = realloc(ids, (cap = cap ? cap * 2 : 64) * sizeof *ids);
            if (!more) break;
            ids = more;
        }
        ids[nids++] = sqlite3_column_int64(c->oldest, 0);
        need -= n;
        gone += n;
        gone_bytes += sqlite3_column_int64(c->oldest, 2);
    }
    sqlite3_reset(c->oldest);
    bool ok = true;
    for (size_t i = 0; ok && i < nids; i++) {
        sqlite3_bind_int64(c->del, 1, ids[i]);
        ok = bl_step_done(c, c->del);
    }
    free(ids);
    if (ok && trim_id) { /* the rest of the oldest row stays, its first trim_n records cut */
        sqlite3_bind_int64(c->body, 1, trim_id);
        ok = sqlite3_step(c->body) == SQLITE_ROW;
        if (ok) {
            const unsigned char *body = sqlite3_column_blob(c->body, 0);
            size_t len = (size_t)sqlite3_column_bytes(c->body, 0);
            long long next = 0;
            size_t cut = body_cut(body, len, fmt, trim_n, &next);
            tmp->len = 0;
            ok = bl_reserve(tmp, len - cut + 1);
            if (ok) memcpy(tmp->p, body + cut, (tmp->len = len - cut));
            sqlite3_reset(c->body);
            sqlite3_bind_int64(c->trim, 1, trim_id);
            sqlite3_bind_int64(c->trim, 2, next);
            sqlite3_bind_int64(c->trim, 3, trim_n);
            sqlite3_bind_int64(c->trim, 4, (long long)cut);
            sqlite3_bind_blob(c->trim, 5, tmp->p, (int)tmp->len, SQLITE_STATIC);
            ok = ok && bl_step_done(c, c->trim);
            gone += trim_n;
            gone_bytes += (long long)cut;
        } else {
            sqlite3_reset(c->body);
        }
    }
    sqlite3_bind_text(c->drop, 1, tenant, -1, SQLITE_STATIC);
    sqlite3_bind_int64(c->drop, 2, gone);
    sqlite3_bind_int64(c->drop, 3, gone_bytes);
    *deleted += gone;
    return ok && bl_step_done(c, c->drop);
}

static unsigned long long bl_rand(unsigned long long *x) { /* xorshift64: ids only need to differ */
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void bl_id(char out[33], long long ms, unsigned long long *rnd) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 11; i >= 0; i--, ms >>= 4) out[i] = hex[ms & 15];
    unsigned long long a = bl_rand(rnd), b = bl_rand(rnd);
    for (int i = 0; i < 20; i++) out[12 + i] = hex[(i < 16 ? a >> (4 * i) : b >> (4 * (i - 16))) & 15];
    out[32] = '\0';
}

static const char *const BL_TENANTS[SAT_TENANTS] = {"bench", "bench-b", "bench-c", "bench-d"};

/* The records of the next commit: the finals of last commit's twice-written runs (older,
 * so first), then up to `commit` new runs. */
static size_t bl_fill(bl_run *rec, bl_run *carry, size_t *ncarry, long *done, long runs, int commit, long long t0,
                      const char *nodes, unsigned long long *rnd) {
    size_t n = 0, nc = *ncarry;
    for (size_t i = 0; i < nc; i++) {
        rec[n] = carry[i];
        rec[n].status = GG_EXEC_SUCCEEDED;
        rec[n].finished = rec[n].started + 1;
        rec[n].dur_us = 3;
        rec[n].s[5] = "{\"result\":\"high\"}";
        rec[n++].s[6] = nodes;
    }
    *ncarry = 0;
    for (int j = 0; j < commit && *done < runs; j++, (*done)++) {
        bl_run *r = &rec[n++];
        long i = *done;
        memset(r, 0, sizeof *r);
        r->started = t0 + (long long)((double)i / BL_MODEL_RATE);
        bl_id(r->id, r->started, rnd);
        r->tenant = (int)(i % SAT_TENANTS);
        r->version = 1;
        r->s[0] = "switch";
        r->s[1] = "test_switch";
        r->s[2] = "2aa75f896173af27";
        r->s[4] = "{\"value\":42}";
        if (i % BL_TWICE_EVERY == 0) { /* a long run: its running record now, the final one next commit */
            r->status = GG_EXEC_RUNNING;
            carry[(*ncarry)++] = *r;
            continue;
        }
        r->status = GG_EXEC_SUCCEEDED;
        r->finished = r->started;
        r->dur_us = 3;
        r->s[5] = "{\"result\":\"high\"}";
        r->s[6] = nodes;
    }
    return n;
}

/* One row of a tenant's records (b), counted into f. */
static bool bl_put_row(bl_conn *c, int t, const bl_buf *b, long long first, long long last, long long cnt,
                       bl_figures *f) {
    if (last - first > f->max_span_ms) f->max_span_ms = last - first;
    sqlite3_bind_text(c->ins, 1, BL_TENANTS[t], -1, SQLITE_STATIC);
    sqlite3_bind_int64(c->ins, 2, first);
    sqlite3_bind_int64(c->ins, 3, last);
    sqlite3_bind_int64(c->ins, 4, cnt);
    sqlite3_bind_int64(c->ins, 5, (long long)b->len);
    sqlite3_bind_blob(c->ins, 6, b->p, (int)b->len, SQLITE_STATIC);
    f->bodies += (long long)b->len;
    f->inserted++;
    return bl_step_done(c, c->ins);
}

/* One commit: a row per tenant (several when row_cap bytes is set and reached), the usage
 * counted, the quota enforced. */
static bool bl_commit(bl_conn *c, const bl_run *rec, size_t n, body_format fmt, long long quota, size_t row_cap,
                      bl_buf *b, bl_buf *tmp, bl_figures *f) {
    bool ok = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
    for (int t = 0; ok && t < SAT_TENANTS; t++) {
        long long first = 0, last = 0, cnt = 0, total = 0, bytes = 0;
        b->len = 0;
        for (size_t i = 0; ok && i < n; i++) {
            if (rec[i].tenant != t) continue;
            /* a row's starts stay within BL_SPAN_MS (the records come oldest first) */
            if (cnt && (rec[i].started - first > BL_SPAN_MS || last - rec[i].started > BL_SPAN_MS)) {
                ok = bl_put_row(c, t, b, first, last, cnt, f);
                total += cnt;
                bytes += (long long)b->len;
                b->len = 0;
                cnt = 0;
            }
            ok = ok && (fmt == BODY_LP ? lp_append(b, &rec[i]) : jl_append(b, &rec[i]));
            if (!cnt++ || rec[i].started < first) first = rec[i].started;
            if (rec[i].started > last) last = rec[i].started;
            if (ok && row_cap && b->len >= row_cap) {
                ok = bl_put_row(c, t, b, first, last, cnt, f);
                total += cnt;
                bytes += (long long)b->len;
                b->len = 0;
                cnt = 0;
            }
        }
        if (ok && cnt) {
            ok = bl_put_row(c, t, b, first, last, cnt, f);
            total += cnt;
            bytes += (long long)b->len;
        }
        if (!ok || !total) continue;
        sqlite3_bind_text(c->use, 1, BL_TENANTS[t], -1, SQLITE_STATIC);
        sqlite3_bind_int64(c->use, 2, total);
        sqlite3_bind_int64(c->use, 3, bytes);
        long long rows = sqlite3_step(c->use) == SQLITE_ROW ? sqlite3_column_int64(c->use, 0) : -1;
        ok = rows >= 0 && sqlite3_step(c->use) == SQLITE_DONE;
        sqlite3_reset(c->use);
        if (ok && quota > 0 && rows > quota) {
            double q0 = thread_cpu_us();
            ok = bl_enforce(c, BL_TENANTS[t], rows, quota - quota / 10, fmt, tmp, &f->deleted);
            f->quota_us += thread_cpu_us() - q0;
        }
    }
    if (ok) ok = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    if (!ok) {
        fprintf(stderr, "bench_history: history_batches: %s\n", sqlite3_errmsg(c->db));
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    }
    return ok;
}

/* CPU µs this thread has spent in the kernel (WAL writes, checkpoint copies, fsync). */
static double thread_sys_us(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
}

/* Write runs in commits of `commit` runs into history_batches of a fresh database (quota
 * 0: none; page_size 0: SQLite's; row_cap 0: rows cut by span only); fills f. The database
 * is left for the readers. */
static bool run_batch_layout(const char *dir, const char *name, const char *mig, long runs, int commit,
                             body_format fmt, long long quota, int page_size, bool checkpoint, size_t row_cap,
                             bl_figures *f) {
    bl_conn c;
    if (!bl_open(dir, name, mig, true, page_size, &c)) return false;
    if (!checkpoint) sqlite3_exec(c.db, "PRAGMA wal_autocheckpoint=0", NULL, NULL, NULL);
    memset(f, 0, sizeof *f);
    json_t *hist = switch_history(gg_wall_ms());
    char *nodes = history_positional(hist);
    json_decref(hist);
    size_t cap = (size_t)commit + (size_t)commit / BL_TWICE_EVERY + 2;
    bl_run *rec = malloc(cap * sizeof *rec), *carry = malloc(cap * sizeof *carry);
    bl_buf b = {0}, tmp = {0};
    unsigned long long rnd = 0x9e3779b97f4a7c15ULL ^ (unsigned long long)gg_wall_ms();
    long long t0 = gg_wall_ms();
    long done = 0;
    size_t ncarry = 0;
    bool ok = rec && carry && nodes;
    double cpu = 0, enc = 0, sys0 = thread_sys_us();
    while (ok && (done < runs || ncarry)) {
        size_t n = bl_fill(rec, carry, &ncarry, &done, runs, commit, t0, nodes, &rnd);
        double e0 = thread_cpu_us(); /* the bodies' encoding alone, in a pass of its own */
        tmp.len = 0;
        for (size_t i = 0; ok && i < n; i++) ok = fmt == BODY_LP ? lp_append(&tmp, &rec[i]) : jl_append(&tmp, &rec[i]);
        double c0 = thread_cpu_us(); /* a commit at a time: the records exist before the writer sees them */
        enc += c0 - e0;
        ok = ok && bl_commit(&c, rec, n, fmt, quota, row_cap, &b, &tmp, f);
        cpu += thread_cpu_us() - c0;
    }
    f->sys_us = (thread_sys_us() - sys0) / (double)runs;
    f->encode_us = enc / (double)runs;
    f->writer_us = cpu / (double)runs;
    f->quota_us /= (double)runs;
    sqlite3_stmt *st = NULL;
    if (ok && sqlite3_prepare_v2(c.db, "SELECT (SELECT count(*) FROM history_batches),"
                                       " (SELECT sum(rows) FROM history_usage)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        f->rows = sqlite3_column_int64(st, 0);
        f->kept = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    free(rec);
    free(carry);
    free(b.p);
    free(tmp.p);
    free(nodes);
    bl_close(&c);
    return ok;
}

/* ---- the readers' costs, both layouts ---------------------------------------------------- */

#define READ_IDS 1000
#define READ_LIMIT 50

typedef struct read_figures {
    double get_us, list_us;   /* CPU µs a get by id, a listing of the newest READ_LIMIT */
    long found, stale;        /* gets that found the run; that returned a version not the newest */
    long cand, bodies;        /* batch layout: rows in the window of a get's start, bodies read (all gets) */
    unsigned long long sink;  /* what was read, so that no read is optimized out */
} read_figures;

/* Today's layout: SQL_GET's and the tenant listing's statements of src/store/history_query.c. */
static bool reads_rows(const char *path, bool mmap, read_figures *r) {
    sqlite3 *db = NULL;
    sqlite3_stmt *ids = NULL, *get = NULL, *list = NULL;
    char (*id)[33] = malloc(READ_IDS * sizeof *id);
    int n = 0;
    bool ok = id && sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK &&
              (!mmap || sqlite3_exec(db, "PRAGMA mmap_size=1073741824", NULL, NULL, NULL) == SQLITE_OK) &&
              sqlite3_prepare_v2(db, "SELECT id FROM executions WHERE tenant = 'bench' ORDER BY random() LIMIT ?1",
                                 -1, &ids, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(db, "SELECT id, tenant, graph, version, tool, key_id, status, started_at, finished_at,"
                                     " duration_ms, error, trace_id, parent_id, arguments, result, nodes"
                                     " FROM executions WHERE id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR tenant = ?2)",
                                 -1, &get, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(db, "SELECT id, tenant, graph, version, tool, key_id, status, started_at, finished_at,"
                                     " duration_ms, error, trace_id, parent_id FROM executions WHERE tenant = ?1"
                                     " ORDER BY started_at DESC, id DESC LIMIT ?2", -1, &list, NULL) == SQLITE_OK;
    if (ok) sqlite3_bind_int(ids, 1, READ_IDS);
    while (ok && n < READ_IDS && sqlite3_step(ids) == SQLITE_ROW)
        snprintf(id[n++], 33, "%s", (const char *)sqlite3_column_text(ids, 0));
    memset(r, 0, sizeof *r);
    double c0 = thread_cpu_us();
    for (int i = 0; ok && n && i < READ_IDS; i++) { /* a tenant holding fewer runs: each more than once */
        sqlite3_bind_text(get, 1, id[i % n], 32, SQLITE_STATIC);
        sqlite3_bind_text(get, 2, "bench", -1, SQLITE_STATIC);
        if (sqlite3_step(get) == SQLITE_ROW) {
            r->found++;
            for (int col = 0; col < 16; col++) r->sink += (unsigned long long)sqlite3_column_bytes(get, col);
            r->stale += strcmp((const char *)sqlite3_column_text(get, 6), "running") == 0;
        }
        sqlite3_reset(get);
    }
    double c1 = thread_cpu_us();
    for (int i = 0; ok && i < READ_IDS; i++) {
        sqlite3_bind_text(list, 1, "bench", -1, SQLITE_STATIC);
        sqlite3_bind_int(list, 2, READ_LIMIT + 1);
        while (sqlite3_step(list) == SQLITE_ROW)
            for (int col = 0; col < 13; col++) r->sink += (unsigned long long)sqlite3_column_bytes(list, col);
        sqlite3_reset(list);
    }
    r->list_us = (thread_cpu_us() - c1) / READ_IDS;
    r->get_us = (c1 - c0) / READ_IDS;
    ok = ok && n > 0;
    sqlite3_finalize(ids);
    sqlite3_finalize(get);
    sqlite3_finalize(list);
    sqlite3_close(db);
    free(id);
    return ok;
}

/* A run's start from its id (12 hex digits of ms). */
static long long id_ms(const char *id) {
    long long ms = 0;
    for (int i = 0; i < 12; i++) ms = ms * 16 + (id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
    return ms;
}

/* Get by id: the rows whose span holds the id's start (from the index alone), then their
 * bodies newest row first; the first that holds the id has its newest version. Records
 * are skipped by their length, the id compared in place; only the run found is decoded.
 * (One statement ordered by rowid would sort the bodies themselves.) */
static bool bl_get(sqlite3_stmt *rows, sqlite3_stmt *body, const char *tenant, const char *id, lp_view *out,
                   read_figures *r) {
    long long t = id_ms(id), cand[64];
    int n = 0;
    sqlite3_bind_text(rows, 1, tenant, -1, SQLITE_STATIC);
    sqlite3_bind_int64(rows, 2, t);
    sqlite3_bind_int64(rows, 3, t + BL_SPAN_MS);
    while (n < 64 && sqlite3_step(rows) == SQLITE_ROW) cand[n++] = sqlite3_column_int64(rows, 0);
    sqlite3_reset(rows);
    r->cand += n;
    bool found = false;
    while (!found && n > 0) {
        int newest = 0;
        for (int i = 1; i < n; i++) if (cand[i] > cand[newest]) newest = i;
        sqlite3_bind_int64(body, 1, cand[newest]);
        cand[newest] = cand[--n];
        r->bodies++;
        if (sqlite3_step(body) == SQLITE_ROW) {
            const unsigned char *b = sqlite3_column_blob(body, 0);
            size_t len = (size_t)sqlite3_column_bytes(body, 0), off = 0;
            while (!found && off + LP_HEAD <= len) {
                if (memcmp(b + off + 33, id, 32) == 0) found = lp_decode(b + off, len - off, out) != 0;
                off += get_u32(b + off) + 4;
            }
        }
        if (found) r->sink += out->len[6];
        sqlite3_reset(body);
    }
    return found;
}

/* A run met by the listing: where its record is in the copied bodies. */
typedef struct bl_item {
    long long started, rowid;
    size_t off;
    char id[32];
} bl_item;

static int cmp_item(const void *a, const void *b) {
    const bl_item *x = a, *y = b;
    if (x->started != y->started) return x->started > y->started ? -1 : 1;
    int c = memcmp(x->id, y->id, 32);
    if (c) return -c;
    return x->rowid > y->rowid ? -1 : x->rowid < y->rowid;
}

/* Sort newest first, one version a run (the highest rowid's); the count left. */
static size_t bl_dedupe(bl_item *it, size_t n) {
    qsort(it, n, sizeof *it, cmp_item);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || memcmp(it[k - 1].id, it[i].id, 32) != 0) it[k++] = it[i];
    return k;
}

/* The newest `limit` runs of a tenant: rows by last_ms, newest first, read until limit + 1
 * distinct runs started after the next row's last_ms (no row left can hold a newer run or
 * a newer version of one). Bodies are copied (a step invalidates the last one); the runs
 * listed are decoded, as the listing's JSON would need (r->stale counts running versions
 * listed). Returns the runs listed. */
static size_t bl_list(sqlite3_stmt *list, const char *tenant, int limit, bl_buf *bodies, bl_item **items,
                      size_t *cap, read_figures *r) {
    size_t n = 0;
    bodies->len = 0;
    sqlite3_bind_text(list, 1, tenant, -1, SQLITE_STATIC);
    while (sqlite3_step(list) == SQLITE_ROW) {
        long long last = sqlite3_column_int64(list, 1);
        if (n > (size_t)limit && (n = bl_dedupe(*items, n)) > (size_t)limit && (*items)[limit].started > last) break;
        long long rowid = sqlite3_column_int64(list, 0);
        size_t len = (size_t)sqlite3_column_bytes(list, 2), base = bodies->len, off = 0;
        const unsigned char *src = sqlite3_column_blob(list, 2);
        if (!bl_reserve(bodies, len)) break;
        memcpy(bodies->p + base, src, len);
        bodies->len += len;
        while (off + LP_HEAD <= len) {
            const unsigned char *p = bodies->p + base + off;
            if (n == *cap) {
                bl_item *more = realloc(*items, (*cap = *cap ? *cap * 2 : 1024) * sizeof **items);
                if (!more) break;
                *items = more;
            }
            bl_item *it = &(*items)[n++];
            it->started = get_i64(p + 9);
            it->rowid = rowid;
            it->off = base + off;
            memcpy(it->id, p + 33, 32);
            off += get_u32(p) + 4;
        }
    }
    sqlite3_reset(list);
    size_t k = bl_dedupe(*items, n);
    if (k > (size_t)limit) k = (size_t)limit;
    for (size_t i = 0; i < k; i++) {
        lp_view v;
        if (!lp_decode(bodies->p + (*items)[i].off, bodies->len - (*items)[i].off, &v)) return 0;
        r->stale += v.status == GG_EXEC_RUNNING;
        for (int j = 0; j < 9; j++) r->sink += (unsigned long long)v.len[j];
    }
    return k;
}

/* The batch layout's get by id and listing on a database run_batch_layout left (LP bodies),
 * on READ_IDS ids of tenant "bench" picked at random. */
static bool reads_batches(const char *path, bool mmap, read_figures *r) {
    sqlite3 *db = NULL;
    sqlite3_stmt *all = NULL, *get = NULL, *body = NULL, *list = NULL;
    char (*id)[33] = NULL;
    size_t nid = 0, idcap = 0;
    bl_buf bodies = {0};
    bl_item *items = NULL;
    size_t cap = 0;
    memset(r, 0, sizeof *r);
    bool ok = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(db, "SELECT body FROM history_batches WHERE tenant = 'bench'", -1, &all, NULL) ==
                  SQLITE_OK &&
              (!mmap || sqlite3_exec(db, "PRAGMA mmap_size=1073741824", NULL, NULL, NULL) == SQLITE_OK) &&
              sqlite3_prepare_v2(db, "SELECT rowid FROM history_batches WHERE tenant = ?1 AND last_ms BETWEEN ?2 AND ?3"
                                     " AND first_ms <= ?2", -1, &get, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(db, "SELECT body FROM history_batches WHERE rowid = ?1", -1, &body, NULL) ==
                  SQLITE_OK &&
              sqlite3_prepare_v2(db, "SELECT rowid, last_ms, body FROM history_batches WHERE tenant = ?1"
                                     " ORDER BY last_ms DESC, rowid DESC", -1, &list, NULL) == SQLITE_OK;
    while (ok && sqlite3_step(all) == SQLITE_ROW) { /* every id kept (versions twice), for the sample */
        const unsigned char *body = sqlite3_column_blob(all, 0);
        size_t len = (size_t)sqlite3_column_bytes(all, 0);
        for (size_t off = 0; off + LP_HEAD <= len; off += get_u32(body + off) + 4) {
            if (nid == idcap) {
                char (*more)[33] = realloc(id, (idcap = idcap ? idcap * 2 : 4096) * sizeof *id);
                if (!more) { ok = false; break; }
                id = more;
            }
            memcpy(id[nid], body + off + 33, 32);
            id[nid++][32] = '\0';
        }
    }
    unsigned long long rnd = 0x2545f4914f6cdd1dULL;
    char (*pick)[33] = ok && nid ? malloc(READ_IDS * sizeof *pick) : NULL;
    for (int i = 0; pick && i < READ_IDS; i++) memcpy(pick[i], id[bl_rand(&rnd) % nid], 33);
    ok = ok && pick;
    double c0 = thread_cpu_us();
    for (int i = 0; ok && i < READ_IDS; i++) {
        lp_view v;
        if (!bl_get(get, body, "bench", pick[i], &v, r)) continue;
        r->found++;
        r->stale += v.status == GG_EXEC_RUNNING;
        for (int j = 0; j < 9; j++) r->sink += (unsigned long long)v.len[j];
    }
    double c1 = thread_cpu_us();
    for (int i = 0; ok && i < READ_IDS; i++)
        ok = bl_list(list, "bench", READ_LIMIT, &bodies, &items, &cap, r) == READ_LIMIT;
    r->list_us = (thread_cpu_us() - c1) / READ_IDS;
    r->get_us = (c1 - c0) / READ_IDS;
    sqlite3_finalize(all);
    sqlite3_finalize(get);
    sqlite3_finalize(body);
    sqlite3_finalize(list);
    sqlite3_close(db);
    free(id);
    free(pick);
    free(bodies.p);
    free(items);
    return ok;
}

static void rm_db(const char *dir, const char *name) {
    char path[4300];
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s%s", dir, name, k == 0 ? "" : k == 1 ? "-wal" : "-shm");
        unlink(path);
    }
}

/* "layouts": today's writer at saturation (quota deletes on, then a quota never reached)
 * and the batch layout's bare loop at the gateway's commit sizes, then both layouts'
 * reads, in one invocation. "batch" (today false): the batch layout's loops alone. */
static int run_layouts(const char *dir, const char *mig, long runs, bool today) {
    sat_figures sq = {0}, sn = {0};
    bool ok = !today || (run_saturation(dir, "saturation.db", mig, runs, false, &sq) &&
                         run_saturation(dir, "saturation-nq.db", mig, runs, true, &sn));
    rm_db(dir, "saturation-nq.db");
    if (!ok) return 1;
    if (today) {
        print_saturation(runs, false, &sq);
        print_saturation(runs, true, &sn);
    }
    /* the gateway's commits (bench/gateway: ~60-600 rows), the writer's largest (BATCH_MAX);
     * JSON lines; 64 KB pages; and, to show the checkpoint's share, none */
    static const struct { int commit; body_format fmt; bool quota; int page; bool ckpt; size_t cap; } cases[] = {
        {60, BODY_LP, true, 0, true, 0},          {60, BODY_LP, false, 0, true, 0},
        {600, BODY_LP, true, 0, true, 0},         {600, BODY_LP, false, 0, true, 0},
        {2048, BODY_LP, true, 0, true, 0},        {2048, BODY_LP, false, 0, true, 0},
        {600, BODY_LP, true, 0, true, 16384},     {600, BODY_LP, false, 0, true, 16384},
        {600, BODY_JSONL, true, 0, true, 0},      {600, BODY_JSONL, false, 0, true, 0},
        {600, BODY_LP, true, 65536, true, 0},     {600, BODY_LP, false, 65536, true, 0},
        {600, BODY_LP, true, 0, false, 0},        {600, BODY_LP, false, 0, false, 0}};
    printf("batch layout (one history_batches row per commit and tenant, starts within %d ms, no per-run index),\n"
           "bare loop of the same runs, 1 in %d written twice (running, then final a commit later), quota %lld\n"
           "runs a tenant enforced by the writer in its commit:\n", BL_SPAN_MS, BL_TWICE_EVERY, sat_quota(runs, false));
    for (size_t i = 0; ok && i < sizeof cases / sizeof cases[0]; i++) {
        bl_figures f;
        char name[64];
        snprintf(name, sizeof name, "batch-%zu.db", i);
        ok = run_batch_layout(dir, name, mig, runs, cases[i].commit, cases[i].fmt,
                              cases[i].quota ? sat_quota(runs, false) : 0, cases[i].page, cases[i].ckpt, cases[i].cap,
                              &f);
        if (ok)
            printf("  %-5s %2d KB pages %4d a commit%s%s %-8s %8.0f records/s on one core  %5.2f us/record"
                   " (quota %4.2f, kernel %4.2f; encoding alone %4.2f)   %lld rows of %.0f B, %lld runs kept,"
                   " %lld deleted, span <= %lld ms\n",
                   cases[i].fmt == BODY_LP ? "LP" : "JSONL", (cases[i].page ? cases[i].page : 4096) / 1024,
                   cases[i].commit, cases[i].cap ? " (rows <= 16 KB)" : "", cases[i].ckpt ? "," : " (no checkpoint),",
                   cases[i].quota ? "quota" : "no quota",
                   1e6 / f.writer_us, f.writer_us, f.quota_us, f.sys_us, f.encode_us, f.inserted,
                   (double)f.bodies / (double)(f.inserted ? f.inserted : 1), f.kept, f.deleted, f.max_span_ms);
        if (i != 2 && i != 6) rm_db(dir, name); /* 600 a commit, LP, quota (and rows <= 16 KB): for the reads */
    }
    if (!today || !ok) { /* the databases kept for the reads go too */
        rm_db(dir, "batch-2.db");
        rm_db(dir, "batch-6.db");
        return ok ? 0 : 1;
    }
    read_figures rr[2], rb[2], rc[2];
    char rows_db[4300], batch_db[4300], capped_db[4300];
    snprintf(rows_db, sizeof rows_db, "%s/saturation.db", dir);
    snprintf(batch_db, sizeof batch_db, "%s/batch-2.db", dir);
    snprintf(capped_db, sizeof capped_db, "%s/batch-6.db", dir);
    for (int m = 0; ok && m < 2; m++) /* the store's connections (no mmap), then mmap I/O */
        ok = reads_rows(rows_db, m, &rr[m]) && reads_batches(batch_db, m, &rb[m]) &&
             reads_batches(capped_db, m, &rc[m]);
    rm_db(dir, "batch-2.db");
    rm_db(dir, "batch-6.db");
    if (!ok) return 1;
    printf("reads, tenant \"bench\" after the quota runs, %d ids at random / %d listings, CPU us each:\n", READ_IDS,
           READ_IDS);
    for (int m = 0; m < 2; m++) {
        printf("  today's layout (the writer's run)%s  get by id %7.2f   newest %d %7.2f   found %ld of %d\n",
               m ? ", mmap" : ",     ", rr[m].get_us, READ_LIMIT, rr[m].list_us, rr[m].found, READ_IDS);
        const read_figures *b[2] = {&rb[m], &rc[m]};
        for (int k = 0; k < 2; k++)
            printf("  batch layout (LP, 600 a commit%s)%s  get by id %7.2f   newest %d %7.2f   found %ld of %d, running"
                   " versions returned %ld; a get: %.1f rows in its window, %.1f bodies read\n",
                   k ? ", rows <= 16 KB" : "", m ? ", mmap" : ",     ", b[k]->get_us, READ_LIMIT, b[k]->list_us,
                   b[k]->found, READ_IDS, b[k]->stale, (double)b[k]->cand / READ_IDS, (double)b[k]->bodies / READ_IDS);
    }
    bool right = sq.dropped == 0;
    for (int m = 0; m < 2; m++)
        right = right && rr[m].found == READ_IDS && rb[m].found == READ_IDS && rb[m].stale == 0 &&
                rc[m].found == READ_IDS && rc[m].stale == 0;
    return right ? 0 : 1;
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
    bool no_quota = getenv("GG_BENCH_SAT_NO_QUOTA") != NULL;
    if (argc > 4 && (strcmp(argv[4], "layouts") == 0 || strcmp(argv[4], "batch") == 0)) {
        if (runs < 1000) { /* the listings read 51 runs of a tenant holding runs / 8 or more */
            fprintf(stderr, "bench_history: %s needs at least 1000 runs\n", argv[4]);
            rm_tree(dir);
            return 2;
        }
        int rc = run_layouts(dir, mig, runs, strcmp(argv[4], "layouts") == 0);
        rm_tree(dir);
        return rc;
    }
    if (argc > 4 && strcmp(argv[4], "reads") == 0) {
        reads_figures rf;
        bool rok = run_saturation(dir, "saturation.db", mig, runs, no_quota, &sat) &&
                   run_reads(dir, "saturation.db", &rf);
        rm_tree(dir);
        if (!rok) return 1;
        print_saturation(runs, no_quota, &sat);
        print_reads(&rf);
        return sat.dropped ? 1 : 0;
    }
    if (argc > 4 && strcmp(argv[4], "saturation") == 0) {
        bool sok = run_saturation(dir, "saturation.db", mig, runs, no_quota, &sat);
        rm_tree(dir);
        if (!sok) return 1;
        print_saturation(runs, no_quota, &sat);
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
    bool sat_ok = ok && run_saturation(dir, "saturation.db", mig, runs, no_quota, &sat);
    rm_tree(dir);
    if (!ok || ref <= 0) return 1;
    printf("%ld runs at %.0f runs/s (4-node switch run, every run recorded)\n", runs, rate);
    printf("%-34s                      %6.2f us/run\n", "reference: bare INSERTs, 0002 layout", ref);
    printf("%-34s                      %6.2f us/run (%.2fx reference)\n", "floor: bare INSERTs, one row a run",
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
    if (sat_ok) print_saturation(runs, no_quota, &sat);
    return nodes.dropped || fast.dropped || text.dropped || pos.dropped || !gc_ok || !sat_ok || sat.dropped ? 1 : 0;
}
