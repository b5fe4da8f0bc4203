-- 0015: who called with an OAuth access token (src/store/principals.c): one row per tenant and
-- principal, noted when a token is first verified (not per call), so the history keeps its
-- compact key_id (for a token, a hash of issuer + subject, src/auth/issuers.c) and the admin
-- API and the console can still say who that was. No token is ever stored.
--   id: the principal's key_id; scopes: graphgate scopes the last token granted (canonical
--   text); first_seen / last_seen: unix ms.
CREATE TABLE principals (
    tenant     TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    id         TEXT NOT NULL,
    issuer     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    client_id  TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    first_seen BIGINT NOT NULL,
    last_seen  BIGINT NOT NULL,
    PRIMARY KEY (tenant, id)
);
