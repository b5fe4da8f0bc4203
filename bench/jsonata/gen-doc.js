// gen-doc.js — writes the deterministic ~100 KB benchmark document (graph-run shaped:
// run metadata, node executions, a catalogue of items) to the file given as argv[2].
'use strict';
let seed = 20240611;
function rnd() { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; }
function pick(a) { return a[Math.floor(rnd() * a.length)]; }
const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];
const cities = ['Paris', 'Berlin', 'Madrid', 'Rome', 'Oslo', 'Lisbon', 'Vienna', 'Prague'];
const tags = ['red', 'green', 'blue', 'urgent', 'archived', 'new'];
const items = [];
for (let i = 0; i < 460; i++) {
  const first = pick(words), last = pick(words);
  items.push({
    id: 'item-' + i,
    name: first[0].toUpperCase() + first.slice(1) + ' ' + last,
    email: first + '.' + last + (i % 3 ? '@example.com' : '@corp.test'),
    category: pick(['tools', 'books', 'garden', 'food', 'toys']),
    price: Math.round(rnd() * 20000) / 100,
    qty: Math.floor(rnd() * 20),
    tags: [pick(tags), pick(tags)],
    created: Date.UTC(2024, Math.floor(rnd() * 12), 1 + Math.floor(rnd() * 28)),
    address: { city: pick(cities), zip: String(10000 + Math.floor(rnd() * 89999)) },
  });
}
const nodes = [];
for (let i = 0; i < 40; i++)
  nodes.push({ id: 'n' + i, type: pick(['tool', 'transform', 'switch', 'entry', 'exit']),
               status: rnd() < 0.85 ? 'ok' : 'error', durationMs: Math.floor(rnd() * 900),
               output: { count: Math.floor(rnd() * 50), message: 'step ' + i + ' ' + pick(words) } });
const doc = {
  run: { id: 'run-42', title: '  Nightly   import of   catalogue ', owner: 'ops team',
         path: '/tenants/acme/graphs/import', started: 1718064000000, attempt: 3 },
  nodes, items,
};
require('fs').writeFileSync(process.argv[2], JSON.stringify(doc));
