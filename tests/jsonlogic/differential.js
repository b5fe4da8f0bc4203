// Differential cases for jsonlogic-suite: json-logic-js 2.0.5 computes the expected value of
// (1) every binary operation on every pair of edge values and (2) seeded random rules and
// data. Written as a tests.json-style file: [rule, data, expected], or [rule, data, null,
// {"error": message}] where json-logic-js throws (the engine must fail there too).
//   node differential.js JSON_LOGIC_JS_DIR OUT.json [RANDOM_CASES] [SEED]
'use strict';
const jsonLogic = require(process.argv[2]);
const fs = require('fs');
const nRandom = Number(process.argv[4] || 20000);
let seed = Number(process.argv[5] || 12345) >>> 0;
function rand() { // xorshift32: the same cases on every run
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
// JSON cannot carry lone surrogates; the engine turns a split pair into U+FFFD.
function plain(x) {
  if (typeof x === 'string') return x.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
  if (Array.isArray(x)) return x.map(plain);
  if (x && typeof x === 'object') { const o = {}; for (const k in x) o[k] = plain(x[k]); return o; }
  return x;
}
const out = [];
// Where json-logic-js throws, the engine must fail too, except where it deliberately
// differs (SEMANTICS.md); such a case is waived (counted apart) only when the engine answers.
const ops = (r, acc = new Set()) => {
  if (Array.isArray(r)) r.forEach((x) => ops(x, acc));
  else if (r && typeof r === 'object') for (const k in r) { acc.add(k); ops(r[k], acc); }
  return acc;
};
// true when every node matching pred sits in a var default (args after the first), which
// json-logic-js evaluates eagerly and the engine only when the path is missing
function onlyInVarDefaults(r, pred, inDefault = false) {
  if (Array.isArray(r)) return r.every((x) => onlyInVarDefaults(x, pred, inDefault));
  if (!r || typeof r !== 'object') return true;
  if (pred(r) && !inDefault) return false;
  return Object.keys(r).every((k) => {
    const a = r[k];
    if (k === 'var' && Array.isArray(a)) return a.every((x, i) => onlyInVarDefaults(x, pred, inDefault || i > 0));
    return onlyInVarDefaults(a, pred, inDefault);
  });
}
function divergence(rule, error) {
  const m = /^Unrecognized operation (.*)$/.exec(error);
  if (m && !ops(rule).has(m[1])) return 'json-logic-js evaluates a data value as a rule (missing keys); the engine never runs data as logic';
  if (/^Cannot read properties of (undefined|null) \(reading 'length'\)$/.test(error) && ops(rule).has('missing_some'))
    return 'missing_some without a key array: json-logic-js crashes (TypeError), the engine answers';
  if (/^Reduce of empty array/.test(error) && onlyInVarDefaults(rule, (n) => Array.isArray(n['*']) && n['*'].length === 0))
    return 'a var default is evaluated only when the path is missing: the failing {"*":[]} never runs';
  return null;
}
function add(rule, data) {
  let v;
  try { v = jsonLogic.apply(rule, data); } catch (e) {
    const error = String(e && e.message || e), why = divergence(rule, error);
    out.push([rule, data, null, why ? { error, waived: why } : { error }]);
    return;
  }
  if (v === undefined) v = null;
  const text = JSON.stringify([v]);
  if (text === undefined) return;
  out.push([rule, data, plain(JSON.parse(text)[0])]);
}
const V = [null, true, false, 0, 1, -1, 1.5, -2.5, '', '0', '1', 'abc', ' 12 ', '1e3', '0x10', 'Infinity',
  '-Infinity', [], [1], [1, 2], ['a'], {}, { a: 1 }, [[2]], '12px', '\u00a05', 'b', 'B', 'aa', '\u00e9',
  '\ud83d\ude00', [null], [true], 1e21, 123456789012, 0.1];
const BIN = ['==', '===', '!=', '!==', '>', '>=', '<', '<=', '+', '-', '*', '/', '%', 'max', 'min', 'in',
  'cat', 'merge', '!', '!!', 'substr', 'missing', 'missing_some'];
for (const op of BIN)
  for (const a of V)
    for (const b of V) {
      if (a === b && a !== null && typeof a === 'object') continue; // JS compares identity
      add({ [op]: [{ var: 'a' }, { var: 'b' }] }, { a, b });
    }
const OPS = ['var', 'missing', 'missing_some', 'if', '?:', '==', '===', '!=', '!==', '!', '!!', 'or', 'and',
  '>', '>=', '<', '<=', 'max', 'min', '+', '-', '*', '/', '%', 'in', 'cat', 'substr', 'merge', 'map',
  'filter', 'reduce', 'all', 'none', 'some'];
const LEAVES = [null, true, false, 0, 1, -1, 2.5, '', 'a', 'a.b', '0', 'x.y.z', 'current', 'accumulator',
  '1e3', ' 7 ', [], [1, 2], { a: 1, b: 2 }, '\u00e9\ud83d\ude00x', -3, 'b', 'current.a', '0x1f'];
function rule(d) {
  if (d <= 0 || rand() < 0.25) return JSON.parse(JSON.stringify(pick(LEAVES))); // fresh objects, as parsed JSON has
  const op = pick(OPS);
  if (rand() < 0.15) return { [op]: rule(d - 1) };
  const args = [];
  for (let i = Math.floor(rand() * 4); i > 0; i--) args.push(rule(d - 1));
  return { [op]: args };
}
function data(d) {
  const r = rand();
  if (d <= 0 || r < 0.3) return pick([null, true, 0, 3, 's', 'a.b', 1.5, '', '12']);
  if (r < 0.6) { const a = []; for (let i = Math.floor(rand() * 5); i > 0; i--) a.push(data(d - 1)); return a; }
  const o = {};
  for (let i = Math.floor(rand() * 5); i > 0; i--) o[pick(['a', 'b', 'x', 'y', 'current', 'accumulator', '0'])] = data(d - 1);
  return o;
}
for (let i = 0; i < nRandom; i++) add(rule(1 + Math.floor(rand() * 5)), data(3));
fs.writeFileSync(process.argv[3], JSON.stringify(out));
