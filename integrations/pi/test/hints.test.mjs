// `hint:` selectors in a real pi session, offline: pi's own `read`, `grep`,
// `find` and `ls` say they are read-only, so a plan mode written as
// `Grant(hint:read_only)` keeps exactly them; a tool that says nothing goes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { registerFauxProvider } from '@mariozechner/pi-ai';
import { defineTool } from '@mariozechner/pi-coding-agent';

import { createExtension } from '../index.js';
import { openSession, within } from '../test-support/pi-session.mjs';
import { annotationsOf, READ_ONLY_BUILTINS } from '../hints.js';


test("pi's reading tools are read-only; others keep what they say", () => {
  assert.deepEqual(READ_ONLY_BUILTINS, ['read', 'grep', 'find', 'ls']);
  assert.deepEqual(annotationsOf({ name: 'grep' }, 'builtin'), { readOnlyHint: true, openWorldHint: false });
  assert.equal(annotationsOf({ name: 'bash' }, 'builtin'), undefined);
  // A tool of another extension named `read` is not pi's: it says nothing.
  assert.equal(annotationsOf({ name: 'read' }, 'extension'), undefined);
  const own = { destructiveHint: false };
  assert.equal(annotationsOf({ name: 'mkdir', annotations: own }, 'extension'), own);
});

test('Grant(hint:read_only) keeps exactly the tools that say they only read', { timeout: 60_000 }, async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'toolpolicy-pi-'));
  const faux = registerFauxProvider();
  const fetch = defineTool({
    name: 'web_fetch',
    label: 'web_fetch',
    description: 'Fetch a web page and return it as markdown.',
    parameters: { type: 'object', properties: {} },
    execute: async () => ({ content: [{ type: 'text', text: 'page' }], details: {} }),
  });
  const { session } = await openSession(cwd, faux, {
    extensions: [createExtension({ policy: 'NoDefer(*)\nGrant(hint:read_only)\n' })],
    customTools: [fetch],
  });
  try {
    await within(10_000, session.bindExtensions({}), 'starting extensions');
    assert.deepEqual(session.getActiveToolNames(), ['read', 'grep', 'find', 'ls']);
  } finally {
    session.dispose?.();
    faux.unregister();
  }
});
