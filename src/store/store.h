/* store.h — graphgate's persistent state (tenants, keys, graph versions, node specs,
 * execution history, audit log) behind an interface that hides SQL.
 *
 * Ownership: the store owns its connections and statements; callers own every string,
 * struct and json_t the functions hand back (free with the matching *_clear / free /
 * json_decref) and keep ownership of every argument, except gg_history_submit and
 * gg_history_submit_then, which take the record.
 *
 * Backend: SQLite (the default) or PostgreSQL (options.url), chosen at open; the same
 * functions behave the same on both (src/store/db.h is the layer under them).
 * SQLite in WAL mode (readers never wait for the writer), foreign keys on, a busy
 * timeout so the CLI can work while `serve` runs, a small pool of connections (each used
 * by one thread at a time) whose statements are prepared once and reused. Nothing in this
 * header names SQLite, so a PostgreSQL backend can be added behind the same functions.
 *
 * Names: an *execution* is one run of a graph's tool, one row of the `executions` table
 * (gg_exec_record in memory while it runs and is submitted; gg_exec_status, gg_exec_id_new;
 * "run" in prose means the same). *History* is the recorded executions as a whole and the
 * writer that records them (gg_history_*, history.c, history_query.c), never one run. A
 * *node record* is one node's entry inside an execution (gg_node_exec_record; the
 * executor's array of them is the "node history").
 *
 * Tenant isolation: every function that reads or changes a tenant's data takes the
 * tenant name and only ever touches rows of that tenant. The few functions documented as
 * accepting tenant == NULL act across tenants and are for callers holding the `admin`
 * scope (or the operator's CLI) only.
 *
 * Errors: code "not_found", "conflict" (already exists), "invalid" (bad argument),
 * "migration" (schema problem, startup must stop), "db" (SQLite failure), "oom".
 */
#ifndef GG_STORE_H
#define GG_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

typedef struct gg_store gg_store;

/* ---------------------------------------------------------------------------------------
 * Opening, migrations, readiness
 * ------------------------------------------------------------------------------------- */

typedef struct gg_store_options {
    const char *path;      /* database file; its directory is created if missing */
    const char *url;       /* postgres://… or postgresql://… (libpq URL, TLS parameters such as
                            * sslmode/sslrootcert included): PostgreSQL instead of path */
    int statement_timeout_ms; /* PostgreSQL: a statement running longer fails; 0 = 30000 */
    int pool_size;         /* connections shared by request threads; 0 = 4 */
    bool lazy_pool;        /* PostgreSQL: connect only the first at open, the others on first
                            * use (a CLI command: each connection costs a TCP/TLS setup) */
    int busy_timeout_ms;   /* how long a statement waits for another writer; 0 = 5000 */
    bool must_exist;       /* refuse ("not_found") a path that does not exist instead of
                            * creating an empty database (commands that only read) */
} gg_store_options;

/* Open (creating if needed, unless must_exist) the database. Does not migrate. NULL + err
 * on failure. */
gg_store *gg_store_open(const gg_store_options *opts, gg_error *err);
/* Close every connection (waits for borrowed ones to come back); NULL is allowed. */
void gg_store_close(gg_store *s);
/* The SQLite file, or the PostgreSQL URL without its password. */
const char *gg_store_path(const gg_store *s);
/* true when the store is on PostgreSQL. */
bool gg_store_is_postgres(const gg_store *s);

/* Apply the pending migrations of dir (files NNNN_name.sql; on PostgreSQL those of
 * dir/postgres, applied in order, each in its
 * own transaction, recorded with their sha256 in schema_migrations). Fails with code
 * "migration" and a message naming the file when an applied migration changed, is missing
 * from dir, or the database is newer than every file in dir. *applied (may be NULL) gets
 * the number applied now. Safe to run from two processes at once. */
bool gg_store_migrate(gg_store *s, const char *dir, int *applied, gg_error *err);
/* Check only: the same verification as gg_store_migrate without applying anything;
 * pending migrations are an error too ("migration"). */
bool gg_store_migrations_verify(gg_store *s, const char *dir, gg_error *err);
/* For /ready: the database answers and its schema is the one the last gg_store_migrate
 * call on this store established. Cheap (one indexed query). */
bool gg_store_migrations_current(gg_store *s, gg_error *err);
/* Highest applied migration version (0 when none), or -1 + err. */
int gg_store_schema_version(gg_store *s, gg_error *err);

/* Settings: small named blobs (e.g. the key pepper). get_or_create stores len random
 * bytes under name the first time and returns the stored value ever after, also when two
 * processes race. */
bool gg_store_setting_get_or_create_random(gg_store *s, const char *name, unsigned char *out,
                                           size_t len, gg_error *err);

/* Generation counters: bumped inside the same transaction as every change to keys
 * (revoke, delete, tenant delete), graphs (put, activate, delete) or views of the
 * tenant-wide endpoint (put, delete, tenant delete), so a long-running process notices
 * changes made by another process (the CLI, another replica) with one cheap read. The
 * views and oauth counters' rows are created by their first bump (no migration): until
 * then they read 0. oauth: a tenant's authorization servers (put, delete, tenant delete). */
typedef enum { GG_GEN_KEYS, GG_GEN_GRAPHS, GG_GEN_VIEWS, GG_GEN_OAUTH, GG_GEN_SECRETS = 5, GG_GEN_PINS } gg_store_generation;
/* secrets (5: bit 4 of the watch mask is the tasks'): a tenant's secrets (put, delete,
 * tenant delete; not a rekey, which changes no value). */
long long gg_store_generation_get(gg_store *s, gg_store_generation which, gg_error *err);

/* Change notifications (PostgreSQL only): every generation bump also NOTIFYs channel
 * "graphgate" with the counter's name, delivered when its transaction commits; a task row
 * changed (gg_store_task_set, gg_store_tasks_mark_interrupted) NOTIFYs "tasks". A watch is
 * one dedicated libpq connection that LISTENs on it, so a replica hears another's change
 * at once instead of at its next periodic read (which stays as the safety net).
 * gg_store_watch_new returns NULL on SQLite (nothing to listen to: keep polling).
 * gg_store_watch_wait waits up to timeout_ms (or until gg_store_watch_wake) and returns a
 * mask of GG_WATCH_* bits: the counters changed; GG_WATCH_DOWN while the connection is
 * lost (it reconnects by itself, backing off from 100 ms to 5 s; callers poll meanwhile);
 * after a (re)connection every counter bit, since notifications sent while it was down are
 * lost. Ownership: one thread waits; wake and free come from another (free after that
 * thread stopped). */
enum {
    GG_WATCH_KEYS = 1 << GG_GEN_KEYS,
    GG_WATCH_GRAPHS = 1 << GG_GEN_GRAPHS,
    GG_WATCH_VIEWS = 1 << GG_GEN_VIEWS,
    GG_WATCH_OAUTH = 1 << GG_GEN_OAUTH,
    GG_WATCH_SECRETS = 1 << GG_GEN_SECRETS,
    GG_WATCH_PINS = 1 << GG_GEN_PINS, /* pinned downstream definitions: a change approved (pins.c) */
    GG_WATCH_TASKS = 1 << 4, /* a task row changed (no counter: the tasks extension's rows) */
    GG_WATCH_DOWN = 1 << 8
};
typedef struct gg_store_watch gg_store_watch;
gg_store_watch *gg_store_watch_new(gg_store *s);
int gg_store_watch_wait(gg_store_watch *w, int timeout_ms);
void gg_store_watch_wake(gg_store_watch *w);
void gg_store_watch_free(gg_store_watch *w);

/* ---------------------------------------------------------------------------------------
 * Tenants
 * ------------------------------------------------------------------------------------- */

/* Names are validated by the caller (gg_auth_valid_name); the store stores what it gets.
 * create: "conflict" if it exists. delete: "not_found"; removes the tenant's keys, graphs,
 * versions and executions (audit entries stay). */
bool gg_store_tenant_create(gg_store *s, const char *tenant, gg_error *err);
bool gg_store_tenant_delete(gg_store *s, const char *tenant, gg_error *err);
bool gg_store_tenant_exists(gg_store *s, const char *tenant, gg_error *err);
/* [{"name", "created_at", "keys", "graphs"}] ordered by name. */
json_t *gg_store_tenants_list(gg_store *s, gg_error *err);

/* ---------------------------------------------------------------------------------------
 * API keys (the store keeps only the keyed hash of the secret; see src/auth)
 * ------------------------------------------------------------------------------------- */

#define GG_KEY_ID_MAX 40
#define GG_TENANT_MAX 64
#define GG_KEY_HASH_LEN 32

typedef struct gg_key_row {
    char id[GG_KEY_ID_MAX];
    char tenant[GG_TENANT_MAX];
    char scopes[160];            /* comma-separated scope names as stored */
    unsigned char hash[GG_KEY_HASH_LEN];
    bool revoked;
    long long created_ms, last_used_ms;
} gg_key_row;

/* "conflict" if the id exists, "not_found" if the tenant does not. */
bool gg_store_key_insert(gg_store *s, const char *id, const char *tenant, const char *name,
                         const unsigned char hash[GG_KEY_HASH_LEN], const char *scopes, gg_error *err);
/* Lookup by key id (any tenant: the id comes from the presented key). "not_found". */
bool gg_store_key_get(gg_store *s, const char *id, gg_key_row *out, gg_error *err);
/* [{"id", "tenant", "name", "scopes":[...], "created_at", "last_used_at", "revoked",
 * "revoked_at"}], never a hash. tenant NULL = every tenant (admin/CLI). */
json_t *gg_store_keys_list(gg_store *s, const char *tenant, gg_error *err);
/* Mark revoked (idempotent). tenant non-NULL restricts to that tenant's keys ("not_found"
 * otherwise). */
bool gg_store_key_revoke(gg_store *s, const char *id, const char *tenant, gg_error *err);
/* Record last use; cheap, best effort (callers batch it, see gg_history_touch_key). */
bool gg_store_key_touch(gg_store *s, const char *id, long long when_ms, gg_error *err);

/* ---------------------------------------------------------------------------------------
 * Graphs: immutable versions and an active pointer per graph
 * ------------------------------------------------------------------------------------- */

typedef struct gg_graph_source {
    char *tenant, *name;
    int version;
    char *source;               /* the uploaded text, exactly */
    size_t source_len;
    char *format;               /* "yaml" or "json" */
    char content_hash[65];      /* sha256 hex of source */
    long long created_ms;
    char *created_by;           /* key id or "cli"; may be NULL */
} gg_graph_source;
void gg_store_graph_source_clear(gg_graph_source *g);

/* Store source as a new version of tenant/name (creating the graph) and make it active,
 * atomically. *version_out gets the new version number (1, 2, ...). "not_found" if the
 * tenant does not exist. */
bool gg_store_graph_put(gg_store *s, const char *tenant, const char *name, const char *source,
                        size_t source_len, const char *format, const char *created_by,
                        int *version_out, gg_error *err);
/* Per-tenant limits checked inside the put's transaction (so parallel uploads cannot
 * overshoot). 0 = no limit. Past max_graphs (a new graph) or max_tenant_bytes (every stored
 * version of every graph of the tenant, the new one included): "quota_exceeded". A graph
 * keeps its max_versions newest versions (and the active one); older ones are dropped as
 * the new version is added, before the bytes are counted. */
typedef struct gg_graph_quota {
    long long max_graphs;
    long long max_tenant_bytes;
    int max_versions;
} gg_graph_quota;
bool gg_store_graph_put_quota(gg_store *s, const char *tenant, const char *name, const char *source,
                              size_t source_len, const char *format, const char *created_by,
                              const gg_graph_quota *q, int *version_out, gg_error *err);
bool gg_store_graph_get_active(gg_store *s, const char *tenant, const char *name,
                               gg_graph_source *out, gg_error *err);
bool gg_store_graph_get_version(gg_store *s, const char *tenant, const char *name, int version,
                                gg_graph_source *out, gg_error *err);
/* [{"name", "active_version", "versions", "created_at", "updated_at"}] ordered by name. */
json_t *gg_store_graphs_list(gg_store *s, const char *tenant, gg_error *err);
/* [{"version", "content_hash", "format", "created_at", "created_by", "active"}] newest
 * first; "not_found" if the graph does not exist. */
json_t *gg_store_graph_versions(gg_store *s, const char *tenant, const char *name, gg_error *err);
/* Point the graph at an existing version (rollback). "not_found" for graph or version. */
bool gg_store_graph_activate(gg_store *s, const char *tenant, const char *name, int version,
                             gg_error *err);
/* Remove the graph and all its versions. "not_found". */
bool gg_store_graph_delete(gg_store *s, const char *tenant, const char *name, gg_error *err);
/* Call fn for the active version of every graph of every tenant (used at start to build
 * the in-memory graphs). fn returning false stops the walk; fn may call the store (the
 * walk holds one pooled connection, the pool has at least two). */
typedef bool (*gg_graph_visit_fn)(void *user, const gg_graph_source *g);
bool gg_store_graphs_foreach_active(gg_store *s, gg_graph_visit_fn fn, void *user, gg_error *err);
/* The same walk without reading the sources: g->source is NULL, format and content_hash
 * empty; only tenant, name and version are set (the gateway lists every graph at start and
 * on every change, and compiles a version only when it is used). */
bool gg_store_graphs_foreach_active_version(gg_store *s, gg_graph_visit_fn fn, void *user, gg_error *err);

/* ---------------------------------------------------------------------------------------
 * Execution history: a batching writer thread, never on the request path
 * ------------------------------------------------------------------------------------- */

typedef enum {
    GG_EXEC_RUNNING,
    GG_EXEC_SUCCEEDED,
    GG_EXEC_FAILED,
    GG_EXEC_CANCELLED,
    GG_EXEC_INTERRUPTED,
    GG_EXEC_INVALID_INPUT  /* a tools/call refused by the tool's inputSchema: never ran (0013) */
} gg_exec_status;
const char *gg_exec_status_name(gg_exec_status st);
/* -1 for an unknown name. */
int gg_exec_status_parse(const char *name);

typedef struct gg_node_exec_record {
    int index;                   /* order of execution within the run, from 0 */
    char *node_id, *node_type;   /* owned */
    long long start_ms, end_ms;  /* wall clock */
    double duration_ms;
    json_t *input, *output;      /* owned references, may be NULL */
    char *error;                 /* owned, NULL when the node succeeded */
    char *input_text, *output_text; /* owned, may be NULL; when set, written instead of
                                     * input/output (JSON text, not bounded) */
} gg_node_exec_record;

typedef struct gg_exec_record {
    char id[33];                 /* gg_exec_id_new; time-ordered */
    char *tenant, *graph, *tool, *key_id; /* owned; key_id NULL on the internal listener */
    int version;
    gg_exec_status status;
    long long started_ms, finished_ms;   /* wall clock; finished 0 while running */
    double duration_ms;
    json_t *arguments, *result;  /* owned references, may be NULL */
    char *error;                 /* owned, may be NULL */
    char *arguments_text, *result_text; /* owned, may be NULL; written instead of
                                         * arguments/result when set */
    gg_node_exec_record *nodes;  /* owned array (gg_exec_record_add_node) */
    size_t n_nodes, cap_nodes;
    json_t *node_history;        /* owned reference (gg_exec_record_set_node_history) */
    bool all_inputs;
    char *nodes_text;            /* owned (gg_exec_record_set_nodes_json) */
    char trace_id[33];           /* W3C trace id in hex, "" when none (migration 0005) */
    char parent_id[33];          /* the calling graph's execution id, "" when none (0008) */
} gg_exec_record;

/* How the node records are written: a run is one executions row and its nodes one JSON
 * text in it, built by gg_history_submit on the submitting thread (see
 * migrations/0003_history_one_row.sql for the stored form). Give them in ONE of three
 * ways, cheapest first:
 *   gg_exec_record_set_node_history — the graph executor's history array, referenced;
 *   gg_exec_record_set_nodes_json   — text already serialized by the caller;
 *   gg_exec_record_add_node         — one struct a node (copies strings, slowest).
 * gg_store_execution_get returns the same node objects whichever was used. */

/* In a node record's text, an input that is this JSON string stands for the run's context
 * when the node ran — every earlier node's latest output by id — which the readers rebuild
 * from the records before it (history_query.c). Its writer (src/graph/provider.c) uses it
 * only while those records rebuild the context exactly, and counts the bytes it stands for
 * against the run's bounds. */
#define GG_HISTORY_CONTEXT_REF "$context"

/* A fresh record with a new id, the strings copied, status RUNNING, started now (the id
 * carries the same millisecond). arguments is referenced (json_incref), not copied: do not
 * change it afterwards. */
gg_exec_record *gg_exec_record_new(const char *tenant, const char *graph, int version,
                                   const char *tool, const char *key_id, json_t *arguments);
/* Append a node record; takes the input/output references (steals them). NULL on OOM.
 * duration_ms starts as end_ms - start_ms; set it on the returned record for sub-ms
 * precision. */
gg_node_exec_record *gg_exec_record_add_node(gg_exec_record *r, const char *node_id,
                                             const char *node_type, long long start_ms,
                                             long long end_ms, json_t *input, json_t *output,
                                             const char *error);
/* The fast path: history is the executor's array of {executionIndex, nodeId, nodeType,
 * startTime, endTime, duration, input?, output?, error?} (gg_graph_result.history); the
 * record takes this reference and never changes the array. gg_history_submit serializes
 * it once, payloads bounded like every stored value: input is kept on every node when
 * all_inputs, else only on nodes that failed; error is an object's "message" or a string.
 * Replaces an earlier history; nodes added with gg_exec_record_add_node follow it. */
void gg_exec_record_set_node_history(gg_exec_record *r, json_t *history, bool all_inputs);
/* The node records as JSON text the caller serialized (taken; freed with the record): an
 * array of executor-shaped objects as above (json_dumps of the history array), or —
 * about half the bytes, which the writer pays for (bench/history) — of the stored
 * positional form [index, node_id, node_type, start, end, duration_ms, output, input,
 * error] (input and error left out when both are null; output null when absent), where
 * start/end are either ms after the record's started_ms or absolute wall-clock ms (any
 * value >= 1e11 is taken as absolute). Written as given — no payload bound, inputs as
 * they are; the caller decides what goes in. Takes precedence over the other two ways. */
void gg_exec_record_set_nodes_json(gg_exec_record *r, char *json_text);
/* A copy of the run-level fields only (no nodes), e.g. to submit the RUNNING state. */
gg_exec_record *gg_exec_record_copy_header(const gg_exec_record *r);
void gg_exec_record_free(gg_exec_record *r);
/* 32 hex characters: 12 of wall-clock milliseconds then 20 random, so ids sort by time. */
void gg_exec_id_new(char out[33]);
/* The start in wall-clock ms an id of gg_exec_id_new carries (its first 12 hex digits);
 * -1 when id is not one (32 lowercase hex digits). Readers find a run by it, and node
 * records may give their times as offsets from it (gg_exec_record_set_nodes_json). */
long long gg_exec_id_start_ms(const char *id);

typedef struct gg_history gg_history;
typedef struct gg_history_options {
    int flush_ms;               /* batch window; 0 = 5 */
    size_t queue_max;           /* records waiting; beyond it submissions are refused; 0 = 65536 */
    long long max_age_ms;       /* retention by age; 0 = keep */
    long long max_count;        /* retention by count (all tenants); 0 = keep */
    size_t max_payload_bytes;   /* larger arguments/result/input/output are stored as
                                 * {"truncated":true,"bytes":N}; 0 = 65536 */
    bool mark_interrupted;      /* at start, mark rows still `running` as `interrupted` */
    const char *replica_id;     /* PostgreSQL (replicas share the database): recorded with each
                                 * run, and mark_interrupted touches only this replica's runs;
                                 * up to 63 bytes; ignored on SQLite (one process, every run) */
    /* A run's node records given as structs or a history array (not as text, which the
     * caller bounds): past this many records or bytes the rest is left out and the text
     * ends with {"truncated":true,"dropped":N,"kept":K}; 0 = no bound. */
    size_t max_run_nodes, max_run_node_bytes;
    int journal_window_ms;      /* batch window while every queued row is in the journal
                                 * (journal_dir): no answer waits for the commit and a crash
                                 * loses none of them, so a longer window costs only how soon
                                 * another process sees a run, and saves the writer work a
                                 * record (fewer, larger commits); 0 = flush_ms */
    int commit_window_ms;       /* batch window while a submitter waits for the commit
                                 * (gg_history_submit_then); 0 = 1, negative = none (commit
                                 * as soon as the writer is free; batches form while it
                                 * writes). Shorter than flush_ms: latency every durable
                                 * call pays */
    size_t backlog_max_bytes;   /* memory the queued records may hold; beyond it
                                 * submissions are refused; 0 = 256 MiB */
    int stop_retry_ms;          /* at stop, how long a batch that cannot be written is
                                 * still retried before it is counted lost; 0 = 3000 */
    bool fsync;                 /* every commit synced to disk (synchronous=FULL): batches
                                 * survive a power loss too, not only a process crash */
    const char *journal_dir;    /* SQLite: a redo log there makes a record durable when it is
                                 * submitted (one write(2), see journal.c), so waiters are
                                 * answered at once and batches stay large; replayed at the
                                 * next start. NULL = none (waiters wait for the commit) */
    bool journal_replay_only;   /* with journal_dir: write what the journal holds (a previous
                                 * process's answers), then do without it */
} gg_history_options;

/* Start the writer thread on its own connection. With mark_interrupted, rows left
 * `running` by a previous process are marked `interrupted` first (count in log).
 *
 * When a batch cannot be written (disk full, I/O error, database locked past its busy
 * timeout) it is kept, never dropped: the writer retries it (oldest first) with a backoff
 * of 100 ms doubling to 5 s, the records behind it stay queued (within queue_max and
 * backlog_max_bytes: past them new records are refused and counted dropped), and
 * gg_history_healthy turns false until a write succeeds again. Only at stop, after
 * stop_retry_ms of failed retries, are the remaining records given up (counted lost). */
gg_history *gg_history_start(gg_store *s, const gg_history_options *o, gg_error *err);
/* gg_exec_record_new for a record that goes to h: the id's random bits come from a pool h
 * refills in blocks, sparing the getrandom system call each id otherwise costs (≈ 0.5 µs).
 * h NULL: exactly gg_exec_record_new. Any thread. */
gg_exec_record *gg_history_record_new(gg_history *h, const char *tenant, const char *graph, int version,
                                      const char *tool, const char *key_id, json_t *arguments);
/* Queue a record (RUNNING at start, the final state at the end; later states of the same
 * id replace earlier ones). Takes ownership of r in every case and frees it before
 * returning, on the calling thread: the arguments, result and node texts are serialized
 * here into one block the writer only binds. Never waits for SQLite: returns false (and
 * counts it as dropped) when the queue is full, memory ran out or the writer stopped. */
bool gg_history_submit(gg_history *h, gg_exec_record *r);
/* "Answered means recorded": gg_history_submit, then committed(user, ok) exactly once.
 *   ok = true:  on the writer thread, right after the transaction holding the record
 *               committed (every waiter of a batch is released together, in order);
 *   ok = false: the record is not known to be stored. On the calling thread before this
 *               returns when it was not queued (then the return value is false too), or
 *               while the writer is failing (see gg_history_start); on the writer thread
 *               when the batch holding it failed its quick retries (the record stays
 *               queued and may still be written later) or was given up at stop.
 * The callback must be quick (it delays the whole batch) and must not call h. */
typedef void (*gg_history_committed_fn)(void *user, bool ok);
bool gg_history_submit_then(gg_history *h, gg_exec_record *r, gg_history_committed_fn committed, void *user);
/* With a journal (gg_history_options.journal_dir): queue r and append it to the journal
 * before returning. True = the record is durable now (answer the call); false = it is not
 * (no journal, the append failed, the queue is full): refuse the call; a record that was
 * queued nonetheless is still written. Never waits for SQLite. */
bool gg_history_submit_journaled(gg_history *h, gg_exec_record *r);
/* True while h has a usable journal and the writer is not failing (then records wait for
 * their commit, as without a journal): gg_history_submit_then's waiters are then answered
 * before it returns (ok = true, unless the append failed) and
 * gg_history_submit_journaled works. Lock-free. */
bool gg_history_journaling(gg_history *h);
/* Queue a key "last used" update (coalesced per batch). */
void gg_history_touch_key(gg_history *h, const char *key_id, long long when_ms);
/* Items queued and not yet through a batch (written or lost). Lock-free: request paths
 * read it on every call to apply backpressure without contending with the writer. */
unsigned long long gg_history_backlog(gg_history *h);
/* False when the backlog is (nearly) at queue_max or backlog_max_bytes: a new record would
 * be refused. Lock-free, for request paths. */
bool gg_history_has_room(gg_history *h);
/* False while the writer cannot write (its last attempt failed); why (may be NULL) gets
 * the database's reason. Lock-free on the healthy path: request paths call it per call. */
bool gg_history_healthy(gg_history *h, char *why, size_t why_size);
/* Wait until everything submitted before this call has been written (tests, shutdown).
 * Returns early (false) while the writer is failing. */
bool gg_history_flush(gg_history *h);
/* Run retention now (the writer also runs it at start and every minute). */
void gg_history_retention_now(gg_history *h);
typedef struct gg_history_stats {
    /* records (key touches are not counted): accepted, committed, refused at submit
     * (queue or memory bound, writer stopped), given up at stop; written counts a record
     * whose tenant was deleted meanwhile too (it is dropped inside the batch) */
    unsigned long long submitted, written, dropped, lost, batches, failed_batches, pruned;
    unsigned long long write_errors;  /* failed write attempts (each retry counts) */
    unsigned long long pending, pending_bytes; /* queued or being retried, now */
    bool failing;                     /* the last write attempt failed */
    unsigned long long writer_cpu_ns; /* CPU time the writer thread has used so far */
} gg_history_stats;
void gg_history_get_stats(gg_history *h, gg_history_stats *out);
/* Write what is queued, stop the thread, free h. NULL is allowed. */
void gg_history_stop(gg_history *h);

/* Mark every `running` execution `interrupted` (finished now). Returns how many, or -1. */
long long gg_store_executions_mark_interrupted(gg_store *s, gg_error *err);
/* Synchronous retention (what the writer runs periodically). Returns rows deleted or -1. */
long long gg_store_executions_prune(gg_store *s, long long max_age_ms, long long max_count,
                                    gg_error *err);

/* ---- what a tenant holds, and the per-tenant history quota (src/store/usage.c) ----------
 * history_usage (migrations 0004, 0019): records (each version of a run is one) and bytes
 * (of history_batches bodies) a tenant's history holds, changed by every write and delete
 * in its own transaction; dropped / dropped_bytes what the quota removed from it, ever. */
typedef struct gg_history_usage {
    long long rows, bytes, dropped, dropped_bytes;
} gg_history_usage;
/* Up to date as of the call; all zero for an unknown tenant. */
bool gg_store_history_usage(gg_store *s, const char *tenant, gg_history_usage *out, gg_error *err);

typedef struct gg_graph_usage {
    long long graphs, versions;   /* graphs and every version kept of them */
    long long stored_bytes;       /* source bytes of every version */
    long long active_bytes;       /* source bytes of the active versions */
} gg_graph_usage;
bool gg_store_graph_usage(gg_store *s, const char *tenant, gg_graph_usage *out, gg_error *err);

/* One quota pass, synchronously: every tenant holding more than max_rows runs or
 * max_bytes of history (0 = no bound) loses its oldest records (whole history_batches rows,
 * the last one trimmed) until it holds at most 90 % of each bound, in short transactions
 * that add what went to its dropped counters. Returns records deleted (*bytes_out, may be NULL: their bytes) or -1. */
long long gg_store_history_quota_enforce(gg_store *s, long long max_rows, long long max_bytes, long long *bytes_out,
                                         gg_error *err);

/* The same pass every interval on a thread with its own connection. On SQLite, while it
 * runs, the history writer of the same store also enforces max_rows in the commit that takes
 * a tenant over it (counted in these stats). */
typedef struct gg_history_quota gg_history_quota;
typedef struct gg_history_quota_options {
    long long max_rows, max_bytes; /* per tenant; 0 = no bound */
    int interval_ms;               /* 0 = 1000 */
} gg_history_quota_options;
typedef struct gg_history_quota_stats {
    unsigned long long passes, failed_passes, dropped, dropped_bytes; /* since start */
} gg_history_quota_stats;
gg_history_quota *gg_history_quota_start(gg_store *s, const gg_history_quota_options *o, gg_error *err);
/* Run a pass now and wait for it (tests). */
void gg_history_quota_now(gg_history_quota *q);
void gg_history_quota_get_stats(gg_history_quota *q, gg_history_quota_stats *out);
/* Stop the thread and free q (NULL allowed). */
void gg_history_quota_stop(gg_history_quota *q);

typedef struct gg_exec_filter {
    const char *graph, *tool, *status; /* NULL = any; status validated ("invalid") */
    long long since_ms;                /* 0 = any */
    int limit;                         /* 1..1000; 0 = 50 */
    const char *cursor;                /* from a previous page's next_cursor, or NULL */
} gg_exec_filter;
/* {"executions":[{"id","tenant","graph","version","tool","key_id","status","started_at",
 * "finished_at","duration_ms","error"}], "next_cursor": string|null}, newest first, the
 * newest version of each run (0019). tenant NULL = all tenants (admin, the CLI; through
 * history_batches_time). A malformed cursor is "invalid". */
json_t *gg_store_executions_list(gg_store *s, const char *tenant, const gg_exec_filter *f,
                                 gg_error *err);
/* One execution with "arguments", "result", "error" and "nodes":[{"index","node_id",
 * "node_type","started_at","finished_at","duration_ms","input","output","error"}], plus
 * "nodes_truncated" (bool) and "nodes_dropped" (records left out past the run's bounds,
 * history.max_run_records / max_run_bytes).
 * tenant NULL = any tenant (admin). "not_found" (also for another tenant's id). */
json_t *gg_store_execution_get(gg_store *s, const char *tenant, const char *id, gg_error *err);

/* ---------------------------------------------------------------------------------------
 * Audit log (synchronous: admin actions are rare and must not be lost)
 * ------------------------------------------------------------------------------------- */

/* actor: key id or "cli"/"internal"; tenant may be NULL; details borrowed, may be NULL. */
bool gg_store_audit_append(gg_store *s, const char *actor, const char *tenant,
                           const char *action, const char *target, json_t *details,
                           gg_error *err);
/* [{"id","ts","actor","tenant","action","target","details"}] newest first; tenant NULL =
 * all; before_id 0 = from the newest; limit 1..1000 (0 = 100). */
json_t *gg_store_audit_list(gg_store *s, const char *tenant, long long before_id, int limit,
                            gg_error *err);


/* ---------------------------------------------------------------------------------------
 * Node specs (implemented in src/store/store_specs.c)
 * Tables from migration 0001: node_specs (id, node_type, subtype, version, spec JSON,
 * source_path, checksum, loaded_at; UNIQUE(node_type, subtype, version)), node_specs_fts
 * (fts5: node_type, subtype, description, tags, params; rowid = node_specs.id) and
 * specs_meta (single row id=1: dir_checksum, source_dir, spec_count, loaded_at).
 * Declare the node-spec functions below this line.
 * ------------------------------------------------------------------------------------- */

/* === BEGIN node-spec section (src/store/store_specs.c) === */
/* One spec as persisted: the resolved document (spec_json) and the text FTS5 indexes.
 * Every pointer is borrowed for the duration of the call. */
typedef struct gg_store_spec_row {
    const char *node_type, *subtype, *version;
    const char *spec_json;     /* the resolved spec document */
    const char *source_path;   /* "TYPE/SUBTYPE.yaml" */
    const char *checksum;      /* sha256 hex of spec_json */
    const char *description, *tags, *params; /* FTS5 columns (tags, params space-joined) */
} gg_store_spec_row;
/* Make rows the current node specs in one transaction: a new node_specs row per new
 * (node_type, subtype, version) — an existing version whose content changed is updated in
 * place — then node_specs_fts rebuilt to index exactly these rows, and specs_meta set to
 * dir_checksum / source_dir / n. */
bool gg_store_specs_replace(gg_store *s, const gg_store_spec_row *rows, size_t n,
                            const char *dir_checksum, const char *source_dir, gg_error *err);
/* specs_meta: *found false when nothing was ever loaded. checksum needs 65 bytes. */
bool gg_store_specs_meta(gg_store *s, char checksum[65], long long *spec_count, bool *found,
                         gg_error *err);
/* The current specs (those in the FTS index) as parsed documents, ordered by type and
 * subtype. New reference; NULL + err on failure. */
json_t *gg_store_specs_current(gg_store *s, gg_error *err);
/* Ranked FTS5 search: match is an FTS5 query expression (built by the caller from user
 * words), node_type NULL = every type, limit 1..100. [{"node_type","subtype","description",
 * "snippet","score"}] best first (score = -bm25, higher is better). A malformed match is
 * err "invalid". */
json_t *gg_store_specs_search(gg_store *s, const char *match, const char *node_type, int limit,
                              gg_error *err);
/* Every stored version of one spec: [{"version","checksum","source_path","loaded_at",
 * "current"}] newest first; empty array when none. */
json_t *gg_store_specs_versions(gg_store *s, const char *node_type, const char *subtype,
                                gg_error *err);
/* === END node-spec section === */

/* ---------------------------------------------------------------------------------------
 * Downstream tool catalogs (catalogs.c, migrations 0006, 0011): what each tenant's
 * downstream MCP servers answered to tools/list, per server identity (see
 * gg_graph_server_identity) with the mcpServers name it was last listed under.
 * ------------------------------------------------------------------------------------- */
typedef struct gg_catalog_put {
    const char *tenant, *identity, *server;
    json_t *tools;               /* a JSON array (borrowed) */
    long long fetched_ms;
    long long max_tenant_bytes;  /* all the tenant's catalogs together; 0 = no bound */
} gg_catalog_put;
/* Replace the catalog of (tenant, identity) unless it is the same (then nothing is
 * written). 1 = stored (changed), 0 = the same, -1 + err: "quota_exceeded" when the
 * tenant's catalogs would pass max_tenant_bytes, "db" when the tenant does not exist. */
int gg_store_downstream_put(gg_store *s, const gg_catalog_put *p, gg_error *err);
/* {"server","identity","tools","tool_count","bytes","fetched_at","fetched_at_ms"} (new
 * reference) of the catalog last listed under the name server; NULL + "not_found" when
 * never fetched. */
json_t *gg_store_downstream_get(gg_store *s, const char *tenant, const char *server, gg_error *err);
/* The same for a server identity; NULL + "not_found" when none. */
json_t *gg_store_downstream_get_identity(gg_store *s, const char *tenant, const char *identity, gg_error *err);
/* Every catalog of the tenant, as _get answers, ordered by server. */
json_t *gg_store_downstream_list(gg_store *s, const char *tenant, gg_error *err);
/* One page ordered by identity, after the identity after (NULL = from the start): at most
 * limit catalogs and, past the first, max_bytes of tools. *next (heap, NULL at the end)
 * is the cursor of the next page. */
json_t *gg_store_downstream_page(gg_store *s, const char *tenant, const char *after, int limit, long long max_bytes,
                                 char **next, gg_error *err);
/* How many catalogs the tenant holds and their bytes. */
bool gg_store_downstream_usage(gg_store *s, const char *tenant, long long *count, long long *bytes, gg_error *err);

/* ---- pinned downstream definitions (pins.c, migration 0017; issue 28) -----------------
 * pins: {identity: {server, on_change, whole?, tools: {tool: definition}, hash: {tool: hex}}} —
 * what tenant/graph's version pinned at upload (written once; a second put adds nothing). */
bool gg_store_pins_put(gg_store *s, const char *tenant, const char *graph, int version, json_t *pins, gg_error *err);
/* {tool: definition} the version pinned on a server, or NULL when none (err set on failure). */
json_t *gg_store_pins_get(gg_store *s, const char *tenant, const char *graph, int version, const char *identity,
                          gg_error *err);
/* [{tool, hash, definition, whole}] the tenant's active versions pinned on a server under
 * review or quarantine (distinct; whole: a `tools: all` entry's). */
json_t *gg_store_pins_active(gg_store *s, const char *tenant, const char *identity, gg_error *err);
/* A change of a pinned definition (kind changed | added | removed; new_hash and definition
 * NULL when removed; diff: JSON text). One row per (tenant, identity, tool). */
typedef struct gg_store_change {
    const char *tenant, *identity, *tool, *id, *server, *kind, *old_hash, *new_hash, *definition, *diff;
    long long created_ms;
} gg_store_change;
/* 1 recorded, 2 recorded in place of an older proposal for the tool, 0 the same one is
 * pending or was rejected, -1 + err (too_many: the tenant holds max_rows). */
int gg_store_change_record(gg_store *s, const gg_store_change *ch, int max_rows, gg_error *err);
/* Drop a pending change (the server went back to the pinned definition). */
bool gg_store_change_clear(gg_store *s, const char *tenant, const char *identity, const char *tool, gg_error *err);
/* [{id, server, identity, tool, kind, status, old_hash, new_hash, definition, diff, created_at}]. */
json_t *gg_store_changes_list(gg_store *s, const char *tenant, gg_error *err);
/* Approve (the tenant's pins on that tool take the new definition; the pins generation is
 * bumped) or reject (kept as rejected) a pending change: the row as it was, or NULL + err
 * (not_found, conflict: rejected already). */
json_t *gg_store_change_decide(gg_store *s, const char *tenant, const char *id, bool approve, gg_error *err);
/* The tenants an approval moved the pins generation for since the value since: ["acme", ...],
 * or NULL + err (an approval also sets the approving tenant's own counter). */
json_t *gg_store_pins_tenants_since(gg_store *s, long long since, gg_error *err);

/* ---- tasks of the MCP tasks extension (tasks.c, migration 0009) ----------------------
 * A row per task; every call names the tenant (another tenant's id is not found). */
typedef struct gg_task_row {
    char id[48], tenant[64], graph[64], tool[160], key_id[64], status[16];
    char owner[64]; /* the replica running it ("" = unchanged by gg_store_task_set) */
    int version, client_caps;
    long long created_ms, updated_ms, ttl_ms;
    json_t *arguments, *result, *error, *input_requests, *input_responses; /* owned (may be NULL) */
    char *request_state;                                                     /* owned (may be NULL) */
} gg_task_row;
void gg_task_row_clear(gg_task_row *r);
/* Insert a working task (id, tenant, graph, version, tool, key_id, client_caps, arguments,
 * ttl_ms); first deletes the tenant's ended tasks past their TTL. "too_many" when the
 * tenant already has max_live tasks working or waiting (0 = no bound). */
bool gg_store_task_insert(gg_store *s, const gg_task_row *r, long long max_live, gg_error *err);
/* The task (out owns its values; gg_task_row_clear) or "not_found". */
bool gg_store_task_get(gg_store *s, const char *tenant, const char *id, gg_task_row *out, gg_error *err);
/* Set status, result, error, input_requests, input_responses and request_state of r's row
 * when its status is only_from (NULL: working or input_required); *changed says whether it was. */
bool gg_store_task_set(gg_store *s, const gg_task_row *r, const char *only_from, bool *changed, gg_error *err);
/* At start: the working tasks of owner (NULL: all — one process per SQLite database) failed
 * as interrupted; how many, or -1 + err. */
long long gg_store_tasks_mark_interrupted(gg_store *s, const char *owner, gg_error *err);

/* ---------------------------------------------------------------------------------------
 * Views of the tenant-wide MCP endpoint (views.c, migration 0010): a named, validated JSON
 * definition per tenant (the gateway checks its shape; the store keeps what it gets).
 * ------------------------------------------------------------------------------------- */
/* Create or replace; "quota_exceeded" when creating would pass max_views (0 = no bound);
 * *created tells which. */
bool gg_store_view_put(gg_store *s, const char *tenant, const char *name, json_t *definition, int max_views,
                       bool *created, gg_error *err);
/* {"name","definition","updated_at"} (new reference) or NULL + "not_found". */
json_t *gg_store_view_get(gg_store *s, const char *tenant, const char *name, gg_error *err);
/* Every view of the tenant, as _get answers, ordered by name. */
json_t *gg_store_views_list(gg_store *s, const char *tenant, gg_error *err);
/* "not_found" when there is none. */
bool gg_store_view_delete(gg_store *s, const char *tenant, const char *name, gg_error *err);

/* ---- a tenant's OAuth authorization servers (oauth.c, migration 0014) ----------------
 * One validated JSON definition per tenant (src/auth checks its shape; the store keeps
 * what it gets). put replaces it; get answers {"definition","updated_at"} (new reference)
 * or NULL + "not_found"; delete: "not_found" when there is none. Each change bumps the
 * oauth generation. */
bool gg_store_oauth_put(gg_store *s, const char *tenant, json_t *definition, gg_error *err);
json_t *gg_store_oauth_get(gg_store *s, const char *tenant, gg_error *err);
bool gg_store_oauth_delete(gg_store *s, const char *tenant, gg_error *err);

/* ---- tenant secrets (vault.c: the key and the crypto; secrets.c: rows, migration 0016) --
 * A value is sealed with XChaCha20-Poly1305 under the master key (secrets.key /
 * secrets.key_file), with "tenant\0name" as associated data, so a row copied to another
 * tenant or name does not open. Each row keeps the key id (a short hash of the key) and a
 * fingerprint (a hash keyed by a subkey of it); values never leave the store but through
 * gg_store_secret_reveal. Every change bumps the secrets generation. */
#define GG_STORE_VAULT_KEY_BYTES 32
#define GG_STORE_VAULT_NONCE_BYTES 24
#define GG_STORE_VAULT_ID_LEN 16 /* hex characters of a key id or a fingerprint */
#define GG_STORE_VAULT_AD_MAX 256
#define GG_STORE_SECRET_NAME_MAX 64
#define GG_STORE_SECRET_VALUE_MAX (16 * 1024)
typedef struct gg_store_vault {
    bool ready;
    unsigned char key[GG_STORE_VAULT_KEY_BYTES];
    unsigned char fp_key[32];
    char key_id[GG_STORE_VAULT_ID_LEN + 1];
} gg_store_vault;
/* A key from text (64 hex digits or base64 of 32 bytes; blanks around ignored) or from a
 * file holding that text; false + err "invalid_config" (never quoting the text). */
bool gg_store_vault_init(gg_store_vault *v, const char *text, gg_error *err);
bool gg_store_vault_load_file(gg_store_vault *v, const char *path, gg_error *err);
void gg_store_vault_wipe(gg_store_vault *v);
/* Seal: a new random nonce into nonce, the ciphertext (malloc'd, *out_len bytes). Open:
 * the value (malloc'd, NUL-terminated, *out_len bytes; free with gg_store_secret_free), or
 * NULL + err "secret_unreadable" (wrong key, tenant, name, or a changed byte). */
unsigned char *gg_store_vault_seal(const gg_store_vault *v, const char *tenant, const char *name,
                                   const unsigned char *value, size_t len,
                                   unsigned char nonce[GG_STORE_VAULT_NONCE_BYTES], size_t *out_len, gg_error *err);
char *gg_store_vault_open(const gg_store_vault *v, const char *tenant, const char *name,
                          const unsigned char nonce[GG_STORE_VAULT_NONCE_BYTES], const unsigned char *ct, size_t len,
                          size_t *out_len, gg_error *err);
void gg_store_vault_fingerprint(const gg_store_vault *v, const char *tenant, const char *name,
                                const unsigned char *value, size_t len, char out[GG_STORE_VAULT_ID_LEN + 1]);
/* Wipe and free a revealed value. */
void gg_store_secret_free(char *value, size_t len);
/* [A-Za-z_][A-Za-z0-9_]{0,63} */
bool gg_store_secret_name_ok(const char *name);
/* Store (seal) a value: 1 created, 0 replaced, -1 + err (not_found: no tenant). */
int gg_store_secret_put(gg_store *s, const gg_store_vault *v, const char *tenant, const char *name,
                        const char *value, size_t len, gg_error *err);
/* Metadata only: [{name, fingerprint, created, updated, last_used}] by name; one of them
 * (not_found when absent). */
json_t *gg_store_secrets_list(gg_store *s, const char *tenant, gg_error *err);
json_t *gg_store_secret_meta(gg_store *s, const char *tenant, const char *name, gg_error *err);
bool gg_store_secret_delete(gg_store *s, const char *tenant, const char *name, gg_error *err);
/* The value, opened (free with gg_store_secret_free); NULL + err not_found when absent. */
char *gg_store_secret_reveal(gg_store *s, const gg_store_vault *v, const char *tenant, const char *name,
                             size_t *len, gg_error *err);
/* last_used of these rows := at_ms (names: "tenant\0name" pairs, n of them); no bump. */
bool gg_store_secrets_touch(gg_store *s, const char *const *tenants, const char *const *names, size_t n,
                            long long at_ms, gg_error *err);
/* How many rows there are, and how many were sealed under another key than key_id
 * (NULL: counts every row as other); -1 + err. */
long long gg_store_secrets_count(gg_store *s, const char *key_id, long long *other, gg_error *err);
/* Re-encrypt every row from old to new in one transaction (a row old cannot open fails
 * it all, nothing changed); the number of rows, or -1 + err. */
long long gg_store_secrets_rekey(gg_store *s, const gg_store_vault *old, const gg_store_vault *new_key, gg_error *err);

/* ---- per-user grants of downstream OAuth servers (user_grants.c, migration 0018) --------
 * What one principal (its key_id, as principals.id) granted for one mcpServers entry of a
 * tenant whose auth asks each caller's consent: an opaque value (the OAuth client's JSON of
 * tokens and client) sealed like a secret, with "user-grant\n<principal>\n<server>" as the name
 * in the associated data, so a row copied to another tenant, principal or server does not
 * open. Only the value is secret; expires_ms (the access token's expiry, 0 = unknown) is not. */
#define GG_STORE_GRANT_PRINCIPAL_MAX 64
#define GG_STORE_GRANT_SERVER_MAX 100
#define GG_STORE_GRANT_VALUE_MAX (32 * 1024)
/* Store (seal) a grant, replacing the principal's earlier one: 1 created, 0 replaced, -1 +
 * err (invalid_argument: a name too long or with a newline; not_found: no tenant). */
int gg_store_user_grant_put(gg_store *s, const gg_store_vault *v, const char *tenant, const char *server,
                            const char *principal, const char *value, size_t len, long long expires_ms, gg_error *err);
/* The value, opened (free with gg_store_secret_free); NULL + err not_found when absent,
 * secret_unreadable when it does not open (another key, a copied or damaged row). */
char *gg_store_user_grant_get(gg_store *s, const gg_store_vault *v, const char *tenant, const char *server,
                              const char *principal, size_t *len, gg_error *err);
/* Delete one principal's grant (principal NULL: every grant of that server); the number of
 * rows deleted, or -1 + err. */
long long gg_store_user_grant_delete(gg_store *s, const char *tenant, const char *server, const char *principal,
                                     gg_error *err);
/* [{server, users}] of a tenant by server: how many principals hold a grant (no value read). */
json_t *gg_store_user_grants_summary(gg_store *s, const char *tenant, gg_error *err);
/* Like gg_store_secrets_count and gg_store_secrets_rekey, for the grants' rows. */
long long gg_store_user_grants_count(gg_store *s, const char *key_id, long long *other, gg_error *err);
long long gg_store_user_grants_rekey(gg_store *s, const gg_store_vault *old, const gg_store_vault *new_key,
                                     gg_error *err);

/* ---- who called with an OAuth token (principals.c, migration 0015) --------------------
 * note: insert or refresh (issuer, subject, client_id, scopes, last_seen) of a principal;
 * list: the tenant's, most recently seen first (at most 1,000); get: one by id, or NULL
 * (also on a store error: err set). Rows are {"id","issuer","subject","client_id","scopes",
 * "first_seen","last_seen"}. No token is stored. */
typedef struct gg_store_principal {
    const char *tenant, *id, *issuer, *subject, *client_id, *scopes;
    long long seen_ms;
} gg_store_principal;
bool gg_store_principal_note(gg_store *s, const gg_store_principal *p, gg_error *err);
json_t *gg_store_principals_list(gg_store *s, const char *tenant, gg_error *err);
json_t *gg_store_principal_get(gg_store *s, const char *tenant, const char *id, gg_error *err);

/* ---- input-required rounds answered once (rounds.c, migration 0012) -----------------
 * Claim a requestState's nonce for the call answering it: true for the first claim,
 * "already_answered" for every later one (any replica sharing the store); the row lives
 * until expires_ms (past the state's own expiry). execution (may be NULL) and round are
 * kept for diagnostics. */
bool gg_store_round_claim(gg_store *s, const char *nonce, const char *tenant, const char *execution, int round,
                          long long expires_ms, gg_error *err);

#endif
