-- 0011: downstream tool catalogs keyed by what the server is, not by the mcpServers name a
-- graph gives it (two graphs of a tenant may both call different servers 'st'): identity is
-- "http:<hash of the URL>" or "stdio:<hash of command, args, cwd, env names>"
-- (src/graph/downstream.c, gg_graph_server_identity); server is the name it was last listed
-- under, for admins. bytes is the length of tools, counted in the tenant's usage and bounded
-- by tenants.max_catalog_bytes (src/store/downstream.c). Rows of 0006 carry over under
-- identity 'name:<server>', which a proxy graph's catalog lookup falls back to until its
-- server is listed again (which replaces that row).
CREATE TABLE downstream_catalogs (
    tenant     TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    identity   TEXT NOT NULL,
    server     TEXT NOT NULL,
    tools      TEXT NOT NULL,
    tool_count BIGINT NOT NULL,
    bytes      BIGINT NOT NULL,
    fetched_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, identity)
);
CREATE INDEX downstream_catalogs_server ON downstream_catalogs(tenant, server);
INSERT INTO downstream_catalogs(tenant, identity, server, tools, tool_count, bytes, fetched_at)
    SELECT tenant, 'name:' || server, server, tools, tool_count, octet_length(tools), fetched_at
    FROM downstream_tools;
DROP TABLE downstream_tools;
