// Learned search terms through the Node module: the engine reads the terms
// file the policy names (`terms = "search-terms.toml"`) from the policy's
// folder, searches with it, reads it again on reloadPolicy, and never
// searches a hidden tool's terms.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const { Engine } = require('../index.js');

const tools = [
  { name: 'notes', description: 'Store a short text note.' },
  { name: 'weather', description: 'Current weather for a city.' },
  { name: 'vault', description: 'Read a secret from the vault.' },
];
const POLICY = 'terms = "search-terms.toml"\nsearch tool_search\nDefer(*)\n';
const TERMS = '[notes]\nterms = ["jot memos down quickly"]\n[vault]\nterms = ["jot memos down quickly", "open the safe"]\n';

function folder(t, files) {
  const dir = mkdtempSync(join(tmpdir(), 'toolpolicy-terms-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const found = (engine, query) => engine.session().search(query).activated;

test('a policy file reads its terms beside it, and a search finds a tool by them', (t) => {
  const dir = folder(t, { 'p.policy': POLICY, 'search-terms.toml': TERMS, 'tools.json': JSON.stringify(tools) });
  const engine = Engine.fromFiles(join(dir, 'p.policy'), join(dir, 'tools.json'));
  // Both tools' terms say it; neither tool's own text does.
  assert.deepEqual(found(engine, 'jot down a memo'), ['notes', 'vault']);
  // Without the terms file the same search finds nothing.
  const plain = new Engine('search tool_search\nDefer(*)\n', tools);
  assert.deepEqual(found(plain, 'jot down a memo'), []);
});

test('a hidden tool is never found by its terms', (t) => {
  const dir = folder(t, { 'search-terms.toml': TERMS });
  const engine = new Engine(`${POLICY}Hide(vault)\n`, tools, { dir });
  assert.deepEqual(found(engine, 'open the safe'), []);
  assert.deepEqual(found(engine, 'jot memos down quickly'), ['notes']);
});

test('reloadPolicy reads the terms again; a bad file keeps the last good', (t) => {
  const dir = folder(t, { 'search-terms.toml': TERMS });
  const engine = new Engine(POLICY, tools, { dir });
  assert.deepEqual(found(engine, 'is it raining outside'), []);
  writeFileSync(join(dir, 'search-terms.toml'), '[weather]\nterms = ["is it raining outside"]\n');
  engine.reloadPolicy(POLICY);
  assert.deepEqual(found(engine, 'is it raining outside'), ['weather']);
  writeFileSync(join(dir, 'search-terms.toml'), '[weather]\nterms = "not a list"\n');
  let error;
  try {
    engine.reloadPolicy(POLICY);
  } catch (e) {
    error = e;
  }
  assert.equal(error?.name, 'ToolPolicyError');
  assert.equal(error.diagnostics[0].code, 'PL016');
  assert.deepEqual(found(engine, 'is it raining outside'), ['weather'], 'the last good terms hold');
});

test('policy text that names a terms file needs a folder', () => {
  assert.throws(() => new Engine(POLICY, tools), (e) => e.name === 'ToolPolicyError' && /terms/.test(e.message));
});
