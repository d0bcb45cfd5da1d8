// The audit log from a real pi session, offline: the `audit` option (or
// `PI_TOOLS_AUDIT`) names a file, and what the model did with its tools is
// in it, one event per line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { fauxAssistantMessage, fauxToolCall, registerFauxProvider } from '@mariozechner/pi-ai';

import { auditOptions, createExtension } from '../index.js';
import { openSession, tool, until, within } from '../test-support/pi-session.mjs';

const POLICY = `
search tool_search
NoDefer(read, bash)
Hide(secret_*)
Defer(*)
`;

function events(path) {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));
}

test('the audit option, the flag and PI_TOOLS_AUDIT name the log, relative to pi\'s folder', () => {
  const saved = { ...process.env };
  try {
    delete process.env.PI_TOOLS_AUDIT;
    delete process.env.PI_TOOLS_AUDIT_NO_QUERIES;
    assert.deepEqual(auditOptions('/w', {}), {});
    assert.deepEqual(auditOptions('/w', { audit: 'a.jsonl' }), { audit: '/w/a.jsonl', auditNoQueries: false });
    const flags = { 'tools-audit': '/logs/b.jsonl', 'tools-audit-no-queries': true };
    assert.deepEqual(auditOptions('/w', {}, (n) => flags[n]), { audit: '/logs/b.jsonl', auditNoQueries: true });
    process.env.PI_TOOLS_AUDIT = 'c.jsonl';
    process.env.PI_TOOLS_AUDIT_NO_QUERIES = '1';
    assert.deepEqual(auditOptions('/w', {}), { audit: '/w/c.jsonl', auditNoQueries: true });
    // The option comes first, then the flag, then the environment.
    assert.equal(auditOptions('/w', { audit: '/x.jsonl' }, (n) => flags[n]).audit, '/x.jsonl');
  } finally {
    process.env = saved;
  }
});

test('a pi session writes its searches, calls and refusals to the audit log', { timeout: 60_000 }, async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'toolpolicy-pi-audit-'));
  const faux = registerFauxProvider();
  faux.setResponses([
    fauxAssistantMessage(fauxToolCall('tool_search', { query: 'fetch a web page' })),
    fauxAssistantMessage([fauxToolCall('secret_vault', {}), fauxToolCall('web_fetch', {})]),
    fauxAssistantMessage('done'),
  ]);
  const { session } = await openSession(cwd, faux, {
    extensions: [createExtension({ policy: POLICY, audit: 'audit.jsonl' })],
    customTools: [tool('web_fetch', 'Fetch a web page and return it as markdown.'), tool('secret_vault', 'Read a secret.')],
  });
  const log = join(cwd, 'audit.jsonl');
  try {
    await within(10_000, session.bindExtensions({}), 'starting extensions');
    await within(20_000, session.prompt('fetch it'), 'the prompt');
    await within(20_000, until(() => faux.state.callCount >= 3 && !session.isStreaming), 'the continued run');
  } finally {
    session.dispose?.();
    faux.unregister();
  }
  await until(() => existsSync(log) && events(log).some((e) => e.event === 'call' && e.tool === 'web_fetch'));
  try {
    const got = events(log);
    const names = got.map((e) => e.event);
    assert.ok(names.includes('prompt'), names.join());
    assert.ok(names.includes('list'), names.join());
    const search = got.find((e) => e.event === 'search');
    assert.equal(search.query, 'fetch a web page');
    assert.deepEqual(search.activated, ['web_fetch']);
    const calls = got.filter((e) => e.event === 'call').map((e) => [e.tool, e.outcome, e.cause?.kind, e.status ?? null]);
    assert.deepEqual(calls, [
      ['secret_vault', 'not_found', 'hide', null],
      ['web_fetch', 'allowed', 'defer', 'ok'],
    ]);
    assert.equal(new Set(got.map((e) => e.session)).size, 1);
    for (const e of got) assert.equal(e.version, 1);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test('a log that cannot be opened is a notice, and the session works on', { timeout: 60_000 }, async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'toolpolicy-pi-audit-'));
  const faux = registerFauxProvider();
  const { session } = await openSession(cwd, faux, {
    extensions: [createExtension({ policy: POLICY, audit: join(cwd, 'no', 'such', 'audit.jsonl') })],
    customTools: [tool('web_fetch', 'Fetch a web page and return it as markdown.')],
  });
  const notices = [];
  const onWarning = () => {};
  process.on('warning', onWarning);
  try {
    // pi's UI: notices are recorded, every other call does nothing.
    const ui = new Proxy(
      { notify: (text, level) => notices.push([level, text]) },
      { get: (target, key) => target[key] ?? (() => undefined) },
    );
    await within(10_000, session.bindExtensions({ uiContext: ui }), 'starting extensions');
    assert.deepEqual(session.getActiveToolNames(), ['tool_search', 'read', 'bash']);
  } finally {
    process.off('warning', onWarning);
    session.dispose?.();
    faux.unregister();
    rmSync(cwd, { recursive: true, force: true });
  }
  const warning = notices.find(([, text]) => text.includes('audit log'));
  assert.ok(warning, JSON.stringify(notices));
  assert.equal(warning[0], 'warning');
  assert.match(warning[1], /^toolpolicy: cannot open the audit log `.*no\/such\/audit\.jsonl`; going on without one$/);
});
