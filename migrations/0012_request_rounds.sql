-- 0012: input-required rounds of MCP 2026-07-28 answered once. Every requestState the
-- gateway seals carries a random nonce; the call that answers it first inserts its row here
-- (INSERT ... ON CONFLICT DO NOTHING: one winner however many replicas race), and a state
-- whose nonce is already here is refused ("already_answered") before its run goes on, so a
-- replayed state repeats no side effect and every answered round is the one recorded.
--   nonce: 32 hex digits from the sealed state; execution / round: the run's record and the
--   round the answer belongs to (diagnostics); expires_at (unix ms): past the state's own
--   expiry, when the row may go (a state that old no longer opens).
CREATE TABLE request_rounds (
    nonce TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    execution TEXT,
    round INTEGER NOT NULL,
    answered_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX request_rounds_expires ON request_rounds (expires_at);
