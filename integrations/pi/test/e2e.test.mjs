// The extension inside a real pi session, offline: pi's scripted (faux)
// model provider plays the model, and each of its steps records the tools
// pi declared in that request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider } from '@mariozechner/pi-ai';
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

const POLICY = `
search tool_search
activation = "per_prompt"
on_miss = "activate"
max_activations = 2
NoDefer(read, bash)
Hide(secret_*)
Defer(*)
`;

/** A custom tool that answers with its name. */
function tool(name, description) {
  return defineTool({
    name,
    label: name,
    description,
    parameters: { type: 'object', properties: { text: { type: 'string' } } },
    execute: async () => ({ content: [{ type: 'text', text: `ran ${name}` }], details: {} }),
  });
}

/** Resolves once `check()` holds, polling; gives up after 20 s. */
async function until(check) {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('gave up waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Rejects after `ms`: no wait in this test can hang. */
function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A pi session in `cwd` that the faux provider answers, offline. The
 * extension comes from `extensions` (factories, pi's other extensions off)
 * or from `extensionPaths` (pi's own loader); `sessionManager` is in memory
 * unless given, so two sessions can share one store.
 */
async function openSession(cwd, faux, options) {
  const { extensions, extensionPaths, customTools, sessionStartEvent } = options;
  const authStorage = AuthStorage.inMemory();
  authStorage.setRuntimeApiKey(faux.getModel().provider, 'offline');
  const agentDir = join(cwd, 'agent');
  const resourceLoader = new DefaultResourceLoader({
    cwd,
    agentDir,
    ...(extensionPaths
      ? { additionalExtensionPaths: extensionPaths }
      : { noExtensions: true, extensionFactories: extensions }),
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
      sessionManager: options.sessionManager ?? SessionManager.inMemory(),
      settingsManager: SettingsManager.inMemory(),
      ...(sessionStartEvent ? { sessionStartEvent } : {}),
      ...(customTools ? { customTools } : {}),
    }),
    'creating the session',
  );
}

test('a pi session declares, searches, refuses and rebuilds as the policy says', { timeout: 60_000 }, async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'toolpolicy-pi-'));
  const faux = registerFauxProvider();
  const requests = [];
  const activeAfterCalls = [];
  let session;
  const results = [];
  /** One scripted step: record the declared tools, then answer. */
  const step = (answer) => (context) => {
    requests.push((context.tools ?? []).map((t) => t.name));
    for (const m of context.messages) {
      if (m.role === 'toolResult') results.push(m);
    }
    return answer;
  };
  faux.setResponses([
    // Prompt 1, request 1: search by names, in the order to activate them.
    step(fauxAssistantMessage(fauxToolCall('tool_search', { query: '', names: ['todo_write', 'web_fetch'] }))),
    // Request 2: a hidden tool, a deferred tool called directly, an activated one.
    (context) => {
      activeAfterCalls.push(null);
      return step(
      fauxAssistantMessage([
        fauxToolCall('secret_vault', {}),
        fauxToolCall('browser_preview', {}),
        fauxToolCall('web_fetch', { text: 'x' }),
      ]),
      )(context);
    },
    (context) => {
      // pi keeps a run's tools; the plan's change is in pi's active tools,
      // declared from the next run.
      activeAfterCalls.push(session.getActiveToolNames());
      return step(fauxAssistantMessage('done'))(context);
    },
    // Prompt 2: the rebuild keeps what has evidence.
    step(fauxAssistantMessage(fauxText('again'))),
  ]);

  ({ session } = await openSession(cwd, faux, {
    extensions: [createExtension({ policy: POLICY })],
    customTools: [
      tool('web_fetch', 'Fetch a web page and return it as markdown.'),
      tool('todo_write', 'Write the todo list of the task.'),
      tool('browser_preview', 'Open a page in the browser preview.'),
      tool('secret_vault', 'Read a secret from the vault.'),
    ],
  }));
  const errors = [];
  // What pi's own modes do once a session exists: session_start fires here.
  await within(10_000, session.bindExtensions({ onError: (e) => errors.push(e) }), 'starting extensions');
  try {
    await within(20_000, session.prompt('find things'), 'the first prompt');
    // The search ended the run; the extension continues in a new one.
    await within(20_000, until(() => requests.length >= 3 && !session.isStreaming), 'the continued run');
    // The first request declares the plan: the search tool, then the active tools.
    assert.deepEqual(requests[0], ['tool_search', 'read', 'bash']);
    // The search's tools are declared next, in first-activation order.
    assert.deepEqual(requests[1], ['tool_search', 'read', 'bash', 'todo_write', 'web_fetch']);
    // The hidden tool was refused; the deferred one failed and is declared
    // from the next run on (pi fixes the tools of a run when it starts).
    assert.deepEqual(requests[2], requests[1]);
    assert.deepEqual(activeAfterCalls[1], ['tool_search', 'read', 'bash', 'todo_write', 'web_fetch', 'browser_preview']);
    const text = (m) => m.content.map((c) => c.text ?? '').join('');
    const byTool = Object.fromEntries(results.map((m) => [m.toolName, m]));
    assert.match(text(byTool.tool_search), /^Loaded 2 tools, callable from your next step:/);
    assert.equal(byTool.secret_vault.isError, true);
    assert.match(text(byTool.secret_vault), /not found/);
    assert.equal(byTool.browser_preview.isError, true);
    assert.equal(byTool.web_fetch.isError, false);
    assert.equal(text(byTool.web_fetch), 'ran web_fetch');
    assert.ok(!requests.flat().includes('secret_vault'), 'a hidden tool is never declared');

    await within(20_000, session.prompt('next'), 'the second prompt');
    // per_prompt: browser_preview has no evidence (its call failed) and is gone.
    assert.deepEqual(requests[3], ['tool_search', 'read', 'bash', 'todo_write', 'web_fetch']);
    assert.deepEqual(errors, []);
  } finally {
    session.dispose?.();
    faux.unregister();
  }
});

test("pi's own loader loads the extension from its path, with the bundled policy", { timeout: 60_000 }, async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'toolpolicy-pi-'));
  const faux = registerFauxProvider();
  const { session, extensionsResult } = await openSession(cwd, faux, {
    extensionPaths: [fileURLToPath(new URL('../index.js', import.meta.url))],
    customTools: [tool('web_fetch', 'Fetch a web page and return it as markdown.')],
  });
  try {
    assert.deepEqual(extensionsResult.errors, []);
    await within(10_000, session.bindExtensions({}), 'starting extensions');
    // The bundled policy declares pi's everyday tools and defers web_fetch.
    assert.deepEqual(session.getActiveToolNames(), ['tool_search', 'read', 'bash', 'edit', 'write', 'grep', 'find', 'ls']);
  } finally {
    session.dispose?.();
    faux.unregister();
  }
});

test('a resumed pi session declares again what its evidence activated', { timeout: 60_000 }, async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'toolpolicy-pi-'));
  const faux = registerFauxProvider();
  const sessionManager = SessionManager.inMemory();
  const requests = [];
  const step = (answer) => (context) => {
    requests.push((context.tools ?? []).map((t) => t.name));
    return answer;
  };
  faux.setResponses([
    step(fauxAssistantMessage(fauxToolCall('tool_search', { query: '', names: ['web_fetch'] }))),
    step(fauxAssistantMessage('loaded')),
  ]);
  /** A pi session over the same session store, started for `reason`. */
  async function open(reason) {
    const { session } = await openSession(cwd, faux, {
      extensions: [createExtension({ policy: POLICY })],
      sessionManager,
      sessionStartEvent: { type: 'session_start', reason },
      customTools: [tool('web_fetch', 'Fetch a web page and return it as markdown.')],
    });
    await within(10_000, session.bindExtensions({}), 'starting extensions');
    return session;
  }
  const first = await open('startup');
  try {
    await within(20_000, first.prompt('fetch'), 'the prompt');
    await within(20_000, until(() => requests.length >= 2 && !first.isStreaming), 'the continued run');
    assert.deepEqual(requests[1], ['tool_search', 'read', 'bash', 'web_fetch']);
  } finally {
    first.dispose?.();
  }
  const second = await open('resume');
  try {
    assert.deepEqual(second.getActiveToolNames(), ['tool_search', 'read', 'bash', 'web_fetch']);
  } finally {
    second.dispose?.();
    faux.unregister();
  }
});

test('a policy that does not load declares no tool (fail closed) and says why', { timeout: 60_000 }, async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'toolpolicy-pi-'));
  const faux = registerFauxProvider();
  const { session } = await openSession(cwd, faux, {
    extensions: [createExtension({ policy: 'Hide(bash)\nDefr(read)\n' })],
  });
  const logged = [];
  const error = console.error;
  console.error = (...a) => logged.push(a.join(' '));
  try {
    await within(10_000, session.bindExtensions({}), 'starting extensions');
    assert.deepEqual(session.getActiveToolNames(), []);
    assert.match(logged.join('\n'), /PL004.*unknown rule `Defr`/);
  } finally {
    console.error = error;
    session.dispose?.();
    faux.unregister();
  }
});
