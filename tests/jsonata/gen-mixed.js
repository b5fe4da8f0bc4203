// gen-mixed.js — writes differential cases for tests/jsonata/fn-diff.tsv that mix what the
// hand-written cases keep apart: variables bound to NaN (% 0), Infinity (1/0) and ordinary
// values, higher-order functions ($map, $filter, $reduce, $sort, $single, lambdas, partial
// application, ~> chains) and the operators that meet them. A NaN reaching an operator
// flowed differently in graphgate (D1001) and jsonata-js (T2002); these cases keep such
// paths compared. Deterministic: the same seed prints the same lines.
//   node gen-mixed.js [SEED (7)] [COUNT (400)] >> fn-diff.tsv
'use strict';
const seed0 = Number(process.argv[2] || 7);
const count = Number(process.argv[3] || 400);
let s = seed0 >>> 0;
function rnd(n) { // xorshift32: portable, no dependency
  s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
  return s % n;
}
const pick = (a) => a[rnd(a.length)];

// values a variable can hold: the odd numbers first, so they are picked often
const atoms = ['(5 % 0)', '(1 / 0)', '(-1 / 0)', '(0 / 0)', '$floor(5 % 0)', '$abs(1 / 0)',
  '0', '-0', '1.5', '3', '"7"', '"x"', 'true', 'null', '[]', '[1, 2, 3]', '[1, (5 % 0)]',
  '{"a": 1}', '$nothing', '1e308 * 10'];
const unary = ['$floor', '$ceil', '$abs', '$round', '$sqrt', '$string', '$number', '$boolean',
  '$exists', '$type', '$count', '$sum', '$max', '$min', '$average', '$not', '$keys', '$reverse',
  '$distinct'];
const binops = ['+', '-', '*', '/', '%', '=', '!=', '<', '<=', '>', '>=', '&', 'and', 'or', 'in'];
const lambdas = [
  'function($v){ $v * $x }', 'function($v){ $v + $y }', 'function($v){ $v > $x }',
  'function($v, $i){ $i % 2 = 0 }', 'function($v){ $string($v) & "!" }',
  'function($v){ $x ? $v : $y }', 'function($v){ [$v, $x] }', 'function($v){ $v = $v }',
];
const reducers = ['function($a, $b){ $a + $b }', 'function($a, $b){ $a * $x + $b }',
  'function($a, $b){ $a < $b ? $a : $b }', 'function($a, $b){ $append($a, $b) }'];
const lists = ['[1, 2, 3]', '[3, 1, 2]', '[1, $x, 2]', '[$x, $y]', '[0, -1, 2.5]', '$list'];

function scalar(d) {
  switch (d > 2 ? 0 : rnd(5)) {
  case 0: return pick(['$x', '$y', pick(atoms)]);
  case 1: return `(${scalar(d + 1)} ${pick(binops)} ${scalar(d + 1)})`;
  case 2: return `${pick(unary)}(${scalar(d + 1)})`;
  case 3: return `(${scalar(d + 1)} ? ${scalar(d + 1)} : ${scalar(d + 1)})`;
  default: return hof(d + 1);
  }
}

function hof(d) {
  const l = pick(lists);
  switch (rnd(8)) {
  case 0: return `$map(${l}, ${pick(lambdas)})`;
  case 1: return `$filter(${l}, ${pick(lambdas)})`;
  case 2: return `$reduce(${l}, ${pick(reducers)}${rnd(2) ? ', ' + scalar(d + 1) : ''})`;
  case 3: return `$sort(${l}, function($a, $b){ $a > $b })`;
  case 4: return `${l} ~> $map(${pick(lambdas)}) ~> $sum()`;
  case 5: return `($f := ${pick(lambdas)}; $f(${scalar(d + 1)}))`;
  case 6: return `($g := $map(?, ${pick(lambdas)}); $g(${l}))`;
  default: return `${l}[${pick(['$ > $x', '$ = $y', '0', '-1', '$x'])}]`;
  }
}

console.log(`# generated: gen-mixed.js ${seed0} ${count} (variables, NaN/Infinity, higher-order functions)`);
for (let i = 0; i < count; i++) {
  const x = pick(atoms), y = pick(atoms);
  const body = rnd(3) ? hof(0) : scalar(0);
  console.log(`mx${i}\t-\t( $x := ${x}; $y := ${y}; $list := [1, $x, 3]; ${body} )`);
}
