// The report of audit logs from Node: a log the module's own writer wrote,
// read back by `engine.auditReport` (with the engine's policy and registry)
// and by `auditReport` (the log alone, from a file or from text).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const { Engine, auditReport } = require('../index.js');

const tools = [
  { name: 'Read', description: 'Read a file. Returns its text.' },
  { name: 'WebFetch', description: 'Fetch a web page. Returns markdown.' },
  { name: 'Secret', description: 'Never shown.' },
];
const policy = 'Defer(WebFetch)\nHide(Secret)\n';

/// Two chats written to an audit log by the module: both search for jazz
/// and find nothing, both end up using WebFetch (the second loads it by
/// name after the empty search: a miss), the first is refused Secret.
function written(t) {
  const dir = mkdtempSync(join(tmpdir(), 'toolpolicy-node-report-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const log = join(dir, 'audit.jsonl');
  const engine = new Engine(policy, tools, { file: 'small.policy', audit: log });
  const one = engine.session();
  one.plan();
  one.search('play some jazz');
  one.search('fetch a web page');
  assert.equal(one.call('WebFetch').allowed, true);
  one.recordResult('WebFetch', 'ok');
  assert.equal(one.call('Secret').allowed, false);
  const two = engine.session();
  two.plan();
  two.search('play some jazz');
  two.load(['WebFetch']);
  two.call('WebFetch');
  two.recordResult('WebFetch', 'ok');
  assert.equal(engine.flushAudit(), 0);
  return { engine, log };
}

test('engine.auditReport reads the log with the engine policy and registry', (t) => {
  const { engine, log } = written(t);
  const r = engine.auditReport([log]);
  assert.equal(r.events, 9);
  assert.equal(r.sessions, 2);
  assert.equal(r.sessionsFromRequests, 0);
  assert.equal(r.turns, 2);
  assert.ok(r.tokens > 0 && r.tokens < r.tokensAllDeclared, JSON.stringify(r));
  assert.deepEqual(r.emptySearches, [['play some jazz', 2]]);
  assert.deepEqual(r.searchMisses, [{ query: 'play some jazz', tool: 'WebFetch', missingWords: ['play', 'jazz'] }]);
  assert.deepEqual(r.loadInMostSessions, [{ tool: 'WebFetch', sessions: 2, line: 'NoDefer(WebFetch)', checked: true }]);
  assert.deepEqual(r.neverCalled, [{ tool: 'Read', sessions: 2, line: 'Defer(Read)', checked: true }]);
  assert.deepEqual(r.refusals, [{ cause: 'hide', rule: 'Hide(Secret)', at: 'small.policy:2', count: 1, tools: ['Secret'] }]);
  assert.deepEqual(r.latency, []);
  assert.equal(r.badLines, 0);
});

test('auditReport reads files and text in order, without a policy', (t) => {
  const { log } = written(t);
  const text = readFileSync(log, 'utf8');
  const r = auditReport([log, { text: `${text}not an event\n`, name: 'copy' }, { text: 'oops\n' }]);
  assert.equal(r.events, 18);
  // The same session names twice: the same two sessions.
  assert.equal(r.sessions, 2);
  // Without a registry no words are named; without a policy no line is tried.
  assert.equal(r.searchMisses[0].missingWords, null);
  assert.equal(r.neverCalled[0].line, 'Defer(Read)');
  assert.ok(!('checked' in r.neverCalled[0]));
  assert.equal(r.badLines, 2);
  assert.deepEqual(
    r.badLinesShown.map((b) => [b.file, b.line]),
    [['copy', 10], ['log 3', 1]],
  );
  // `since` past every event leaves nothing.
  const none = auditReport([log], { since: '2999-01-01' });
  assert.deepEqual([none.events, none.sessions, none.neverCalled.length], [0, 0, 0]);
});

test('a log that cannot be read and bad arguments throw, naming what', (t) => {
  const { log } = written(t);
  assert.throws(
    () => auditReport([`${log}.gone`]),
    (e) => e.name === 'ToolPolicyError' && /^cannot read the audit log `.*gone`: no such file/.test(e.message),
  );
  assert.throws(() => auditReport(log), /logs must be an array of paths/);
  assert.throws(() => auditReport([3]), /logs\[0\] must be a path or a `\{ text, name\? \}` object, not a number/);
  assert.throws(() => auditReport([{ name: 'x' }]), /logs\[0\] has no `text`/);
  assert.throws(() => auditReport([], { caler: 'x' }), /unknown key `caler` in options/);
  assert.throws(() => auditReport([], { since: 1 }), /options\.since must be a string, not a number/);
});
