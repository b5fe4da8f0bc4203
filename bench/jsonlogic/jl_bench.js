// json-logic-js 2.0.5 over the same tests.json cases as jl_bench.c, same timing scheme
// (process CPU time: user + system of every node thread, JIT and GC included).
// usage: node jl_bench.js JSON_LOGIC_JS_DIR FILE [SECONDS] [apply|test] [serve]
// With "serve": one timed slice per line read from stdin (see jl_bench.c).
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
const cpu = () => { const u = process.cpuUsage(); return BigInt(u.user + u.system) * 1000n; };
const limit = BigInt(Math.round(seconds * 1e9));
// Every case round after round for about `seconds` of CPU time: [ops/s, rounds].
function slice() {
  let ops = 0, rounds = 0;
  const start = cpu();
  let now = start;
  while (now - start < limit) {
    for (const c of cases) run(c[0], c[1]);
    ops += cases.length;
    rounds++;
    if ((rounds & 15) === 0) now = cpu();
  }
  now = cpu();
  return [Math.round(ops / (Number(now - start) / 1e9)), rounds];
}
const name = `json-logic-js${test ? '-test' : ''}`;
if (process.argv[6] === 'serve') {
  // paired mode (run.sh): one slice per line read, alternated with jl_bench's slices
  const rl = require('readline').createInterface({ input: process.stdin });
  rl.on('line', () => { process.stdout.write(`${name} ${slice()[0]}\n`); });
} else {
  const [opsPerSec, rounds] = slice();
  console.log(`${name} ${opsPerSec} ${cases.length} ${rounds}`);
}
