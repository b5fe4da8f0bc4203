// schema_ajv.mjs — differential test of graphgate's JSON Schema validator against ajv
// (JSON Schema 2020-12): every case of tests/jsonschema/schema_cases.json is judged by ajv and by
// our validator (test_jsonschema --print), and both must agree with the table's "valid".
// Cases marked "ajv": false are where ajv departs from the specification (IEEE-754
// arithmetic in multipleOf, 53-bit integers); they are run through ours only and counted
// as skipped for ajv, with the reason printed.
// usage: node schema_ajv.mjs SRCDIR TEST_JSONSCHEMA
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

const [src, driver] = process.argv.slice(2).map((p) => path.resolve(p));
const require = createRequire(path.join(src, 'tests/npm/node_modules/'));
const Ajv2020 = require('ajv/dist/2020').default;
const file = path.join(src, 'tests/jsonschema/schema_cases.json');
const cases = JSON.parse(fs.readFileSync(file, 'utf8'));
const ours = execFileSync(driver, ['--print', file], { encoding: 'utf8' }).trim().split('\n').map((l) => JSON.parse(l));

let passed = 0, failed = 0, skipped = 0;
cases.forEach((c, i) => {
  const o = ours[i] || { error: 'no verdict' };
  if (o.error !== undefined || o.valid !== c.valid) {
    failed++;
    console.log(`not ok ${i + 1} - ours: ${c.desc}: ${JSON.stringify(o)}`);
    return;
  }
  if (c.ajv === false) {
    skipped++;
    console.log(`skip ${i + 1} - ajv: ${c.desc} (${c.why})`);
    return;
  }
  let valid;
  try {
    const ajv = new Ajv2020({ strict: false, allErrors: false });
    valid = ajv.validate(c.schema, c.instance);
  } catch (e) {
    failed++;
    console.log(`not ok ${i + 1} - ajv could not compile: ${c.desc}: ${e.message}`);
    return;
  }
  if (valid === c.valid) passed++;
  else {
    failed++;
    console.log(`not ok ${i + 1} - ajv disagrees: ${c.desc}: ajv says ${valid ? 'valid' : 'invalid'}`);
  }
});
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed ? 1 : 0);
