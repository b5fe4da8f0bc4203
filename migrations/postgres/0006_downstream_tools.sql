-- 0006: the tool catalogs of the tenants' downstream MCP servers (src/store/downstream.c),
-- one row per tenant and mcpServers name: what tools/list answered (a JSON array of MCP
-- tool objects) and when (unix ms). Written when an upload or `graphgate mcp sync` lists a
-- server; read by `graphgate mcp tools` and the node-spec service. Portable SQL: plain
-- types, the upsert is done by the code as DELETE + INSERT in one transaction.
CREATE TABLE downstream_tools (
    tenant     TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    server     TEXT NOT NULL,
    tools      TEXT NOT NULL,
    tool_count INTEGER NOT NULL,
    fetched_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, server)
);
