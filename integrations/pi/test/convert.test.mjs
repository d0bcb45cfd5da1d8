// The pi-lazy-tools conversion: the converted policy decides every tool as
// pi-lazy-tools' own rules would (written out below as its documentation
// states them), over settings of every kind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import { GUARDS, policyFromLazyTools } from '../convert.js';

const require = createRequire(import.meta.url);
const { Engine } = require('@toolpolicy/node');

/** pi-lazy-tools' rules: NoDefer > Defer > deferToolLoading; guards never deferred. */
function lazyToolsDeferred(names, settings) {
  const s = settings.lazyTools ?? settings;
  const preset = s.defer === undefined && s.noDefer === undefined;
  const defer = preset ? ['Defer(*)'] : (s.defer ?? []);
  const noDefer = preset
    ? ['read', 'write', 'edit', 'bash', 'glob', 'grep', 'web_search', 'web_fetch', 'ask_user_question', 'skill']
    : (s.noDefer ?? []);
  if (s.deferToolLoading === false) return new Set();
  const parse = (e, action) => {
    const m = /^(defer|nodefer)\((.*)\)$/i.exec(e.trim());
    return m ? { action: m[1].toLowerCase() === 'defer' ? 'defer' : 'noDefer', pattern: m[2].trim() } : { action, pattern: e.trim() };
  };
  const entries = [...defer.map((e) => parse(e, 'defer')), ...noDefer.map((e) => parse(e, 'noDefer'))];
  const glob = (p) => new RegExp(`^${p.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  const matches = (action, name) => entries.some((e) => e.action === action && glob(e.pattern).test(name));
  return new Set(names.filter((n) => !GUARDS.includes(n) && !matches('noDefer', n) && matches('defer', n)));
}

const names = [
  'tool_search', 'defer_execute_tool', 'read', 'write', 'edit', 'bash', 'glob', 'grep', 'web_fetch',
  'mcp__github__get_issue', 'mcp__github__list_pulls', 'mcp__github__create_issue',
  'browser_navigate', 'browser_snapshot', 'amap_weather', 'odd name', 'skill:odd', 'x"y',
];
const tools = names.map((name) => ({ name, description: `The ${name} tool.` }));

const cases = [
  {},
  { deferToolLoading: false },
  { defer: ['Defer(*)'], noDefer: ['bash'] },
  { defer: ['glob'] },
  { defer: [] },
  { lazyTools: { defer: ['mcp__*'], noDefer: ['mcp__github__get_*', 'NODEFER(mcp__github__list_*)'] } },
  { defer: ['defer(browser_*)'], noDefer: ['nodefer(browser_snapshot)'] },
  { defer: ['Defer(*)'], noDefer: ['odd name', 'skill:odd', 'x"y'] },
  { defer: ['Defer(*)', 'NoDefer(read)'], deferToolLoading: true },
];

for (const settings of cases) {
  test(`the converted policy decides as pi-lazy-tools: ${JSON.stringify(settings)}`, () => {
    const policy = policyFromLazyTools(settings);
    const plan = new Engine(policy, tools).session().plan();
    const expected = lazyToolsDeferred(names, settings);
    // One difference on purpose: an explicit modifier counts in either list.
    if (settings.defer?.includes('NoDefer(read)')) expected.delete('read');
    assert.deepEqual(new Set(plan.deferred), expected, policy);
    assert.deepEqual(plan.hidden, []);
  });
}

test('malformed entries are reported by their place', () => {
  assert.throws(() => policyFromLazyTools({ defer: ['Defer()'] }), /defer\[0\] names no tool/);
  assert.throws(() => policyFromLazyTools({ noDefer: ['ok', 'NoDefer(Defer(x))'] }), /noDefer\[1\] nests a modifier/);
  assert.throws(() => policyFromLazyTools({ defer: 'x' }), /`defer` must be an array/);
  assert.throws(() => policyFromLazyTools({ deferToolLoading: 'no' }), /deferToolLoading/);
  assert.throws(() => policyFromLazyTools([]), /must be an object/);
});

test('the bundled policy and the preset load', () => {
  assert.match(policyFromLazyTools({}), /^search tool_search, defer_execute_tool$/m);
  assert.match(policyFromLazyTools({}), /^NoDefer\(read, write, edit, bash, glob, grep, web_search, web_fetch, ask_user_question, skill\)$/m);
  assert.match(policyFromLazyTools({}), /^Defer\(\*\)$/m);
});

test('without a policy file the bundled example is used, and it loads', async () => {
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { BUNDLED_POLICY, readPolicy } = await import('../index.js');
  const found = readPolicy(mkdtempSync(join(tmpdir(), 'toolpolicy-pi-')));
  assert.equal(found.file, BUNDLED_POLICY);
  const plan = new Engine(found.text, tools).session().plan();
  assert.ok(plan.declared.some((t) => t.name === 'read'));
  assert.ok(plan.deferred.includes('browser_navigate'));
});

test('a tool named like a selector prefix is quoted, hint: included', async () => {
  const { selector } = await import('../convert.js');
  for (const name of ['skill:x', 'source:y', 'hint:read_only', 'HINT:z']) assert.equal(selector(name), `"${name}"`);
  assert.equal(selector('read'), 'read');
  const engine = new Engine(policyFromLazyTools({ noDefer: ['hint:read_only'], defer: ['Defer(*)'] }), [
    { name: 'hint:read_only', description: 'A tool with an odd name.' },
    { name: 'other', description: 'Another tool.', annotations: { readOnlyHint: true } },
  ]);
  assert.deepEqual(engine.session().plan().declared.map((t) => t.name), ['hint:read_only']);
});
