// The TypeScript example of docs/node.md runs as written (it uses no type
// syntax), against this build of the module.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const readme = readFileSync(new URL('../../../docs/node.md', import.meta.url), 'utf8');

test("the example of the Node module in docs/node.md runs", async () => {
  const section = readme.slice(readme.indexOf('## The Node module'));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  assert.ok(block, 'docs/node.md has a ts block in "The Node module"');
  // The package's name stands for this build; the import itself is as written.
  const module = new URL('../index.js', import.meta.url).href;
  const code = block[1].replace("from '@toolpolicy/node';", `from ${JSON.stringify(module)};`);
  assert.notEqual(code, block[1], 'the example imports @toolpolicy/node');
  const file = join(mkdtempSync(join(tmpdir(), 'toolpolicy-readme-')), 'example.mjs');
  writeFileSync(file, `${code}\nexport { plan, found, call, saved };\n`);
  const { plan, found, call, saved } = await import(file);
  assert.deepEqual(plan.declared.map((t) => t.name), ['read']);
  assert.deepEqual(found.activated, ['web_fetch']);
  assert.equal(call.allowed, true);
  assert.deepEqual(JSON.parse(saved).evidence, ['web_fetch']);
});
