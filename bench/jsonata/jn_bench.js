// jn_bench.js — the node side of bench/jsonata/run.sh: same TSV, same document, same
// output format as jn_bench.c, evaluating with jsonata@2.2.2 (compile once, evaluate many).
//   node jn_bench.js JSONATA_DIR EXPRS.tsv DOC.json DATASETS_DIR MS [--check]
'use strict';
const fs = require('fs');
const [jsonataDir, exprsFile, docFile, dsDir, msArg, checkArg] = process.argv.slice(2);
const jsonata = require(jsonataDir);
const budget = Number(msArg);
const check = checkArg === '--check';
const doc = JSON.parse(fs.readFileSync(docFile, 'utf8'));

function input(which) {
  if (which === '-') return undefined;
  if (which === 'doc') return doc;
  return JSON.parse(fs.readFileSync(`${dsDir}/${which}.json`, 'utf8'));
}

async function once(expr, data) {
  try {
    const r = await expr.evaluate(data);
    return r === undefined ? 'undefined' : JSON.stringify(r);
  } catch (e) {
    return 'ERR ' + e.code;
  }
}

(async () => {
  for (const line of fs.readFileSync(exprsFile, 'utf8').split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const [name, which, src] = line.split('\t');
    if (src === undefined) continue;
    let expr;
    try { expr = jsonata(src); } catch (e) { console.log(`${name}\t0\tERR ${e.code}`); continue; }
    const data = input(which);
    const text = await once(expr, data);
    if (!check) { // warm up (JIT tiers, inline caches) before timing steady state
      const w0 = performance.now();
      while (performance.now() - w0 < budget / 3) await once(expr, data);
    }
    let iters = 0;
    const t0 = performance.now();
    let t = t0;
    if (!check) {
      let batch = 1;
      while (t - t0 < budget) {
        for (let k = 0; k < batch; k++) await once(expr, data);
        iters += batch;
        t = performance.now();
        if (t - t0 < budget / 10) batch *= 2;
      }
    }
    const rate = iters > 0 ? iters / ((t - t0) / 1000) : 0;
    console.log(`${name}\t${rate.toFixed(0)}\t${text}`);
  }
})();
