// validate.mjs — every spec file against schema/node-spec.schema.json with ajv (JSON Schema
// 2020-12), an implementation independent of graphgate's own validator.
// usage: node validate.mjs SRCDIR [EXTRA_BAD_FILE...]; prints "ok - ..." lines and a final
// "N passed, N failed".
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [src, ...bad] = process.argv.slice(2);
const require = createRequire(path.join(src, 'tests/npm/node_modules/'));
const Ajv2020 = require('ajv/dist/2020').default;
const YAML = require('yaml');

let passed = 0, failed = 0;
const check = (desc, cond, detail) => {
  if (cond) { passed++; console.log(`ok - ${desc}`); }
  else { failed++; console.log(`not ok - ${desc}${detail ? ': ' + JSON.stringify(detail) : ''}`); }
};

const schema = JSON.parse(fs.readFileSync(path.join(src, 'schema/node-spec.schema.json'), 'utf8'));
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
const validate = ajv.compile(schema);
const validateCommon = ajv.compile({ $defs: schema.$defs, $ref: '#/$defs/common_file' });
const load = (f) => YAML.parse(fs.readFileSync(f, 'utf8'), { version: '1.2', uniqueKeys: true });

const dir = path.join(src, 'specs');
check('_common.yaml validates', validateCommon(load(path.join(dir, '_common.yaml'))), validateCommon.errors);
const perType = {};
for (const type of fs.readdirSync(dir).filter((d) => !d.startsWith('_') && !d.startsWith('.') && fs.statSync(path.join(dir, d)).isDirectory()).sort()) {
  for (const f of fs.readdirSync(path.join(dir, type)).filter((f) => f.endsWith('.yaml')).sort()) {
    const doc = load(path.join(dir, type, f));
    const ok = validate(doc);
    check(`${type}/${f} validates`, ok, validate.errors);
    check(`${type}/${f} is named after node_type/subtype`, doc.node_type === type && `${doc.subtype}.yaml` === f);
    perType[type] = (perType[type] || 0) + 1;
  }
}
const eight = ['TRIGGER', 'AI_AGENT', 'ACTION', 'EXTERNAL_ACTION', 'FLOW', 'HUMAN_IN_THE_LOOP', 'TOOL', 'MEMORY'];
const total8 = eight.reduce((n, t) => n + (perType[t] || 0), 0);
check(`at least 50 specs in the 8 workflow types (${total8})`, total8 >= 50, perType);
check('every workflow type has specs', eight.every((t) => perType[t] > 0), perType);
check('GRAPH has entry, mcp, transform, switch, exit, elicit, sample, roots, ask', perType.GRAPH === 9, perType);
for (const f of bad) check(`broken file ${path.basename(f)} is rejected by the schema`, !validate(load(f)));
console.log(JSON.stringify(perType));
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
