// The cost of a plan and of a search called from JavaScript, against the
// same calls in Rust: same registry (bench/registry.json, 100 tools), same
// policy, same query. The Rust side is timed twice: by criterion
// (`cargo bench --bench native`) and here, in this process, interleaved
// with the JavaScript rounds, so that both see the same machine load.
//
//   npm run build && node bench.mjs
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const binding = require('./index.js');
const { Engine } = binding;
const dir = new URL('./bench/', import.meta.url);
const policy = readFileSync(new URL('bench.policy', dir), 'utf8');
const tools = readFileSync(new URL('registry.json', dir), 'utf8');
const QUERY = 'open a page in the browser';

const engine = new Engine(policy, tools, { file: 'bench.policy' });
const chat = engine.session();

/** µs per call of `f`, over `n` calls. */
function time(f, n) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f();
  return Number(process.hrtime.bigint() - t0) / n / 1000;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Median of 15 interleaved rounds of the JavaScript call and its Rust twin. */
function compare(name, js, rust, n) {
  js();
  const a = [];
  const b = [];
  for (let r = 0; r < 15; r++) {
    a.push(time(js, n));
    b.push(rust === null ? NaN : binding.__timeInRust(engine, rust, QUERY, n) / 1000);
  }
  const [ja, rb] = [median(a), median(b)];
  const added = Number.isNaN(rb) ? '' : `${(ja - rb).toFixed(2).padStart(8)} µs added`;
  console.log(`${name.padEnd(40)} js ${ja.toFixed(2).padStart(8)} µs  rust ${Number.isNaN(rb) ? '       -' : rb.toFixed(2).padStart(8)} µs ${added}`);
}

const plan = chat.plan();
console.log(`registry: ${engine.toolNames.length} tools; the plan declares ${plan.declared.length} and defers ${plan.deferred.length}`);
compare('plan, unchanged (the same frozen object)', () => chat.plan(), 'plan-cached', 2000);
let flip = 0;
compare(
  'plan, changed (built and frozen)',
  () => {
    chat.setContext({ flags: [(flip ^= 1) ? 'a' : 'b'] });
    return chat.plan();
  },
  'plan',
  300,
);
compare('planJson + JSON.parse', () => JSON.parse(chat.planJson()), 'plan', 300);
compare('search (a new session, then the search)', () => engine.session().search(QUERY), 'search', 500);
compare('a new session alone (part of the above)', () => engine.session(), 'session', 500);
const s = engine.session();
s.search(QUERY);
compare('search, same session (nothing left to load)', () => s.search(QUERY), null, 500);
