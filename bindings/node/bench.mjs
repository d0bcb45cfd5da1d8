// The cost of a plan and of a search called from JavaScript, against the
// same calls in Rust: same registry (bench/registry.json, 100 tools), same
// policy, same query. The Rust side is timed twice: by criterion
// (`cargo bench --bench native`) and here, in this process, interleaved
// with the JavaScript rounds, so that both see the same machine load.
// A changed plan, tool list or provider list is made by switching the
// session between two contexts before each call, on both sides.
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

// Both sides are timed the same way, in CPU time of this process
// (`process.cpuUsage`), so that time the scheduler gives to other processes
// on a loaded machine counts on neither side; wall time is printed too.

/** [CPU µs, wall µs] per call of `f`, over `n` calls. */
function time(f, n) {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f();
  const wall = Number(process.hrtime.bigint() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return [(c.user + c.system) / n, wall / n];
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const us = (x) => (Number.isNaN(x) ? '       -' : x.toFixed(2).padStart(8));

/**
 * Medians of 15 interleaved rounds of the JavaScript call and its Rust twin;
 * `setup`, if given, runs before each JavaScript round, untimed.
 */
function compare(name, js, rust, n, setup = null) {
  setup?.(n);
  js();
  const a = [[], []];
  const b = [[], []];
  const twin = () => binding.__timeInRust(engine, rust, QUERY, n);
  for (let r = 0; r < 15; r++) {
    setup?.(n);
    time(js, n).forEach((x, k) => a[k].push(x));
    (rust === null ? [NaN, NaN] : time(twin, 1).map((x) => x / n)).forEach((x, k) => b[k].push(x));
  }
  const [cj, wj, cr, wr] = [...a, ...b].map(median);
  const added = Number.isNaN(cr) ? '' : `${us(cj - cr)} µs added`;
  console.log(`${name.padEnd(44)} cpu: js ${us(cj)} µs  rust ${us(cr)} µs ${added}   (wall: js ${us(wj)}  rust ${us(wr)})`);
}

const plan = chat.plan();
console.log(`registry: ${engine.toolNames.length} tools; the plan declares ${plan.declared.length} and defers ${plan.deferred.length}`);
compare('plan, unchanged (the same frozen object)', () => chat.plan(), 'plan-cached', 2000);
let flip = 0;
const switched = (f) => () => {
  chat.setContext({ flags: [(flip ^= 1) ? 'a' : 'b'] });
  return f();
};
compare('plan, changed (put together and frozen)', switched(() => chat.plan()), 'plan-switch', 300);
compare('toolList, changed', switched(() => chat.toolList()), 'tool-list-switch', 300);
compare("providerTools('openai'), changed", switched(() => chat.providerTools('openai')), 'openai-switch', 300);
compare('planJson, unchanged (the same string)', () => chat.planJson(), 'plan-cached', 2000);
compare('planJson, changed (the text, unread)', switched(() => chat.planJson()), 'plan-json-switch', 300);
compare('JSON.parse(planJson()), changed', switched(() => JSON.parse(chat.planJson())), 'plan-json-switch', 300);
// Sessions made beforehand, so that the search alone is timed (a session
// costs Rust 0.1 µs: the twin makes its own inside the loop).
let pool = [];
let next = 0;
const fill = (n) => {
  pool = Array.from({ length: n + 1 }, () => engine.session());
  next = 0;
};
compare('search that loads (in a fresh session)', () => pool[next++].search(QUERY), 'search', 500, fill);
pool = [];
compare('search (a new session, then the search)', () => engine.session().search(QUERY), 'search', 500);
compare('a new session alone (part of the above)', () => engine.session(), 'session', 500);
const s = engine.session();
s.search(QUERY);
compare('search, same session (nothing left to load)', () => s.search(QUERY), 'search-again', 500);
