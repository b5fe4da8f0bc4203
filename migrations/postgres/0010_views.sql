-- 0010: views of the tenant-wide MCP endpoint (src/store/views.c, src/gateway/views.c): a
-- named selection of a tenant's <graph>.<tool> tools with optional renames, served at
-- /mcp/{tenant}/_views/{name}. definition is the validated JSON body of
-- PUT /admin/tenants/{t}/views/{name}; updated_at in unix ms. Portable SQL: plain types,
-- replacing a row is DELETE + INSERT in one transaction.
CREATE TABLE views (
    tenant     TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    definition TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, name)
);
