// The cost of a plan and of a search called from JavaScript, to compare
// with the same calls in Rust (`cargo bench --bench native`): same
// registry (bench/registry.json, 100 tools), same policy, same query.
//
//   npm run build && node bench.mjs
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const { Engine } = require('./index.js');
const dir = new URL('./bench/', import.meta.url);
const policy = readFileSync(new URL('bench.policy', dir), 'utf8');
const tools = readFileSync(new URL('registry.json', dir), 'utf8');
const QUERY = 'open a page in the browser';

const engine = new Engine(policy, tools, { file: 'bench.policy' });
const chat = engine.session();

/** Median of `rounds` rounds of `n` calls, in microseconds per call. */
function measure(name, f, n = 2000, rounds = 15) {
  for (let i = 0; i < n; i++) f();
  const per = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) f();
    per.push(Number(process.hrtime.bigint() - t0) / n / 1000);
  }
  per.sort((a, b) => a - b);
  const median = per[Math.floor(per.length / 2)];
  console.log(`${name.padEnd(34)} ${median.toFixed(2).padStart(8)} µs`);
  return median;
}

const plan = chat.plan();
console.log(`registry: ${engine.toolNames.length} tools; plan declares ${plan.declared.length}, defers ${plan.deferred.length}`);
measure('node/plan (unchanged: the same object)', () => chat.plan());
let flip = 0;
measure('node/plan (changed: built and frozen)', () => {
  chat.setContext({ flags: [(flip ^= 1) ? 'a' : 'b'] });
  return chat.plan();
}, 500);
measure('node/setContext alone (for reference)', () => chat.setContext({ flags: [(flip ^= 1) ? 'a' : 'b'] }), 500);
measure('node/plan (planJson + JSON.parse)', () => JSON.parse(chat.planJson()), 200);
measure('node/search', () => engine.session().search(QUERY));
measure('node/session (new, for reference)', () => engine.session());
