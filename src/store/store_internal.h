/* store_internal.h — what the files of src/store share with each other (not a public
 * header: only the .c files of src/store include it). The node-spec functions in store_specs.c use it
 * to borrow a connection and its prepared-statement cache.
 *
 * Ownership: a borrowed connection belongs to the borrowing thread until
 * gg_store_conn_release; statements returned by gg_store_conn_stmt belong to the
 * connection (reset them, never finalize them).
 */
#ifndef GG_STORE_INTERNAL_H
#define GG_STORE_INTERNAL_H

#include <libpq-fe.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>

#include "store/db.h"
#include "store/store.h"

/* A duration in ms rounded to the microsecond, as every duration is stored and served (a
 * monotonic clock's difference otherwise reads 0.48612600000342354); 0 when not finite. */
static inline double gg_store_round_us(double ms) { return isfinite(ms) ? round(ms * 1000.0) / 1000.0 : 0; }

#define GG_STORE_STMT_CACHE 96

struct gg_store_conn {
    sqlite3 *db;          /* SQLite backend */
    PGconn *pg;           /* PostgreSQL backend (db is NULL) */
    struct gg_store *store;
    unsigned epoch;       /* PostgreSQL: bumped on reconnect (server statements are gone) */
    bool unopened;        /* PostgreSQL: a lazy pool slot not connected yet (pg is NULL) */
    unsigned n_named;     /* PostgreSQL: names of server-side prepared statements */
    int changes;          /* PostgreSQL: rows of the last statement */
    char errmsg[512];     /* PostgreSQL: the last error */
    char replica[64];     /* PostgreSQL: graphgate.replica for this session ("" = none) */
    struct {
        const char *sql; /* identity: the address of a static SQL string */
        gg_db_stmt *stmt;
    } cache[GG_STORE_STMT_CACHE];
    int n_cached;
    struct gg_store_conn *next_free;
    double busy_since_ms; /* SQLite: when the current wait for another writer began */
    /* history bodies (history_body.c): zstd contexts and their buffers, made when first used */
    void *zc, *zd;
    char *zout, *zin;
    size_t zout_cap, zin_cap;
};

struct gg_store {
    char *path;                    /* SQLite file, or the PostgreSQL URL (password hidden) */
    char *url;                     /* PostgreSQL connection URL/conninfo; NULL = SQLite */
    int statement_timeout_ms;      /* PostgreSQL statement_timeout */
    long long retry_at_ms;         /* PostgreSQL: no reconnect attempt before (backoff) */
    int backoff_ms;
    int pool_size, busy_timeout_ms;
    pthread_mutex_t lock;          /* guards the pool fields below */
    pthread_cond_t cond;
    gg_store_conn *free_list;
    int n_open, n_borrowed;
    bool closing;
    /* What the last gg_store_migrate established (for gg_store_migrations_current). */
    int expected_version, expected_count;
    /* SQLite: the quota keeper running on this store (usage.c), whose max_rows the history
     * writer enforces in its own commits; guarded by lock. NULL = none. */
    struct gg_history_quota *quota;
};

/* Borrow a pooled connection (waits while all are in use). Never NULL once the store is
 * open, except on a closing store (then err "db"). */
gg_store_conn *gg_store_conn_acquire(gg_store *s, gg_error *err);
void gg_store_conn_release(gg_store *s, gg_store_conn *c);
/* The connection's prepared statement for sql (prepared on first use, then reused: pass
 * the same static string every time — the cache is keyed by its address). The returned
 * statement is reset with bindings cleared. NULL + err ("db") on a SQL error. */
gg_db_stmt *gg_store_conn_stmt(gg_store_conn *c, const char *sql, gg_error *err);
/* Step st once, for a statement that returns no rows (INSERT, UPDATE, DELETE), then reset
 * it (gg_db_changes still reads its count). True when the step gave SQLITE_DONE; otherwise
 * false with err set from the connection's error, named by what (gg_store_set_db_error). */
bool gg_store_step_done(gg_store_conn *c, gg_db_stmt *st, const char *what, gg_error *err);
/* Run a statement-less SQL (BEGIN, COMMIT, ...). */
bool gg_store_conn_exec(gg_store_conn *c, const char *sql, gg_error *err);
/* Set err from the connection's last SQLite error ("db", or "conflict" for a constraint). */
void gg_store_set_db_error(gg_store_conn *c, gg_error *err, const char *what);

/* Open a connection configured like the pool's (WAL, foreign keys, busy timeout). */
gg_store_conn *gg_store_conn_open(gg_store *s, gg_error *err);
void gg_store_conn_close(gg_store_conn *c);
/* PostgreSQL: reconnect a connection the server dropped (with the store's backoff);
 * true at once on SQLite or a live connection. */
bool gg_store_conn_ensure(gg_store_conn *c, gg_error *err);
/* PostgreSQL: the replica id this connection records with the runs it writes (kept across
 * reconnects); no-op on SQLite or for NULL/"". */
bool gg_store_conn_set_replica(gg_store_conn *c, const char *replica, gg_error *err);

/* Bind a possibly-NULL text. */
int gg_store_bind_text(gg_db_stmt *st, int idx, const char *text);
/* Copy a column's text (NULL stays NULL); sets *oom on allocation failure. */
char *gg_store_column_strdup(gg_db_stmt *st, int col, bool *oom);

/* The body of a write transaction: false + err rolls it back. */
typedef bool (*gg_store_tx_fn)(gg_store_conn *c, void *user, gg_error *err);
/* rows.c: fn inside BEGIN IMMEDIATE … COMMIT on c, a connection the caller holds (ROLLBACK
 * when fn or COMMIT fails; c is outside a transaction afterwards either way). On
 * PostgreSQL BEGIN IMMEDIATE takes the store's advisory lock (store.c). Every store write
 * transaction goes through here or gg_store_write_tx. */
bool gg_store_conn_write_tx(gg_store_conn *c, gg_store_tx_fn fn, void *user, gg_error *err);
/* rows.c: gg_store_conn_write_tx on a connection borrowed from the pool for the call. */
bool gg_store_write_tx(gg_store *s, gg_store_tx_fn fn, void *user, gg_error *err);
/* rows.c: the rows of sql bound to (tenant, key — not bound when NULL), each made by row,
 * as a new array; NULL + err (a db error names table). */
json_t *gg_store_tenant_rows(gg_store *s, const char *sql, const char *tenant, const char *key,
                             json_t *(*row)(gg_db_stmt *st), const char *table, gg_error *err);
/* PostgreSQL: NOTIFY channel "graphgate" with what (notify.c maps it to a GG_WATCH_* bit). */
bool gg_store_notify(gg_store_conn *c, const char *what, gg_error *err);
/* Bump a generation counter inside the caller's transaction. */
bool gg_store_bump_generation(gg_store_conn *c, gg_store_generation which, gg_error *err);
/* A JSON TEXT column as a value (NULL → json null; non-JSON text → string). */
json_t *gg_store_json_column(gg_db_stmt *st, int col);
/* Milliseconds as an ISO-8601 JSON string (<= 0 → null). */
json_t *gg_store_time_json(long long ms);
/* sha256 of bytes as 64 hex characters + NUL. */
void gg_store_sha256_hex(const void *data, size_t len, char out[65]);
/* Last-used update on a given connection (the history writer's). */
bool gg_store_key_touch_conn(gg_store_conn *c, const char *id, long long when_ms, gg_error *err);
/* History helpers on a given connection (history_write.c). Mark-interrupted: for each
 * history_running entry (of this replica on PostgreSQL) whose newest version is running,
 * an interrupted version in a new row, and the entries cleared, in one transaction. */
long long gg_store_executions_mark_interrupted_conn(gg_store_conn *c, gg_error *err);
long long gg_store_executions_prune_conn(gg_store_conn *c, long long max_age_ms, long long max_count,
                                         gg_error *err);
/* The per-tenant quota pass on a given connection (usage.c); progress (may be NULL) is
 * told the rows and bytes of each slice once it is committed. */
typedef void (*gg_quota_progress_fn)(void *ctx, long long rows, long long bytes);
long long gg_store_history_quota_enforce_conn(gg_store_conn *c, long long max_rows, long long max_bytes,
                                              long long *bytes_out, gg_quota_progress_fn progress, void *ctx,
                                              gg_error *err);

/* ---- history_batches (migrations/0019): the format writer and readers share ------------- */

/* A row's records start within this many ms of each other (last_ms - first_ms <= SPAN), so
 * a run started at t lies in a row of its tenant with first_ms <= t and last_ms in
 * [t, t + SPAN]. */
#define GG_HIST_SPAN_MS 10
/* A row's body stops before passing this many bytes (one bigger record: a row of its own).
 * 16 KB, not 0019's 1 MiB: a get by id copies every row of its window out of SQLite whole,
 * so smaller rows make it 25-35 % cheaper at no measurable write cost (bench/history/README.md,
 * "Batch layout, implemented"). Rows already written keep their size; readers take any. */
#define GG_HIST_BODY_MAX (16 << 10)
/* The most text a row's body can decompress to: SQLite's own limit on a value (its default
 * SQLITE_MAX_LENGTH), which the text would have met had it been stored as it is. */
#define GG_HIST_ROW_TEXT_MAX 1000000000ULL

/* A row's body bound at idx in its stored form (history_body.c): a zstd frame on SQLite
 * for a long text when that is smaller, else the text. The frame lives in c until the next bind on c, so
 * step the statement before binding another body. false + err when memory ran out. */
bool gg_history_bind_body(gg_store_conn *c, gg_db_stmt *st, int idx, const char *text, size_t len, gg_error *err);
/* A row's body text from column col of a stepped statement, *len its bytes: a TEXT column
 * as it is (the statement's memory), a BLOB decompressed into c (NUL-terminated; valid until
 * the next call on c). NULL + err when the frame is malformed or memory ran out. */
const char *gg_history_body_text(gg_store_conn *c, gg_db_stmt *st, int col, size_t *len, gg_error *err);
/* What the two above keep in c, freed (gg_store_conn_close). */
void gg_history_body_free(gg_store_conn *c);
/* SQL history_text(body) on a SQLite connection: a body as text (the executions view reads
 * bodies with it, migrations/0020). false when SQLite refused it. */
bool gg_history_body_register(sqlite3 *db);
/* The fields of a record's line, a JSON array in this order (status: gg_exec_status;
 * finished_ms 0 = none; duration in µs; arguments/result/nodes: the stored JSON inlined). */
enum {
    GG_HL_ID = 0,
    GG_HL_STATUS = 1,
    GG_HL_STARTED = 2,
    GG_HL_FINISHED = 3,
    GG_HL_DURATION_US = 4,
    GG_HL_VERSION = 5,
    GG_HL_GRAPH = 6,
    GG_HL_TOOL = 7,
    GG_HL_KEY_ID = 8,
    GG_HL_ERROR = 9,
    GG_HL_ARGUMENTS = 10,
    GG_HL_RESULT = 11,
    GG_HL_NODES = 12,
    GG_HL_TRACE_ID = 13,
    GG_HL_PARENT = 14,
    GG_HL_FIELDS = 15
};

/* history_write.c. A record's line where its caller keeps it (text, len: with its newline),
 * read in place: the writer copies each line once, into its row's body. */
typedef struct gg_hist_line {
    const char *tenant, *id; /* id: 32 characters */
    long long started_ms;
    int status;              /* gg_exec_status */
    const char *text;
    size_t len;
    unsigned long long id_hash; /* the history writer's (history.c: its set of running ids) */
} gg_hist_line;
/* Inside the caller's write transaction: lines sorted by (tenant, start, id), cut into rows
 * (GG_HIST_SPAN_MS, GG_HIST_BODY_MAX), one INSERT a row, each tenant's n and bytes added to
 * history_usage. body: scratch space. quota_rows > 0: a tenant this takes over it loses its
 * oldest records down to 90 % in the same transaction (counted as dropped; *dropped /
 * *dropped_bytes, which may be NULL, get what went). */
bool gg_history_write_lines(gg_store_conn *c, gg_hist_line *lines, size_t n, gg_strbuf *body,
                            long long quota_rows, long long *dropped, long long *dropped_bytes, gg_error *err);
/* usage.c: the max_rows of the quota keeper on s (SQLite), 0 when none; and what the writer
 * dropped for it, counted into the keeper's stats. */
long long gg_store_quota_rows(gg_store *s);
void gg_store_quota_counted(gg_store *s, long long rows, long long bytes);
/* history_running: a running record written / its final state written (inside the writer's
 * transaction). */
bool gg_history_running_add(gg_store_conn *c, const char *id, const char *tenant, long long started_ms, gg_error *err);
bool gg_history_running_del(gg_store_conn *c, const char *id, gg_error *err);
/* The start (third field) of a record's line; -1 when malformed. */
long long gg_history_line_started(const char *p, size_t n);
/* Inside the caller's write transaction: the tenant's oldest rows deleted whole (a row only
 * partly needed: its oldest records cut) until need_rows records and need_bytes body bytes
 * went (0 = no need), at most a slice of rows; counted out of history_usage and into its
 * dropped counters. *gone / *gone_bytes: what went (0: nothing left). */
bool gg_history_drop_oldest(gg_store_conn *c, const char *tenant, long long need_rows, long long need_bytes,
                         long long *gone, long long *gone_bytes, gg_error *err);

/* ---- exec_record.c / history.c: records and their ids -------------------------------- */

#define GG_EXEC_ID_RANDOM_BYTES 10
/* A record whose id's random part is rnd (the history writer draws it from a pool). */
gg_exec_record *gg_exec_record_make(const unsigned char rnd[GG_EXEC_ID_RANDOM_BYTES], const char *tenant,
                                    const char *graph, int version, const char *tool, const char *key_id,
                                    json_t *arguments);

/* ---- history_text.c: a run's stored texts, built on the submitting thread --------------- */

/* Offsets in the buffer of a record's texts, each NUL-terminated; SIZE_MAX = absent. */
typedef struct gg_history_texts {
    size_t args, result, nodes;
} gg_history_texts;
/* Append r's arguments, result and node records (JSON values over max bytes replaced by a
 * marker; at most max_nodes nodes / max_node_bytes of them, 0 = no bound) to b. */
void gg_history_build_texts(gg_strbuf *b, const gg_exec_record *r, size_t max, size_t max_nodes, size_t max_node_bytes,
                            gg_history_texts *t);


/* journal.c — the history's redo log (see the top of journal.c). One process appends:
 * gg_history_journal_open fails with code "busy" while another holds dir. */
struct iovec;
typedef struct gg_history_journal gg_history_journal;
gg_history_journal *gg_history_journal_open(const char *dir, gg_error *err);
/* Each entry of the segments present at open, oldest first (fn false = stop, error).
 * Returns entries read, or -1; *torn counts entries cut short by a crash (skipped). */
typedef bool (*gg_history_journal_fn)(void *user, const unsigned char *payload, size_t n);
long long gg_history_journal_replay(gg_history_journal *j, gg_history_journal_fn fn, void *user, long long *torn, gg_error *err);
/* Remove the segments present at open (their entries are committed). */
void gg_history_journal_drop_replayed(gg_history_journal *j);
/* Append one entry made of parts (parts[0] non-empty); its number (from 1), or 0 when it
 * could not be made durable (too big for a segment, no segment could be allocated).
 * Any thread. */
unsigned long long gg_history_journal_append(gg_history_journal *j, const struct iovec *parts, int n_parts);
/* Entries numbered up to upto are committed (and, entries being committed in order, all
 * before them): remove what only holds committed entries. */
void gg_history_journal_release(gg_history_journal *j, unsigned long long upto);
/* False after a write could not be undone (appends have stopped). Lock-free. */
bool gg_history_journal_usable(gg_history_journal *j);
/* Close; with all_committed, remove every segment too. NULL is allowed. */
void gg_history_journal_close(gg_history_journal *j, bool all_committed);

/* secrets.c: a value sealed by the vault (vault.c) as a row's text columns, and opened from
 * them (secret_unreadable when it does not open); user_grants.c seals its rows the same way. */
typedef struct gg_store_sealed {
    char nonce[2 * GG_STORE_VAULT_NONCE_BYTES + 1]; /* hex */
    char *value;                                    /* base64 (malloc'd) */
    char fp[GG_STORE_VAULT_ID_LEN + 1];
} gg_store_sealed;
bool gg_store_seal_text(const gg_store_vault *v, const char *tenant, const char *name, const char *value, size_t len,
                        gg_store_sealed *out, gg_error *err);
char *gg_store_open_text(const gg_store_vault *v, const char *tenant, const char *name, const char *nonce_hex,
                         const char *b64, size_t *len, gg_error *err);
/* secrets.c: the one sealed row sql selects as (nonce, value), keys[0..n-1] bound to ?1..?n
 * (keys[0]: the tenant), opened with v as the tenant's name. 1: *out holds the value
 * (malloc'd, *len bytes); 0: no such row (err untouched); -1: a database error naming table;
 * -2: the row does not open (err: the vault's, its message quoting name). */
int gg_store_sealed_read(gg_store *s, const gg_store_vault *v, const char *sql, const char *table,
                         const char *const *keys, int n, const char *name, char **out, size_t *len, gg_error *err);
/* secrets.c: a table of sealed rows, for gg_store_sealed_rekey. all_sql selects every row:
 * its nkeys (1..GG_STORE_SEALED_KEYS_MAX) key columns, the first the tenant, then nonce and
 * value. name: the vault's name of a row (in buf, or one of keys), or NULL + err when its
 * keys make none; write: the row's new seal stored; unreadable (NULL: none): err's message
 * replaced when a row does not open with the old key. */
#define GG_STORE_SEALED_KEYS_MAX 3
typedef struct gg_store_sealed_table {
    const char *table, *all_sql;
    int nkeys;
    const char *(*name)(const char *const *keys, char *buf, size_t cap, gg_error *err);
    bool (*write)(gg_store_conn *c, const char *const *keys, const gg_store_sealed *sl, const char *key_id,
                  long long now_ms, gg_error *err);
    void (*unreadable)(const char *const *keys, gg_error *err);
} gg_store_sealed_table;
/* secrets.c: every row of t opened with old and sealed with new_key in one transaction (a
 * row old cannot open fails it all, nothing changed): the rows, or -1 + err. */
long long gg_store_sealed_rekey(gg_store *s, const gg_store_sealed_table *t, const gg_store_vault *old,
                                const gg_store_vault *new_key, gg_error *err);
/* secrets.c: sql's one row of (all rows, those not sealed by key_id), key_id bound to ?1: the
 * first (*other: the second), or -1 with a database error naming table. */
long long gg_store_sealed_count(gg_store *s, const char *sql, const char *table, const char *key_id, long long *other,
                                gg_error *err);

#endif
