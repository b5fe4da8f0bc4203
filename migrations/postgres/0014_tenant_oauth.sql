-- 0014: a tenant's OAuth 2.1 authorization servers (src/store/oauth.c, src/auth/oauth.c):
-- hosted MCP clients come with access tokens issued by these, and graphgate, as the MCP
-- resource server, checks them. definition is the validated JSON body of
-- PUT /admin/tenants/{t}/oauth (issuers, allowed algorithms, clock skew, scope mapping,
-- tenant claim); it holds no secret. updated_at in unix ms. One row per tenant; replacing
-- it is DELETE + INSERT in one transaction, which also bumps the "oauth" generation so the
-- other replicas drop their copy (NOTIFY on PostgreSQL).
CREATE TABLE tenant_oauth (
    tenant     TEXT PRIMARY KEY REFERENCES tenants(name) ON DELETE CASCADE,
    definition TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
