// The binding's contract, from JavaScript: every call of the API,
// the shapes it returns, and errors that throw with diagnostics instead of
// crashing the process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const { Engine } = require('../index.js');
const root = fileURLToPath(new URL('../../../', import.meta.url));
const policyPath = `${root}policies/pi-desktop.policy`;
const registryPath = `${root}examples/registries/pi-desktop.json`;
const registry = JSON.parse(readFileSync(registryPath, 'utf8'));

const small = [
  { name: 'Read', description: 'Read a file. Returns its text.' },
  {
    name: 'WebFetch',
    description: 'Fetch a web page. Returns markdown.',
    parameters: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
    cache_control: { type: 'ephemeral' },
  },
  { name: 'Secret', description: 'Never shown.' },
];
const smallPolicy = 'Defer(WebFetch)\nHide(Secret)\n';

/** Calls `f`, which must throw a ToolPolicyError; returns it. */
function throws(f, pattern) {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof Error, `threw ${e}`);
    assert.equal(e.name, 'ToolPolicyError');
    assert.ok(Array.isArray(e.diagnostics) && e.diagnostics.length > 0);
    if (pattern) assert.match(e.message, pattern);
    return e;
  }
  assert.fail('did not throw');
}

test('an engine from text and every registry shape gives the same plan', () => {
  const shapes = [
    small,
    JSON.stringify(small),
    { tools: small },
    small.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })),
    small.map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters })),
  ];
  const names = shapes.map((tools) => new Engine(smallPolicy, tools).session().plan().declared.map((t) => t.name));
  for (const n of names) assert.deepEqual(n, ['Read']);
});

test('a plan holds the contract fields, definitions as the registry has them', () => {
  const engine = new Engine(smallPolicy, small);
  const chat = engine.session();
  const plan = chat.plan();
  assert.deepEqual(plan.deferred, ['WebFetch']);
  assert.deepEqual(plan.hidden, ['Secret']);
  assert.equal(plan.catalog, '# On-demand tools\n- WebFetch: Fetch a web page.');
  assert.equal(plan.searchTool, 'tool_search');
  assert.deepEqual(Object.keys(plan.tokens).sort(), ['allDeclared', 'catalog', 'declared', 'skills', 'total']);
  assert.equal(plan.tokens.total, plan.tokens.declared + plan.tokens.catalog + plan.tokens.skills);
  assert.deepEqual(plan.declared[0], { name: 'Read', description: 'Read a file. Returns its text.', parameters: { type: 'object', properties: {} } });
  const json = JSON.parse(chat.planJson());
  assert.deepEqual(json.deferred, plan.deferred);
  assert.equal(json.tokens.all_declared, plan.tokens.allDeclared);
});

test('search activates, the next plan declares, evidence survives a resume', () => {
  const engine = Engine.fromFiles(policyPath, registryPath);
  const chat = engine.session({ mode: 'agent' });
  const first = chat.plan().declared.map((t) => t.name);
  assert.deepEqual(first.slice(0, 2), ['new_context', 'ToolSearch']);
  const found = chat.search('open a page in the browser');
  assert.ok(found.activated.includes('BrowserPreview'), JSON.stringify(found));
  assert.match(found.text, /^Loaded \d tools?, callable from your next step:/);
  assert.equal(typeof found.remainingDeferred, 'number');
  const next = chat.plan().declared.map((t) => t.name);
  assert.deepEqual(next.slice(0, first.length), first, 'activations only append');
  assert.deepEqual(next.slice(first.length), found.activated);

  const loaded = chat.load(['Glob', 'NoSuchTool']);
  assert.deepEqual(loaded.activated, ['Glob']);
  assert.deepEqual(loaded.unavailable, ['NoSuchTool']);

  const call = chat.call('Glob');
  assert.equal(call.allowed, true);
  assert.equal(call.text ?? null, null);
  chat.recordResult('Glob', 'ok');
  const state = chat.state();
  assert.deepEqual(state.context.mode, 'agent');
  assert.ok(state.evidence.includes('Glob'));
  const resumed = engine.resume(JSON.parse(JSON.stringify(state)));
  assert.ok(resumed.plan().declared.some((t) => t.name === 'Glob'));
  assert.ok(engine.resume(JSON.stringify(state)).activated().includes('Glob'));
});

test('per_prompt drops what has no evidence; a direct call to a deferred tool fails and declares it', () => {
  const engine = Engine.fromFiles(policyPath, registryPath);
  const chat = engine.session({ mode: 'agent' });
  const miss = chat.call('WebSearch');
  assert.equal(miss.allowed, false);
  assert.equal(miss.declaredNextStep, true);
  assert.match(miss.text, /not found\. It has been loaded now/);
  assert.ok(chat.plan().declared.some((t) => t.name === 'WebSearch'));
  chat.load(['TodoWrite'], { status: 'error' });
  assert.ok(!chat.activated().includes('TodoWrite'), 'a failed load activates nothing');
  chat.prompt();
  assert.deepEqual(chat.activated(), [], 'nothing had evidence');
  chat.load(['TodoWrite']);
  chat.prompt();
  assert.deepEqual(chat.activated(), ['TodoWrite']);
  assert.equal(chat.compact(), 1);
  chat.prompt();
  assert.deepEqual(chat.activated(), []);
  chat.restart();
});

test('hidden tools are refused and never shown', () => {
  const chat = new Engine(smallPolicy, small).session();
  assert.deepEqual(chat.call('Secret'), { allowed: false, declaredNextStep: false, text: 'Tool `Secret` not found.' });
  const r = chat.search('', ['Secret']);
  assert.deepEqual(r.unavailable, ['Secret']);
  assert.ok(!chat.toolList().some((t) => t.name === 'Secret'));
});

test("the engine's own tools: search tool in place, call-through on request", () => {
  const chat = new Engine(smallPolicy, small).session();
  assert.deepEqual(chat.toolList().map((t) => t.name), ['tool_search', 'Read']);
  const through = chat.toolList({ callThrough: true });
  assert.deepEqual(through.map((t) => t.name), ['tool_search', 'call_tool', 'Read']);
  assert.match(through[0].description, /- WebFetch: Fetch a web page\./);
  const r = chat.search('fetch a web page', [], { callThrough: 'call_tool' });
  assert.match(r.text, /parameters: \{/);
});

test('provider shapes keep extra fields; an unknown provider throws', () => {
  const chat = new Engine('', small).session();
  const openai = chat.providerTools('openai');
  assert.equal(openai[1].type, 'function');
  assert.deepEqual(openai[1].function.cache_control, { type: 'ephemeral' });
  assert.ok(chat.providerTools('anthropic')[1].input_schema);
  const e = throws(() => chat.providerTools('opnai'), /unknown provider `opnai`/);
  assert.equal(e.diagnostics[0].help, 'did you mean `openai`');
});

test('explain gives the contract in camelCase', () => {
  const engine = Engine.fromFiles(policyPath, registryPath);
  const e = engine.explain('WebFetch', { mode: 'agent' });
  assert.equal(e.item, 'WebFetch');
  assert.equal(e.exposure, 'deferred');
  assert.equal(e.cause.kind, 'defer');
  assert.equal(e.cause.rule.line, 19);
  assert.ok(Array.isArray(e.candidates) && e.candidates[0].selectorLine > 0);
  throws(() => engine.explain('WebFetch'), /no mode/);
  throws(() => engine.explain('skill:'), /names nothing/);
});

test('a policy that does not load throws every diagnostic, located', () => {
  const e = throws(() => new Engine('Defr(x)\nDefer(\n', small, { file: 'mine.policy' }), /^mine\.policy:1:1: error\[PL004\]/);
  assert.deepEqual(e.diagnostics.map((d) => d.code), ['PL004', 'PL001']);
  const d = e.diagnostics[0];
  assert.deepEqual([d.file, d.line, d.column, d.severity], ['mine.policy', 1, 1, 'error']);
  assert.equal(d.help, 'did you mean `Defer`');
});

test('registry errors name the entry', () => {
  const e = throws(() => new Engine('', [{ name: 'a' }, { name: 'a' }]), /tools\[1\]\.name/);
  assert.equal(e.diagnostics[0].path, 'tools[1].name');
  throws(() => new Engine('', '{not json'), /not valid JSON/);
  throws(() => Engine.fromFiles(policyPath, '/nonexistent/registry.json'), /cannot read/);
});

test('reloads throw and keep the last good engine', () => {
  const engine = new Engine(smallPolicy, small);
  const chat = engine.session();
  chat.search('fetch a web page');
  throws(() => engine.reloadPolicy('Defer(\n'), /PL001/);
  throws(() => engine.reloadRegistry([{ description: 'no name' }]), /tools\[0\]\.name/);
  throws(() => engine.reloadSkills('[1]'), /skills\[0\]/);
  assert.deepEqual(chat.plan().deferred, []);
  assert.deepEqual(chat.plan().activated, ['WebFetch']);
  engine.reloadPolicy('Hide(WebFetch)\n');
  assert.deepEqual(chat.plan().hidden, ['WebFetch']);
  engine.reloadRegistry(small.slice(0, 1));
  assert.deepEqual(engine.toolNames, ['Read']);
  engine.reloadSkills([{ name: 'review', description: 'Review code.' }]);
  assert.deepEqual(chat.plan().skills, ['review']);
  assert.equal(chat.resolveSkill('review').name, 'review');
});

test('modes: a policy with modes needs one; switching to an undeclared one throws and keeps the old', () => {
  const engine = Engine.fromFiles(policyPath, registryPath);
  assert.deepEqual(engine.modes, ['agent', 'chat']);
  throws(() => engine.session(), /no mode/);
  const e = throws(() => engine.session({ mode: 'agnet' }));
  assert.match(e.diagnostics[0].help, /agent/);
  const chat = engine.session({ mode: 'agent' });
  throws(() => chat.setMode('nope'));
  assert.equal(chat.state().context.mode, 'agent');
  chat.setMode('chat');
  assert.ok(chat.plan().declared.some((t) => t.name === 'Glob'));
  chat.setContext({ mode: 'agent', flags: ['x'] });
  assert.deepEqual(chat.state().context.flags, ['x']);
});

test('a mistyped result status throws with the nearest status, and records nothing', () => {
  const engine = new Engine('NoDefer(WebFetch)\n', small);
  const chat = engine.session();
  const e = throws(() => chat.recordResult('WebFetch', 'interupted'), /unknown status `interupted` in status/);
  assert.match(e.diagnostics[0].help, /did you mean `interrupted`/);
  assert.deepEqual(chat.state().evidence, []);
});

test('a flag no `when` of the policy names throws with did-you-mean, as an unknown mode does', () => {
  const engine = new Engine('NoDefer(WebFetch)\nwhen readonly {\n  Hide(WebFetch)\n}\n', small);
  const e = throws(() => engine.session({ flags: ['readonyl'] }), /the flag `readonyl`/);
  assert.match(e.diagnostics[0].help, /did you mean `readonly`/);
  const chat = engine.session({ flags: ['readonly'] });
  assert.ok(!chat.plan().declared.some((t) => t.name === 'WebFetch'));
  throws(() => chat.setContext({ flags: ['readonyl'] }), /readonyl/);
  assert.deepEqual(chat.state().context.flags, ['readonly']);
});

test('a runtime grant that can only be a slip throws, naming it; the session keeps its context', () => {
  const engine = Engine.fromFiles(policyPath, registryPath);
  throws(() => engine.session({ mode: 'agent', grants: ['Read', 'skill:'] }), /`skill:` has no pattern/);
  throws(() => engine.session({ mode: 'agent', grants: [''] }), /grant is empty/);
  const chat = engine.session({ mode: 'agent', grants: ['Read'] });
  throws(() => chat.setContext({ mode: 'agent', grants: [' Read'] }), /white space at an end/);
  assert.deepEqual(chat.state().context.grants, ['Read']);
  assert.ok(chat.plan().declared.some((t) => t.name === 'Read'));
});

test('bad input of every kind throws; it never crashes the process', () => {
  const engine = new Engine(smallPolicy, small);
  const chat = engine.session();
  const values = [undefined, null, 0, 1.5, -1, NaN, true, '', 'x', [], [1], {}, { a: 1 }, () => 1, Symbol('s'), 10n];
  const calls = [
    (v) => new Engine(v, small),
    (v) => new Engine('', v),
    (v) => new Engine('', small, v),
    (v) => engine.session(v),
    (v) => engine.resume(v),
    (v) => engine.explain(v),
    (v) => engine.explain('Read', v),
    (v) => engine.reloadPolicy(v),
    (v) => engine.reloadRegistry(v),
    (v) => engine.reloadSkills(v),
    (v) => chat.providerTools(v),
    (v) => chat.toolList(v),
    (v) => chat.search(v),
    (v) => chat.search('q', v),
    (v) => chat.search('q', [], v),
    (v) => chat.load(v),
    (v) => chat.call(v),
    (v) => chat.recordResult('Read', v),
    (v) => chat.setMode(v),
    (v) => chat.setContext(v),
    (v) => chat.resolveSkill(v),
  ];
  let threw = 0;
  for (const call of calls) {
    for (const v of values) {
      try {
        call(v);
      } catch (e) {
        assert.ok(e instanceof Error, String(e));
        assert.doesNotMatch(e.message, /rust type|serde_json|panicked/i, e.message);
        threw += 1;
      }
    }
  }
  assert.ok(threw > calls.length * 4, `only ${threw} threw`);
  // The engine still answers after all that.
  assert.ok(Array.isArray(engine.session().plan().declared));
});

test('an unchanged plan is the same frozen object; any change makes a new one', () => {
  const engine = new Engine(smallPolicy, small);
  const chat = engine.session();
  const first = chat.plan();
  assert.equal(chat.plan(), first);
  assert.ok(Object.isFrozen(first) && Object.isFrozen(first.declared) && Object.isFrozen(first.declared[0].parameters));
  assert.throws(() => {
    'use strict';
    first.deferred.push('x');
  });
  const list = chat.toolList();
  assert.equal(chat.toolList(), list);
  assert.notEqual(chat.toolList({ callThrough: true }), list);
  chat.search('fetch a web page');
  const second = chat.plan();
  assert.notEqual(second, first);
  assert.deepEqual(second.activated, ['WebFetch']);
  assert.deepEqual(first.activated, [], 'an earlier plan does not change');
  engine.reloadPolicy('Hide(WebFetch)\n');
  assert.deepEqual(chat.plan().hidden, ['WebFetch']);
  const other = engine.session();
  assert.notEqual(other.plan(), chat.plan(), 'sessions do not share objects');
  chat.setMode(null);
  assert.equal(chat.plan(), chat.plan());
});

test('definition objects live as long as the snapshot: shared across plans, views and sessions', () => {
  const engine = new Engine(smallPolicy, small);
  const chat = engine.session();
  const other = engine.session();
  const first = chat.plan();
  const read = first.declared[0];
  assert.equal(other.plan().declared[0], read, 'another session gets the same object');
  assert.equal(chat.toolList()[1], read, 'the tool list holds the same object');
  chat.search('fetch a web page');
  const second = chat.plan();
  assert.notEqual(second, first);
  assert.equal(second.declared[0], read, 'a changed plan keeps the definitions it still declares');
  assert.equal(second.catalog, first.catalog);
  const fetch = second.declared[1];
  other.load(['WebFetch']);
  assert.equal(other.plan().declared[1], fetch);
  for (const d of second.declared) {
    assert.ok(Object.isFrozen(d) && Object.isFrozen(d.parameters) && Object.isFrozen(d.parameters.properties));
  }
  assert.deepEqual(fetch.cache_control, { type: 'ephemeral' });
  assert.ok(Object.isFrozen(fetch.cache_control));
});

test('a reload makes new definition objects: the next plan shows the new registry', () => {
  const engine = new Engine(smallPolicy, small);
  const chat = engine.session();
  const before = chat.plan().declared[0];
  const openai = chat.providerTools('openai');
  const changed = small.map((t) => (t.name === 'Read' ? { ...t, description: 'Read a file, changed.' } : t));
  engine.reloadRegistry(changed);
  const after = chat.plan().declared[0];
  assert.equal(after.description, 'Read a file, changed.');
  assert.notEqual(after, before);
  assert.equal(before.description, 'Read a file. Returns its text.', 'an earlier object does not change');
  assert.equal(chat.providerTools('openai')[0].function.description, 'Read a file, changed.');
  assert.equal(openai[0].function.description, 'Read a file. Returns its text.');
  assert.equal(chat.toolList()[1].description, 'Read a file, changed.');
  // A policy reload is a new snapshot too: its objects are new, their content the same.
  const kept = chat.plan().declared[0];
  engine.reloadPolicy(smallPolicy);
  assert.notEqual(chat.plan().declared[0], kept);
  assert.deepEqual(chat.plan().declared[0], kept);
});

test('provider lists are frozen, the same while nothing changes, and in the library shape', () => {
  const engine = new Engine(smallPolicy, small);
  const chat = engine.session();
  const openai = chat.providerTools('openai');
  assert.equal(chat.providerTools('openai'), openai);
  assert.ok(Object.isFrozen(openai) && Object.isFrozen(openai[0]) && Object.isFrozen(openai[0].function.parameters));
  assert.deepEqual(openai, [{ type: 'function', function: { name: 'Read', description: 'Read a file. Returns its text.', parameters: { type: 'object', properties: {} } } }]);
  const deferred = chat.providerTools('anthropic-deferred');
  assert.deepEqual(deferred.map((t) => [t.name, t.defer_loading]), [['Read', undefined], ['WebFetch', true]]);
  assert.deepEqual(chat.providerTools('anthropic')[0], { name: 'Read', description: 'Read a file. Returns its text.', input_schema: { type: 'object', properties: {} } });
  chat.search('fetch a web page');
  const next = chat.providerTools('openai');
  assert.notEqual(next, openai);
  assert.equal(next[0], openai[0]);
  assert.equal(next[1].function.name, 'WebFetch');
  // Nothing declared: the first deferred tool goes unmarked (the provider
  // refuses a request whose tools are all deferred).
  const none = new Engine('Defer(*)\n', small).session();
  assert.deepEqual(
    none.providerTools('anthropic-deferred').map((t) => [t.name, t.defer_loading]),
    [['Read', undefined], ['WebFetch', true], ['Secret', true]],
  );
  assert.equal(none.providerTools('anthropic')[0]?.name, undefined);
});

test('many distinct own-tool definitions: parts are reused without mixing them up', () => {
  const chat = new Engine(smallPolicy, small).session();
  for (let round = 0; round < 2; round++) {
    for (let k = 0; k < 80; k++) {
      const list = chat.toolList({ callThrough: `call_${k}` });
      assert.deepEqual(list.map((t) => t.name), ['tool_search', `call_${k}`, 'Read']);
      assert.match(list[0].description, /- WebFetch: Fetch a web page\./);
    }
  }
});

test('a search result is a plain object of the contract, in its order', () => {
  const chat = new Engine(smallPolicy, small).session();
  const r = chat.search('fetch a web page');
  assert.deepEqual(Object.keys(r), ['activated', 'alreadyActive', 'unavailable', 'matches', 'overLimit', 'remainingDeferred', 'status', 'text']);
  assert.deepEqual(r.activated, ['WebFetch']);
  assert.equal(r.status, 'ok');
  assert.ok(!Object.isFrozen(r));
  const l = chat.load(['WebFetch', 'Nope']);
  assert.deepEqual([l.activated, l.alreadyActive, l.unavailable, l.remainingDeferred], [[], ['WebFetch'], ['Nope'], 0]);
});

test('planJson is the same text while nothing changes, and follows a change or a reload', () => {
  const engine = new Engine(smallPolicy, small);
  const chat = engine.session();
  const first = chat.planJson();
  assert.equal(chat.planJson(), first);
  assert.deepEqual(JSON.parse(first).declared, chat.plan().declared);
  chat.search('fetch a web page');
  assert.deepEqual(JSON.parse(chat.planJson()).declared.map((t) => t.name), ['Read', 'WebFetch']);
  engine.reloadRegistry(small.map((t) => (t.name === 'Read' ? { ...t, description: 'Read, changed.' } : t)));
  assert.equal(JSON.parse(chat.planJson()).declared[0].description, 'Read, changed.');
});

test('tool annotations drive hint: selectors in every shape, and explain names them', () => {
  const tools = [
    { name: 'read_file', description: 'Read a file.', annotations: { readOnlyHint: true, openWorldHint: false } },
    { name: 'write_file', description: 'Write a file.', annotations: { readOnlyHint: false, destructiveHint: true } },
    { name: 'mkdir', description: 'Make a folder.', annotations: { destructiveHint: false } },
    { name: 'shell', description: 'Run a command.' },
  ];
  const policy = 'mode plan {\n  Grant(hint:read_only)\n}\nmode agent {\n  Hide(hint:destructive)\n}\n';
  const shapes = [
    tools,
    tools.map((t) => ({ name: t.name, description: t.description, inputSchema: { type: 'object' }, annotations: t.annotations })),
    tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, annotations: t.annotations } })),
  ];
  for (const shape of shapes) {
    const engine = new Engine(policy, shape);
    const plan = (mode) => engine.session({ mode }).plan();
    assert.deepEqual(plan('plan').declared.map((t) => t.name), ['read_file']);
    assert.deepEqual(plan('agent').declared.map((t) => t.name), ['read_file', 'mkdir']);
    assert.deepEqual(plan('agent').hidden, ['write_file', 'shell']);
  }
  const e = new Engine(policy, tools).explain('shell', { mode: 'agent' });
  assert.equal(e.cause.kind, 'hide');
  assert.equal(e.cause.selector.text, 'hint:destructive');
  assert.match(e.cause.annotation, /`destructiveHint` absent, so true \(the default\)/);
});
