// The README's TypeScript example runs as written (it uses no type
// syntax), against this build of the module.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

test("the README's example of the Node module runs", async () => {
  const section = readme.slice(readme.indexOf('### The Node module'));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  assert.ok(block, 'the README has a ts block in "The Node module"');
  const module = fileURLToPath(new URL('../index.js', import.meta.url));
  const code = block[1].replace(
    "import { Engine } from '@toolpolicy/node';",
    `import { createRequire } from 'node:module';\nconst { Engine } = createRequire(import.meta.url)(${JSON.stringify(module)});`,
  );
  assert.notEqual(code, block[1], 'the example imports @toolpolicy/node');
  const file = join(mkdtempSync(join(tmpdir(), 'toolpolicy-readme-')), 'example.mjs');
  writeFileSync(file, `${code}\nexport { plan, found, call, saved };\n`);
  const { plan, found, call, saved } = await import(file);
  assert.deepEqual(plan.declared.map((t) => t.name), ['read']);
  assert.deepEqual(found.activated, ['web_fetch']);
  assert.equal(call.allowed, true);
  assert.deepEqual(JSON.parse(saved).evidence, ['web_fetch']);
});
