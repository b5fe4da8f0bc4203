-- 0016: a tenant's secrets (src/store/secrets.c, src/store/vault.c): values that graphs
-- reference as ${secrets.NAME} in mcpServers headers, env and url. value is the
-- XChaCha20-Poly1305 ciphertext (base64) under the master key secrets.key, with nonce (hex)
-- and "tenant\0name" as associated data; key_id names the key (a short hash, never the
-- key), so a server started with another key refuses to start. fingerprint is a hash keyed
-- by the master key, shown instead of the value. Times in unix ms; last_used_at is written
-- in batches (at most once a minute per secret and replica). Every change bumps the
-- "secrets" generation (NOTIFY on PostgreSQL).
CREATE TABLE tenant_secrets (
    tenant       TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    nonce        TEXT NOT NULL,
    value        TEXT NOT NULL,
    key_id       TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    PRIMARY KEY (tenant, name)
);
