// `hint:` selectors in a real pi session, offline: pi's own `read`, `grep`,
// `find` and `ls` say they are read-only, so a plan mode written as
// `Grant(hint:read_only)` keeps exactly them; a tool that says nothing goes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { registerFauxProvider } from '@mariozechner/pi-ai';
import {
  AuthStorage,
  createAgentSession,
  DefaultResourceLoader,
  defineTool,
  ModelRegistry,
  SessionManager,
  SettingsManager,
} from '@mariozechner/pi-coding-agent';

import { createExtension } from '../index.js';
import { annotationsOf, READ_ONLY_BUILTINS } from '../hints.js';

/** Rejects after `ms`: no wait in this test can hang. */
function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function openSession(cwd, faux, policy, customTools) {
  const authStorage = AuthStorage.inMemory();
  authStorage.setRuntimeApiKey(faux.getModel().provider, 'offline');
  const agentDir = join(cwd, 'agent');
  const resourceLoader = new DefaultResourceLoader({
    cwd,
    agentDir,
    noExtensions: true,
    extensionFactories: [createExtension({ policy })],
    noSkills: true,
    noPromptTemplates: true,
    noThemes: true,
    noContextFiles: true,
  });
  await within(20_000, resourceLoader.reload(), 'loading resources');
  return within(
    10_000,
    createAgentSession({
      cwd,
      agentDir,
      model: faux.getModel(),
      authStorage,
      modelRegistry: ModelRegistry.inMemory(authStorage),
      resourceLoader,
      sessionManager: SessionManager.inMemory(),
      settingsManager: SettingsManager.inMemory(),
      customTools,
    }),
    'creating the session',
  );
}

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
  const { session } = await openSession(cwd, faux, 'NoDefer(*)\nGrant(hint:read_only)\n', [fetch]);
  try {
    await within(10_000, session.bindExtensions({}), 'starting extensions');
    assert.deepEqual(session.getActiveToolNames(), ['read', 'grep', 'find', 'ls']);
  } finally {
    session.dispose?.();
    faux.unregister();
  }
});
