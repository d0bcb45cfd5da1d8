// A real pi session for the tests, offline: pi's scripted (faux) model
// provider plays the model. Shared by the test files beside it.
import { join } from 'node:path';

import {
  AuthStorage,
  createAgentSession,
  DefaultResourceLoader,
  ModelRegistry,
  SessionManager,
  SettingsManager,
  defineTool,
} from '@mariozechner/pi-coding-agent';

/** Rejects after `ms`: no wait in this test can hang. */
export function within(ms, promise, what) {
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
export async function openSession(cwd, faux, options) {
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

/** A custom tool that answers with its name. */
export function tool(name, description) {
  return defineTool({
    name,
    label: name,
    description,
    parameters: { type: 'object', properties: { text: { type: 'string' } } },
    execute: async () => ({ content: [{ type: 'text', text: `ran ${name}` }], details: {} }),
  });
}

/** Resolves once `check()` holds, polling; gives up after 20 s. */
export async function until(check) {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('gave up waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A UI that records pi's notices as `level: text`; every other call of
 * pi's UI does nothing.
 */
export function recordingUi() {
  const notices = [];
  const uiContext = new Proxy(
    { notify: (text, level) => notices.push(`${level}: ${text}`) },
    { get: (target, key) => target[key] ?? (() => undefined) },
  );
  return { notices, uiContext };
}
