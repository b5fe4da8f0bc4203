-- 0018: per-user grants of downstream OAuth servers (src/store/user_grants.c): for a
-- mcpServers entry whose auth asks each caller's consent (auth.per_user), the tokens one
-- principal granted, kept per (tenant, server, principal). value is the XChaCha20-Poly1305
-- ciphertext (base64) of the grant (access and refresh tokens, token endpoint, client) under
-- the secrets master key, with nonce (hex) and "tenant\0user-grant\n<principal>\n<server>"
-- as associated data: a row copied to another tenant, principal or server does not open.
-- key_id names the key like tenant_secrets.key_id (rekeyed with them). principal is the
-- caller's key_id (a hash of issuer + subject, as in principals.id); expires_at is the access
-- token's expiry (unix ms, NULL when unknown) and, like the times, no secret.
CREATE TABLE downstream_user_grants (
    tenant     TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    server     TEXT NOT NULL,
    principal  TEXT NOT NULL,
    nonce      TEXT NOT NULL,
    value      TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    expires_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, server, principal)
);
