// json-logic-js 2.0.5 over the same tests.json cases as jl_bench.c, same timing scheme
// (process CPU time: user + system of every node thread, JIT and GC included).
// usage: node jl_bench.js JSON_LOGIC_JS_DIR FILE [SECONDS] [test]
// With "test": jsonLogic.truthy(jsonLogic.apply(...)), what a switch condition computes.
const jsonLogic = require(process.argv[2]);
const fs = require('fs');
const seconds = Number(process.argv[4] || 2);
const test = process.argv[5] === 'test';
const run = test ? (r, d) => jsonLogic.truthy(jsonLogic.apply(r, d)) : (r, d) => jsonLogic.apply(r, d);
const cases = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'))
  .filter(c => Array.isArray(c) && c.length >= 3)
  .filter(c => { try { jsonLogic.apply(c[0], c[1]); return true; } catch (e) { return false; } });
// every result checked against the file's expected value before timing (as jl_bench.c does)
const expect = test ? (c) => jsonLogic.truthy(c[2]) : (c) => JSON.stringify(c[2]);
const got = test ? (c) => run(c[0], c[1]) : (c) => JSON.stringify(run(c[0], c[1]));
const wrong = cases.filter(c => got(c) !== expect(c));
for (const c of wrong) console.error(`jl_bench.js: ${JSON.stringify(c[0])} gives ${got(c)}, expected ${expect(c)}`);
if (wrong.length) { console.error(`jl_bench.js: ${wrong.length} wrong results`); process.exit(1); }
// warm up the JIT before timing
for (let k = 0; k < 2000; k++) for (const c of cases) run(c[0], c[1]);
let ops = 0, rounds = 0;
const cpu = () => { const u = process.cpuUsage(); return BigInt(u.user + u.system) * 1000n; };
const start = cpu();
let now = start;
const limit = BigInt(Math.round(seconds * 1e9));
while (now - start < limit) {
  for (const c of cases) run(c[0], c[1]);
  ops += cases.length;
  rounds++;
  if ((rounds & 15) === 0) now = cpu();
}
now = cpu();
console.log(`json-logic-js${test ? '-test' : ''} ${Math.round(ops / (Number(now - start) / 1e9))} ${cases.length} ${rounds}`);
