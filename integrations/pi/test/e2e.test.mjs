// The extension inside a real pi session, offline: pi's scripted (faux)
// model provider plays the model, and each of its steps records the tools
// pi declared in that request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider } from '@mariozechner/pi-ai';
import { defineTool, SessionManager } from '@mariozechner/pi-coding-agent';

import { createExtension, STATE_ENTRY } from '../index.js';
import { openSession, recordingUi, tool, until, within } from '../test-support/pi-session.mjs';

const POLICY = `
search tool_search
activation = "per_prompt"
on_miss = "activate"
max_activations = 2
NoDefer(read, bash)
Hide(secret_*)
Defer(*)
`;


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

/** Runs `f` with `PI_TOOLS_POLICY` set to `value` (or unset for `undefined`), then restores it. */
async function withPolicyEnv(value, f) {
  const before = process.env.PI_TOOLS_POLICY;
  if (value === undefined) delete process.env.PI_TOOLS_POLICY;
  else process.env.PI_TOOLS_POLICY = value;
  try {
    return await f();
  } finally {
    if (before === undefined) delete process.env.PI_TOOLS_POLICY;
    else process.env.PI_TOOLS_POLICY = before;
  }
}

/** A project folder with a `.pi/tools.policy` and a `.pi/lazy-tools.json`: fallbacks that hide nothing. */
function projectWithFallbacks() {
  const cwd = mkdtempSync(join(tmpdir(), 'toolpolicy-pi-'));
  mkdirSync(join(cwd, '.pi'));
  writeFileSync(join(cwd, '.pi', 'tools.policy'), 'NoDefer(*)\n');
  writeFileSync(join(cwd, '.pi', 'lazy-tools.json'), '{"defer": [], "noDefer": ["*"]}');
  return cwd;
}

test('a policy the user names that cannot be read declares nothing and blocks every call; nothing falls back', { timeout: 120_000 }, async () => {
  const cwd = projectWithFallbacks();
  mkdirSync(join(cwd, 'a-folder'));
  const missing = join(cwd, 'unmounted', 'tools.policy');
  const cases = [
    ['the `policyPath` option, a typo', { policyPath: join(cwd, 'tools.polcy') }, undefined, /the policy `.*\/tools\.polcy` \(from the `policyPath` option\) does not exist/],
    ['`PI_TOOLS_POLICY`, an unmounted folder', {}, missing, /the policy `.*\/unmounted\/tools\.policy` \(from `PI_TOOLS_POLICY`\) does not exist/],
    ['`PI_TOOLS_POLICY`, a folder', {}, join(cwd, 'a-folder'), /cannot read `.*\/a-folder`: is a directory .*\(the policy from `PI_TOOLS_POLICY`\)/],
    ['`PI_TOOLS_POLICY`, empty', {}, '', /`PI_TOOLS_POLICY` names no file/],
    ['`PI_TOOLS_POLICY`, a device without end', {}, '/dev/zero', /cannot read `\/dev\/zero`: it is larger than 64 MiB/],
  ];
  for (const [what, options, env, message] of cases) {
    await withPolicyEnv(env, async () => {
      const faux = registerFauxProvider();
      const runs = [];
      const results = [];
      faux.setResponses([
        (context) => {
          results.push(context.tools ?? []);
          return fauxAssistantMessage([fauxToolCall('web_fetch', { text: 'x' }), fauxToolCall('read', { path: 'x' })]);
        },
        (context) => {
          for (const m of context.messages) if (m.role === 'toolResult') results.push(m);
          return fauxAssistantMessage('done');
        },
      ]);
      const { session } = await openSession(cwd, faux, {
        extensions: [createExtension(options)],
        customTools: [
          defineTool({
            name: 'web_fetch',
            label: 'web_fetch',
            description: 'Fetch a web page.',
            parameters: { type: 'object', properties: { text: { type: 'string' } } },
            execute: async () => {
              runs.push('web_fetch');
              return { content: [{ type: 'text', text: 'ran' }], details: {} };
            },
          }),
        ],
      });
      const { notices, uiContext } = recordingUi();
      const error = console.error;
      console.error = () => {};
      try {
        await within(10_000, session.bindExtensions({ uiContext }), 'starting extensions');
        assert.deepEqual(session.getActiveToolNames(), [], what);
        assert.equal(notices.length, 1, `${what}: ${notices.join('\n')}`);
        assert.match(notices[0], /^error: toolpolicy: no tools until the policy loads: /, what);
        assert.match(notices[0], message, what);
        await within(20_000, session.prompt('fetch'), 'the prompt');
        assert.deepEqual(results[0], [], `${what}: the model was offered tools`);
        const refused = results.slice(1);
        assert.deepEqual(refused.map((m) => [m.toolName, m.isError]), [['web_fetch', true], ['read', true]], what);
        assert.deepEqual(runs, [], `${what}: a tool ran`);
      } finally {
        console.error = error;
        session.dispose?.();
        faux.unregister();
      }
    });
  }
});

test('.pi/tools.policy that a session used and that is gone at /reload fails closed; a new session falls back and says so', { timeout: 120_000 }, async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'toolpolicy-pi-'));
  mkdirSync(join(cwd, '.pi'));
  const project = join(cwd, '.pi', 'tools.policy');
  const lazy = join(cwd, '.pi', 'lazy-tools.json');
  writeFileSync(project, 'search tool_search\nNoDefer(read)\nHide(bash)\nDefer(*)\n');
  writeFileSync(lazy, '{"defer": [], "noDefer": ["*"]}');
  await withPolicyEnv(undefined, async () => {
    const faux = registerFauxProvider();
    const sessionManager = SessionManager.inMemory();
    const customTools = [tool('web_fetch', 'Fetch a web page and return it as markdown.')];
    const { session } = await openSession(cwd, faux, { extensions: [createExtension()], sessionManager, customTools });
    const { notices, uiContext } = recordingUi();
    const error = console.error;
    console.error = () => {};
    try {
      await within(10_000, session.bindExtensions({ uiContext }), 'starting extensions');
      assert.deepEqual(session.getActiveToolNames(), ['tool_search', 'read']);
      assert.deepEqual(notices, [`info: toolpolicy: policy \`${project}\``]);

      // Deleted, then /reload: neither the pi-lazy-tools settings (which
      // would show bash) nor the bundled policy takes its place.
      rmSync(project);
      notices.length = 0;
      await within(20_000, session.reload(), 'the reload');
      assert.deepEqual(session.getActiveToolNames(), []);
      assert.equal(notices.length, 1, notices.join('\n'));
      assert.match(notices[0], /^error: toolpolicy: no tools until the policy loads: /);
      assert.ok(notices[0].includes(`\`${project}\` is gone: this pi session used it`), notices[0]);

      // Restored: it loads again at the next /reload.
      writeFileSync(project, 'search tool_search\nNoDefer(read)\nHide(bash)\nDefer(*)\n');
      notices.length = 0;
      await within(20_000, session.reload(), 'the second reload');
      assert.deepEqual(session.getActiveToolNames(), ['tool_search', 'read']);
      assert.deepEqual(notices, [`info: toolpolicy: policy \`${project}\``]);
    } finally {
      console.error = error;
      session.dispose?.();
    }

    // A new pi session in a project without the file: nothing was named, so
    // the fallback applies, and says which file it used.
    rmSync(project);
    const fresh = await openSession(cwd, faux, { extensions: [createExtension()], customTools });
    const ui = recordingUi();
    try {
      await within(10_000, fresh.session.bindExtensions({ uiContext: ui.uiContext }), 'starting extensions');
      assert.ok(fresh.session.getActiveToolNames().includes('bash'));
      assert.deepEqual(ui.notices, [
        `info: toolpolicy: no \`.pi/tools.policy\`: policy converted from the pi-lazy-tools settings \`${lazy}\``,
      ]);
    } finally {
      fresh.session.dispose?.();
    }
    rmSync(lazy);
    const bare = await openSession(cwd, faux, { extensions: [createExtension()], customTools });
    const bareUi = recordingUi();
    try {
      await within(10_000, bare.session.bindExtensions({ uiContext: bareUi.uiContext }), 'starting extensions');
      assert.equal(bareUi.notices.length, 1, bareUi.notices.join('\n'));
      assert.match(bareUi.notices[0], /^info: toolpolicy: no `.pi\/tools.policy`, `.pi\/lazy-tools.json` or `PI_TOOLS_POLICY`: the bundled example policy `.*tools\.policy`$/);
    } finally {
      bare.session.dispose?.();
      faux.unregister();
    }
  });
});

test('a hand-edited saved state resumes only its mode and evidence: its flags, bot and grants are ignored with a notice', { timeout: 60_000 }, async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'toolpolicy-pi-'));
  // Flag `trusted` would unlock the secret tools, bot `helper` would declare
  // web_fetch, grants would leave only what they grant.
  const policy = `
search tool_search
NoDefer(read, bash)
Defer(*)
when !trusted {
  Hide(secret_*)
}
bot helper {
  NoDefer(web_fetch)
}
mode agent {
}
mode review {
  NoDefer(todo_write)
}
`;
  const faux = registerFauxProvider();
  const ran = [];
  const customTools = ['secret_vault', 'web_fetch', 'todo_write', 'notes_read'].map((name) =>
    defineTool({
      name,
      label: name,
      description: `The ${name.replace('_', ' ')} tool.`,
      parameters: { type: 'object', properties: {} },
      execute: async () => {
        ran.push(name);
        return { content: [{ type: 'text', text: `ran ${name}` }], details: {} };
      },
    }),
  );
  /** A pi session resumed from `sessionManager`'s entries. */
  const open = async (sessionManager) => {
    const { session } = await openSession(cwd, faux, {
      extensions: [createExtension({ policy })],
      sessionManager,
      sessionStartEvent: { type: 'session_start', reason: 'resume' },
      customTools,
    });
    const ui = recordingUi();
    await within(10_000, session.bindExtensions({ uiContext: ui.uiContext }), 'starting extensions');
    return { session, notices: ui.notices };
  };
  // The mode (todo_write) and the evidence (notes_read) are resumed; the
  // secret tool stays hidden, web_fetch deferred, bash declared.
  const expected = ['bash', 'notes_read', 'read', 'todo_write', 'tool_search'];
  const ignoredNotice = (what) =>
    `warning: toolpolicy: ignored in the saved chat state: ${what} (only its mode and evidence are resumed)`;

  // What the model's `write` tool could put into the session file.
  const widening = SessionManager.inMemory();
  widening.appendCustomEntry(STATE_ENTRY, {
    context: { mode: 'review', bot: 'helper', flags: ['trusted'], grants: null },
    evidence: ['secret_vault', 'notes_read'],
    admin: true,
  });
  const requests = [];
  const results = [];
  faux.setResponses([
    (context) => {
      requests.push((context.tools ?? []).map((t) => t.name));
      return fauxAssistantMessage([fauxToolCall('secret_vault', {}), fauxToolCall('tool_search', { query: '', names: ['secret_vault'] })]);
    },
    (context) => {
      for (const m of context.messages) if (m.role === 'toolResult') results.push(m);
      return fauxAssistantMessage('done');
    },
  ]);
  const { session, notices } = await open(widening);
  try {
    assert.deepEqual(session.getActiveToolNames().sort(), expected);
    assert.deepEqual(notices, [ignoredNotice('`admin`, `context.bot`, `context.flags`')]);
    // The state is saved again, in the extension's own context.
    const last = widening.getEntries().filter((e) => e.type === 'custom' && e.customType === STATE_ENTRY).at(-1);
    assert.deepEqual(last.data.context, { mode: 'review', bot: null, flags: [], grants: null });

    await within(20_000, session.prompt('open the vault'), 'the prompt');
    assert.ok(!requests[0].includes('secret_vault'), 'the hidden tool was declared');
    const byTool = Object.fromEntries(results.map((m) => [m.toolName, m]));
    assert.equal(byTool.secret_vault.isError, true);
    assert.deepEqual(byTool.tool_search.details.activated, []);
    assert.deepEqual(byTool.tool_search.details.unavailable, ['secret_vault']);
    assert.deepEqual(ran, []);
  } finally {
    session.dispose?.();
  }
  // The state saved since holds nothing to ignore.
  const again = await open(widening);
  try {
    assert.deepEqual(again.session.getActiveToolNames().sort(), expected);
    assert.deepEqual(again.notices, []);
  } finally {
    again.session.dispose?.();
  }

  // Grants narrow rather than widen, but they are not the extension's either.
  const narrowing = SessionManager.inMemory();
  narrowing.appendCustomEntry(STATE_ENTRY, {
    context: { mode: 'review', bot: null, flags: [], grants: ['read'] },
    evidence: ['notes_read'],
  });
  const granted = await open(narrowing);
  try {
    assert.deepEqual(granted.session.getActiveToolNames().sort(), expected);
    assert.deepEqual(granted.notices, [ignoredNotice('`context.grants`')]);
  } finally {
    granted.session.dispose?.();
    faux.unregister();
  }
});
