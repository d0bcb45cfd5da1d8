// The audit log from Node: an engine option names the file, a chat writes
// the events a host's calls make, and a log that cannot be opened is a
// warning, never a throw.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const modulePath = fileURLToPath(new URL('../index.js', import.meta.url));
const { Engine } = require(modulePath);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const policyPath = `${root}policies/pi-desktop.policy`;
const registryPath = `${root}examples/registries/pi-desktop.json`;

const small = [
  { name: 'Read', description: 'Read a file. Returns its text.' },
  { name: 'WebFetch', description: 'Fetch a web page. Returns markdown.' },
  { name: 'Secret', description: 'Never shown.' },
];
const smallPolicy = 'Defer(WebFetch)\nHide(Secret)\n';

function scratch() {
  const dir = mkdtempSync(join(tmpdir(), 'toolpolicy-node-audit-'));
  return { dir, done: () => rmSync(dir, { recursive: true, force: true }) };
}

function events(path) {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));
}

test('a chat writes its events to the log the engine option names', () => {
  const { dir, done } = scratch();
  try {
    const log = join(dir, 'audit.jsonl');
    const engine = new Engine(smallPolicy, small, { file: 'small.policy', audit: log });
    const chat = engine.session({ flags: ['ci'] });
    chat.prompt();
    chat.plan();
    chat.search('fetch a web page');
    chat.search('play some jazz');
    assert.equal(chat.call('WebFetch').allowed, true);
    chat.recordResult('WebFetch', 'ok');
    assert.equal(chat.call('Secret').allowed, false);
    chat.load(['Read', 'Nope']);
    chat.setMode(null);
    chat.restart();
    assert.equal(engine.flushAudit(), 0);

    const got = events(log);
    assert.deepEqual(
      got.map((e) => e.event),
      ['prompt', 'list', 'search', 'search', 'call', 'call', 'load', 'mode', 'restart'],
    );
    const session = got[0].session;
    assert.match(session, /^[0-9a-f]+-\d+$/);
    for (const e of got) {
      assert.equal(e.version, 1);
      assert.equal(e.session, session);
      assert.deepEqual(e.context, { mode: null, bot: null, flags: ['ci'] });
      assert.match(e.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    const [, list, found, empty, allowed, refused, load] = got;
    assert.deepEqual(list.names, ['Read']);
    assert.ok(list.tokens < list.all_declared, JSON.stringify(list));
    assert.equal(found.query, 'fetch a web page');
    assert.deepEqual(found.activated, ['WebFetch']);
    assert.equal(found.empty, false);
    assert.equal(empty.query, 'play some jazz');
    assert.equal(empty.empty, true);
    assert.deepEqual(
      { tool: allowed.tool, outcome: allowed.outcome, status: allowed.status, kind: allowed.cause.kind, rule: allowed.cause.rule, file: allowed.cause.file, line: allowed.cause.line },
      { tool: 'WebFetch', outcome: 'allowed', status: 'ok', kind: 'defer', rule: 'Defer(WebFetch)', file: 'small.policy', line: 1 },
    );
    assert.deepEqual(
      { tool: refused.tool, outcome: refused.outcome, kind: refused.cause.kind, rule: refused.cause.rule },
      { tool: 'Secret', outcome: 'not_found', kind: 'hide', rule: 'Hide(Secret)' },
    );
    assert.deepEqual(load.unavailable, ['Nope']);
  } finally {
    done();
  }
});

test('auditNoQueries leaves the queries out; fromFiles takes the same options', () => {
  const { dir, done } = scratch();
  try {
    const log = join(dir, 'audit.jsonl');
    const engine = Engine.fromFiles(policyPath, registryPath, null, { audit: log, auditNoQueries: true });
    const chat = engine.session({ mode: 'agent' });
    const found = chat.search('open a page in the browser');
    assert.ok(found.activated.length > 0);
    engine.flushAudit(2000);
    const [search] = events(log);
    assert.equal(search.event, 'search');
    assert.ok(!('query' in search), JSON.stringify(search));
    assert.deepEqual(search.activated, found.activated);
    assert.equal(search.context.mode, 'agent');
  } finally {
    done();
  }
});

test('two engines may append to one log: whole lines, one session each', () => {
  const { dir, done } = scratch();
  try {
    const log = join(dir, 'audit.jsonl');
    const engines = [new Engine(smallPolicy, small, { audit: log }), new Engine(smallPolicy, small, { audit: log })];
    const chats = engines.map((e) => e.session());
    for (let i = 0; i < 200; i++) for (const c of chats) c.search(`query ${i}`);
    for (const e of engines) assert.equal(e.flushAudit(), 0);
    const got = events(log);
    assert.equal(got.length, 400);
    assert.equal(new Set(got.map((e) => e.session)).size, 2);
  } finally {
    done();
  }
});

test('a log that cannot be opened is a warning, not a throw; the engine works on', () => {
  const { dir, done } = scratch();
  try {
    const log = join(dir, 'missing', 'audit.jsonl');
    const script = `
      const { Engine } = require(${JSON.stringify(modulePath)});
      process.on('warning', (w) => console.log(JSON.stringify({ name: w.name, message: w.message })));
      const engine = new Engine('Defer(B)', [{ name: 'A', description: 'a' }, { name: 'B', description: 'b' }], { audit: ${JSON.stringify(log)} });
      const names = engine.session().plan().declared.map((t) => t.name);
      console.log(JSON.stringify({ names, dropped: engine.flushAudit() }));
    `;
    const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(run.status, 0, run.stderr);
    const lines = run.stdout.trim().split('\n').map((l) => JSON.parse(l));
    const warning = lines.find((l) => l.name);
    assert.equal(warning?.name, 'ToolPolicyWarning', run.stdout);
    assert.match(warning.message, /^cannot open the audit log `.*missing\/audit\.jsonl`: no such file or directory.*; going on without one$/);
    const result = lines.find((l) => l.names);
    assert.deepEqual(result, { names: ['A'], dropped: 0 });
    assert.ok(!existsSync(log));
  } finally {
    done();
  }
});

test('bad audit options throw with the option named', () => {
  assert.throws(() => new Engine('', [], { audit: 3 }), /^Error: options\.audit must be a string, not a number$|options\.audit must be a string/);
  assert.throws(() => new Engine('', [], { auditNoQueries: 'yes' }), /options\.auditNoQueries must be a boolean/);
  assert.throws(() => Engine.fromFiles(policyPath, registryPath, undefined, { audti: 'x' }), /unknown key `audti` in options/);
  assert.throws(() => new Engine('', []).flushAudit(Number.NaN), /withinMs must be a finite number/);
});

test('queued events are written when the process exits without a flush', () => {
  const { dir, done } = scratch();
  try {
    const log = join(dir, 'audit.jsonl');
    const script = `
      const { Engine } = require(${JSON.stringify(modulePath)});
      const engine = new Engine('Defer(B)', [{ name: 'A', description: 'a' }, { name: 'B', description: 'b' }], { audit: ${JSON.stringify(log)} });
      const chat = engine.session();
      for (let i = 0; i < 1000; i++) chat.search('b number ' + i);
    `;
    const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(run.status, 0, run.stderr);
    const got = events(log);
    assert.equal(got.length, 1000);
    assert.equal(got.at(-1).query, 'b number 999');
  } finally {
    done();
  }
});
