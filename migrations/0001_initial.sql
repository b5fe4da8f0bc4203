-- 0001_initial: every table graphgate's capabilities need, with the indexes their queries use.
-- Times are wall-clock milliseconds since the epoch (INTEGER). JSON is stored as TEXT.

-- Small named values (the API key pepper when the config does not provide one).
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;

-- Change counters, bumped in the same transaction as the change, so long-running
-- processes notice what another process (the CLI) changed with one cheap read.
CREATE TABLE generations (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO generations(name, value) VALUES ('keys', 0), ('graphs', 0);

CREATE TABLE tenants (
    name       TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 63),
    created_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Only a keyed hash of the secret is stored. scopes: comma-separated scope names.
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    tenant       TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    name         TEXT NOT NULL DEFAULT '',
    hash         BLOB NOT NULL,
    scopes       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
);
CREATE INDEX api_keys_tenant ON api_keys(tenant, created_at);

-- A graph is a name with an active pointer; its versions are immutable.
CREATE TABLE graphs (
    id             INTEGER PRIMARY KEY,
    tenant         TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    active_version INTEGER,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    UNIQUE (tenant, name)
);

CREATE TABLE graph_versions (
    graph_id     INTEGER NOT NULL REFERENCES graphs(id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    source       TEXT NOT NULL,
    format       TEXT NOT NULL CHECK (format IN ('yaml', 'json')),
    content_hash TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    created_by   TEXT,
    PRIMARY KEY (graph_id, version)
);

-- Node-spec registry (see src/store/store_specs.c). spec holds the validated spec as JSON.
CREATE TABLE node_specs (
    id          INTEGER PRIMARY KEY,
    node_type   TEXT NOT NULL,
    subtype     TEXT NOT NULL,
    version     TEXT NOT NULL,
    spec        TEXT NOT NULL,
    source_path TEXT NOT NULL,
    checksum    TEXT NOT NULL,
    loaded_at   INTEGER NOT NULL,
    UNIQUE (node_type, subtype, version)
);
CREATE INDEX node_specs_subtype ON node_specs(subtype);

-- Full-text index over the searchable parts of each spec; rowid = node_specs.id.
CREATE VIRTUAL TABLE node_specs_fts USING fts5(
    node_type, subtype, description, tags, params,
    tokenize = 'porter unicode61'
);

-- One row: what was last loaded into node_specs.
CREATE TABLE specs_meta (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    dir_checksum TEXT NOT NULL,
    source_dir   TEXT NOT NULL,
    spec_count   INTEGER NOT NULL,
    loaded_at    INTEGER NOT NULL
);

-- One row per tools/call. id is time-ordered (hex ms + random).
CREATE TABLE executions (
    id          TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    graph       TEXT NOT NULL,
    version     INTEGER NOT NULL,
    tool        TEXT NOT NULL,
    key_id      TEXT,
    status      TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled', 'interrupted')),
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    duration_ms REAL,
    arguments   TEXT,
    result      TEXT,
    error       TEXT
);
-- Listing: newest first per tenant, optionally by graph / tool / status.
CREATE INDEX executions_tenant_started ON executions(tenant, started_at DESC, id DESC);
CREATE INDEX executions_tenant_graph ON executions(tenant, graph, started_at DESC);
CREATE INDEX executions_tenant_tool ON executions(tenant, tool, started_at DESC);
-- Retention by age and count across tenants.
CREATE INDEX executions_started ON executions(started_at);
-- Marking interrupted runs at start.
CREATE INDEX executions_running ON executions(status) WHERE status = 'running';

CREATE TABLE node_executions (
    execution_id    TEXT NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
    execution_index INTEGER NOT NULL,
    node_id         TEXT NOT NULL,
    node_type       TEXT NOT NULL,
    started_at      INTEGER NOT NULL,
    finished_at     INTEGER NOT NULL,
    duration_ms     REAL NOT NULL,
    input           TEXT,
    output          TEXT,
    error           TEXT,
    PRIMARY KEY (execution_id, execution_index)
);

-- Admin actions; kept when a tenant is deleted (no foreign key on tenant).
CREATE TABLE audit_log (
    id      INTEGER PRIMARY KEY,
    ts      INTEGER NOT NULL,
    actor   TEXT NOT NULL,
    tenant  TEXT,
    action  TEXT NOT NULL,
    target  TEXT,
    details TEXT
);
CREATE INDEX audit_log_tenant ON audit_log(tenant, id);
