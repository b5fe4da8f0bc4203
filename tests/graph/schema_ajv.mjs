// schema_ajv.mjs — schema/graph.schema.json checked by an independent JSON Schema 2020-12
// validator (ajv, as an editor's YAML language server would use one) against graphgate's own
// loader (`graphgate graph validate`): the shared mcpGraph examples, examples/ and our fixtures pass
// both, the structurally invalid fixtures fail both, and every scalar field given every kind
// of YAML scalar is accepted by both or refused by both.
// usage: node schema_ajv.mjs SRCDIR GRAPHGATE SHARED_EXAMPLES_DIR
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

const [src, gg, shared] = process.argv.slice(2);
const require = createRequire(path.join(src, 'tests/npm/node_modules/'));
const Ajv2020 = require('ajv/dist/2020').default;
const YAML = require('yaml');

let passed = 0, failed = 0;
const check = (desc, cond, detail) => {
  if (cond) passed++;
  else { failed++; console.log(`not ok - ${desc}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`); }
};

const ajv = new Ajv2020({ allErrors: true, strict: false });
const validate = ajv.compile(JSON.parse(fs.readFileSync(path.join(src, 'schema/graph.schema.json'), 'utf8')));
const schemaOk = (text) => validate(YAML.parse(text, { version: '1.2', schema: 'core' }));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gg-schema-'));
const loaderOk = (file) => {
  try { execFileSync(gg, ['graph', 'validate', file], { stdio: 'pipe' }); return true; } catch { return false; }
};

const fixtures = path.join(src, 'tests/fixtures/graphs');
// mcpGraph's own examples when GG_SHARED has them (reported as skipped otherwise), and ours
const sharedGood = ['switch_example.yaml', 'loop_example.yaml', 'test_minimal.yaml', 'file_utils.yaml', 'test-graph-with-mcp.yaml'];
let skipped = 0;
if (!fs.existsSync(shared)) {
  skipped += sharedGood.length;
  console.log(`# SKIP ${sharedGood.length} checks: mcpGraph's example graphs not found at ${shared} (set GG_SHARED, docs/internals.md: where the conformance suites come from)`);
}
const examples = path.join(src, 'examples');
const good = (skipped ? [] : sharedGood.map((f) => path.join(shared, f)))
  .concat(fs.readdirSync(examples).filter((f) => f.endsWith('.yaml')).map((f) => path.join(examples, f)))
  .concat(['downstream.yaml', 'nested_switch.yaml', 'limits.yaml', 'history.yaml', 'results.yaml', 'live.yaml', 'proxy.yaml']
    .map((f) => path.join(fixtures, f)))
  .concat([path.join(src, 'tests/fixtures/conformance/everything.yaml')]);
for (const f of good) {
  const ok = schemaOk(fs.readFileSync(f, 'utf8'));
  check(`${path.basename(f)} passes the schema`, ok, validate.errors);
}
for (const f of ['unknown_keys.yaml', 'schemas.yaml', 'structure.yaml', 'scalar_types.yaml', 'extras.yaml']) {
  const file = path.join(fixtures, 'invalid', f);
  check(`invalid/${f} fails the schema`, !schemaOk(fs.readFileSync(file, 'utf8')));
  check(`invalid/${f} fails the loader`, !loaderOk(file));
}

const template = `version: @V@
server: {name: @SN@, version: @SV@, title: @ST@}
mcpServers:
  s: {command: @CMD@, args: [@ARG@], env: {E: @ENV@}}
  h: {type: streamableHttp, url: "https://example.com/mcp", headers: {X-A: @HDR@}}
tools:
  - name: t
    description: @DESC@
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: @NEXT@}
      - {id: "10", type: transform, transform: {expr: @EXPR@}, next: c}
      - {id: c, type: mcp, server: s, tool: @TOOL@, args: {a: @LIT@}, next: d}
      - {id: d, type: mcp, server: h, tool: x, next: sw}
      - {id: sw, type: switch, conditions: [{rule: {"==": [1, 1]}, target: @TGT@}, {target: exit}]}
      - {id: exit, type: exit}
`;
const fields = ['V', 'SN', 'SV', 'ST', 'CMD', 'ARG', 'ENV', 'HDR', 'DESC', 'NEXT', 'EXPR', 'TOOL', 'LIT', 'TGT'];
const values = ['"10"', "'10'", '10', '1.5', '0x1f', 'true', 'false', 'null', '~', '""', '["10"]', '{x: y}'];
let n = 0;
for (const f of fields) {
  for (const v of values) {
    const text = template.replace(/@([A-Z]+)@/g, (_, k) => (k === f ? v : '"10"'));
    const file = path.join(tmp, `agree-${n++}.yaml`);
    fs.writeFileSync(file, text);
    const s = schemaOk(text), l = loaderOk(file);
    check(`${f} = ${v}: loader and schema agree`, s === l, { schema: s, loader: l, errors: validate.errors });
    if (v === '"10"') check(`${f} default document is valid`, s && l);
  }
}
fs.rmSync(tmp, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed ? 1 : 0);
