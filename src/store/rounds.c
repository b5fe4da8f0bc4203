/* rounds.c — input-required rounds answered once (migrations/0012_request_rounds.sql).
 * The nonce a sealed requestState carries is claimed by one INSERT that does nothing when
 * the row exists: the database decides the single winner, however many calls or replicas
 * answer the same state at once. Rows past their expiry are pruned on the next claim (the
 * index on expires_at keeps that to the expired rows).
 */
#include "store/store_internal.h"

#include <stdio.h>

static const char SQL_ROUND_PRUNE[] = "DELETE FROM request_rounds WHERE expires_at < ?1";
static const char SQL_ROUND_CLAIM[] =
    "INSERT INTO request_rounds (nonce, tenant, execution, round, answered_at, expires_at)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (nonce) DO NOTHING";

/* Expired claims go; their states no longer open, so forgetting them admits nothing. A
 * failure here is not the claim's: it only leaves rows for the next one. */
static void prune(gg_store_conn *c, long long now) {
    gg_error e = GG_ERROR_INIT;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_ROUND_PRUNE, &e);
    if (st) {
        gg_db_bind_int64(st, 1, now);
        (void)gg_db_step(st);
        gg_db_reset(st);
    }
    gg_error_clear(&e);
}

/* See store.h. */
bool gg_store_round_claim(gg_store *s, const char *nonce, const char *tenant, const char *execution, int round,
                          long long expires_ms, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    long long now = gg_wall_ms();
    prune(c, now);
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_ROUND_CLAIM, err);
    bool ok = false;
    if (st) {
        gg_store_bind_text(st, 1, nonce);
        gg_store_bind_text(st, 2, tenant ? tenant : "");
        gg_store_bind_text(st, 3, execution);
        gg_db_bind_int64(st, 4, round);
        gg_db_bind_int64(st, 5, now);
        gg_db_bind_int64(st, 6, expires_ms);
        if (gg_store_step_done(c, st, "request_rounds", err)) {
            ok = gg_db_changes(c) == 1;
            if (!ok)
                gg_error_set(err, "already_answered", "this input request was already answered (round %d): a "
                             "requestState is single-use; call the tool again without it to start a new run", round);
        }
    }
    gg_store_conn_release(s, c);
    return ok;
}
