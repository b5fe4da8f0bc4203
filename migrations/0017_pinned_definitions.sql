-- 0017: pinned downstream tool definitions (issue 28, src/store/pins.c). At upload every
-- proxied tool's and every mcp node's called tool's definition (name, title, description,
-- inputSchema, outputSchema, annotations) is stored with the version, with its hash
-- (BLAKE2b-256 of its canonical JSON) and its server's on_change policy; a stored version
-- is compiled from its pins under review and quarantine. A later change of a definition a
-- review/quarantine pin holds is one row of downstream_changes per (tenant, server identity,
-- tool) — pending until an admin approves (the pins take the new definition) or rejects it
-- (kept as rejected, so the same definition is not proposed again) — so a server whose
-- definitions change in a loop holds at most one row per tool.
CREATE TABLE graph_pins (
    graph_id   INTEGER NOT NULL,
    version    INTEGER NOT NULL,
    identity   TEXT NOT NULL,
    server     TEXT NOT NULL,
    on_change  TEXT NOT NULL CHECK (on_change IN ('review', 'quarantine', 'follow')),
    whole      INTEGER NOT NULL DEFAULT 0, -- 1: a `tools: all` entry (a tool added later is a change too)
    tool       TEXT NOT NULL,
    definition TEXT NOT NULL,
    hash       TEXT NOT NULL,
    PRIMARY KEY (graph_id, version, identity, tool),
    FOREIGN KEY (graph_id, version) REFERENCES graph_versions(graph_id, version) ON DELETE CASCADE
);
CREATE INDEX graph_pins_identity ON graph_pins(identity, tool);
CREATE TABLE downstream_changes (
    tenant     TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    identity   TEXT NOT NULL,
    tool       TEXT NOT NULL,
    id         TEXT NOT NULL,
    server     TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('changed', 'added', 'removed')),
    status     TEXT NOT NULL CHECK (status IN ('pending', 'rejected')),
    old_hash   TEXT,
    new_hash   TEXT,
    definition TEXT,
    diff       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, identity, tool)
);
CREATE UNIQUE INDEX downstream_changes_id ON downstream_changes(tenant, id);
