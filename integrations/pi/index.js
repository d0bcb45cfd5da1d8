// A pi extension that puts pi's tools behind a toolpolicy policy.
//
// It decides nothing itself: the engine (the `@toolpolicy/node` module)
// plans which tools are declared, searches and loads deferred ones, and
// says whether a call may run. This file only translates pi's events into
// the engine's calls:
//
// - session start: the registry is every tool pi knows (built-ins, other
//   extensions' tools, MCP tools), the search tool is registered (replacing
//   any other of its name) and pi's active tools are set from the plan;
// - each user prompt (`before_agent_start`): `session.prompt()`, so that a
//   `per_prompt` policy rebuilds its activations from evidence;
// - each model turn (`turn_start`): pi's active tools follow the plan, and
//   tools registered since (a late MCP server) join the registry;
// - a call of a tool pi does not declare (`tool_execution_start`):
//   `session.call()`, which applies `on_miss`; a call the plan does not
//   allow (`tool_call`) is blocked with the engine's not-found text;
// - each tool result (`tool_result`): evidence, `ok` or `error`;
// - compaction (`session_compact`): the evidence before it leaves the chat;
// - the chat's state (context and evidence) is saved in pi's session as a
//   custom entry whenever it changes, and a resumed, forked or reloaded pi
//   session resumes its mode and evidence (`engine.resume`), so activations
//   survive restarts; the rest of the context is the extension's own, never
//   the entry's;
// - a tool whose definition changes (an MCP server's) is reloaded, so a
//   policy's `lock` holds it to the definition that was approved;
//   `/tools-registry` writes the tools pi knows to a file that
//   `policy lock --registry` locks;
// - a policy the user named that cannot be read, or a `.pi/tools.policy`
//   this pi session used and that is gone, declares nothing and blocks every
//   call: the fallbacks apply only when nothing was named.

import { createRequire } from 'node:module';
import { lstatSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { policyFromLazyTools } from './convert.js';
import { hintFields } from './hints.js';

const require = createRequire(import.meta.url);
const { Engine, readInput } = require('@toolpolicy/node');

const here = dirname(fileURLToPath(import.meta.url));

/** The example policy shipped with the extension. */
export const BUNDLED_POLICY = join(here, 'tools.policy');

/**
 * Where a tool comes from, as a policy's `source:` selectors see it:
 * `builtin`, `mcp:SERVER` for MCP tools named `mcp__SERVER__tool`, else what
 * pi says (an extension's package or path).
 */
export function sourceOf(tool) {
  const mcp = /^mcp__(.+?)__/.exec(tool.name);
  if (mcp) return `mcp:${mcp[1]}`;
  return tool.sourceInfo?.source ?? 'extension';
}

/** The project's own policy, in pi's working folder. */
export const PROJECT_POLICY = join('.pi', 'tools.policy');

/** Where `/tools-registry` writes the registry, in pi's working folder. */
export const REGISTRY_FILE = join('.pi', 'tools.json');

/** pi-lazy-tools' settings, converted when there is no policy. */
export const LAZY_TOOLS = join('.pi', 'lazy-tools.json');

/** Whether anything is at `path`, a broken link included (an unmounted folder). */
const present = (path) => lstatSync(path, { throwIfNoEntry: false }) !== undefined;

/** The text of a file the user named for `what`; throws, naming both, when it cannot be read. */
function readNamed(path, what) {
  if (!present(path)) throw new Error(`the policy \`${path}\` (from ${what}) does not exist`);
  try {
    return readInput(path);
  } catch (e) {
    throw new Error(`${e.message} (the policy from ${what})`);
  }
}

/**
 * The policy text, its file name and, when nothing was configured, which
 * file the fallback chose and why (`fallback`, a sentence for a notice).
 *
 * A policy the user names is the one used, or none: `options.policy` (text),
 * else `options.policyPath`, else `PI_TOOLS_POLICY`. A named file that
 * cannot be read throws, naming it, and the extension fails closed: a typo or
 * an unmounted folder must not put a policy that hides less in its place.
 *
 * Only when nothing is named: `.pi/tools.policy`, else a pi-lazy-tools
 * `.pi/lazy-tools.json` (converted), else the bundled example. A pi session
 * that has used `.pi/tools.policy` once (`projectPolicyUsed`) keeps to it:
 * if it is gone at a later `/reload` or resume, that throws too.
 */
export function readPolicy(cwd, options = {}, { projectPolicyUsed = false } = {}) {
  if (options.policy !== undefined) {
    if (typeof options.policy !== 'string') throw new Error('the `policy` option must be policy text');
    // Text has no folder: a `lock` it names cannot be read (use `policyPath`).
    return { text: options.policy, file: 'policy', dir: null, fallback: null };
  }
  const named = [
    ['the `policyPath` option', options.policyPath],
    ['`PI_TOOLS_POLICY`', process.env.PI_TOOLS_POLICY],
  ].find(([, path]) => path !== undefined && path !== null);
  if (named) {
    const [what, path] = named;
    if (typeof path !== 'string' || path === '') throw new Error(`${what} names no file`);
    return { text: readNamed(path, what), file: path, dir: dirname(path), fallback: null };
  }
  const project = join(cwd, PROJECT_POLICY);
  if (present(project)) {
    return {
      text: readNamed(project, `\`${PROJECT_POLICY}\``),
      file: project,
      dir: dirname(project),
      fallback: `policy \`${project}\``,
      project: true,
    };
  }
  if (projectPolicyUsed) {
    throw new Error(
      `\`${project}\` is gone: this pi session used it, so no other policy takes its place ` +
        '(restore it, or name a policy with `PI_TOOLS_POLICY`, then `/reload`)',
    );
  }
  const lazy = join(cwd, LAZY_TOOLS);
  if (present(lazy)) {
    const text = readNamed(lazy, `\`${LAZY_TOOLS}\``);
    let settings;
    try {
      settings = JSON.parse(text);
    } catch (e) {
      throw new Error(`\`${lazy}\` is not valid JSON: ${e.message}`);
    }
    return {
      text: policyFromLazyTools(settings),
      file: lazy,
      dir: dirname(lazy),
      fallback: `no \`${PROJECT_POLICY}\`: policy converted from the pi-lazy-tools settings \`${lazy}\``,
    };
  }
  return {
    text: readInput(BUNDLED_POLICY),
    file: BUNDLED_POLICY,
    dir: here,
    fallback: `no \`${PROJECT_POLICY}\`, \`${LAZY_TOOLS}\` or \`PI_TOOLS_POLICY\`: the bundled example policy \`${BUNDLED_POLICY}\``,
  };
}

/** The custom entry type the chat's state is saved under. */
export const STATE_ENTRY = 'toolpolicy';

/** The custom entry that marks a pi session as using `.pi/tools.policy`. */
export const POLICY_ENTRY = 'toolpolicy-policy';

/** The entries of the session's current branch. */
function branch(ctx) {
  return ctx?.sessionManager?.getBranch?.() ?? ctx?.sessionManager?.getEntries?.() ?? [];
}

/** The last state saved on the branch, if any. */
function savedState(entries) {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (e?.type === 'custom' && e.customType === STATE_ENTRY && e.data) return e.data;
  }
  return null;
}

/**
 * What a saved state resumes: its evidence and its mode (which `/tools-mode`
 * sets), in the context this extension builds itself, with no bot, flags or
 * grants. The entry is a file that anyone may edit (the model's own `write`
 * and `bash` tools among them), so nothing else is taken from it: `ignored`
 * names what was there. `mode` is the configured one, for a state that has
 * none.
 */
export function resumable(data, mode) {
  const ignored = [];
  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (!isObject(data)) return { state: null, ignored: ['the entry, which is not an object'] };
  for (const key of Object.keys(data)) {
    if (key !== 'context' && key !== 'evidence') ignored.push(`\`${key}\``);
  }
  let savedMode = null;
  if (isObject(data.context)) {
    for (const [key, value] of Object.entries(data.context)) {
      if (key === 'mode') continue;
      // What the extension itself saves: no bot, no flags, no grants.
      const unset = value === null || value === undefined || (key === 'flags' && Array.isArray(value) && value.length === 0);
      if (!unset) ignored.push(`\`context.${key}\``);
    }
    if (typeof data.context.mode === 'string') savedMode = data.context.mode;
    else if (data.context.mode != null) ignored.push('`context.mode`');
  } else if (data.context !== undefined) {
    ignored.push('`context`');
  }
  const evidence = Array.isArray(data.evidence) ? data.evidence.filter((n) => typeof n === 'string') : [];
  if (data.evidence !== undefined && (!Array.isArray(data.evidence) || evidence.length !== data.evidence.length)) {
    ignored.push('`evidence` that is not a list of names');
  }
  return { state: { context: { mode: savedMode ?? mode ?? null }, evidence }, ignored };
}

/** The flags the extension adds to pi's command line. */
export const AUDIT_FLAG = 'tools-audit';
export const AUDIT_NO_QUERIES_FLAG = 'tools-audit-no-queries';

/**
 * The audit log to append to, if any: the `audit` option, else pi's
 * `--tools-audit FILE` flag, else `PI_TOOLS_AUDIT`; a relative path is
 * taken from pi's working folder. Queries are left out with the
 * `auditNoQueries` option, the `--tools-audit-no-queries` flag or
 * `PI_TOOLS_AUDIT_NO_QUERIES=1`.
 */
export function auditOptions(cwd, options = {}, flag = () => undefined) {
  const named = [options.audit, flag(AUDIT_FLAG), process.env.PI_TOOLS_AUDIT].find(
    (v) => typeof v === 'string' && v !== '',
  );
  if (named === undefined) return {};
  const noQueries =
    options.auditNoQueries === true || flag(AUDIT_NO_QUERIES_FLAG) === true || process.env.PI_TOOLS_AUDIT_NO_QUERIES === '1';
  return { audit: isAbsolute(named) ? named : join(cwd, named), auditNoQueries: noQueries };
}

/**
 * The extension, configured: `policy` (text) or `policyPath`, `mode`
 * (else `PI_TOOLS_MODE`, else the policy's first mode), and `audit` (an
 * audit log to append to) with `auditNoQueries`.
 */
export function createExtension(options = {}) {
  return function toolPolicy(pi) {
    pi.registerFlag?.(AUDIT_FLAG, { description: 'Append a toolpolicy audit log (JSON Lines) to this file', type: 'string' });
    pi.registerFlag?.(AUDIT_NO_QUERIES_FLAG, { description: 'Leave search queries out of the toolpolicy audit log', type: 'boolean' });
    let engine = null;
    let chat = null;
    /** The engine's own tools this extension registered, by name. */
    const own = new Map();
    let active = '';
    let known = '';
    /** Tools a search loaded in this run: the run ends and another starts. */
    let continueAfterRun = null;
    /** The state last saved, as JSON. */
    let saved = '';

    const registryTools = () =>
      pi
        .getAllTools()
        .filter((t) => !own.has(t.name))
        .map((t) => ({
          name: t.name,
          description: t.description ?? '',
          parameters: t.parameters ?? { type: 'object', properties: {} },
          source: sourceOf(t),
          ...hintFields(t, sourceOf(t)),
        }));

    /** The search tool's name, once the engine knows it (the policy's). */
    const searchName = () => chat.plan().searchTool;

    function start(ctx) {
      const entries = branch(ctx);
      const marked = entries.some((e) => e?.type === 'custom' && e.customType === POLICY_ENTRY);
      const policy = readPolicy(ctx?.cwd ?? process.cwd(), options, { projectPolicyUsed: marked });
      if (policy.fallback) ctx?.ui?.notify?.(`toolpolicy: ${policy.fallback}`, 'info');
      // From now on this session keeps to `.pi/tools.policy` (see readPolicy).
      if (policy.project && !marked) pi.appendEntry(POLICY_ENTRY, { file: PROJECT_POLICY });
      let tools = registryTools();
      // A `lock` the policy names is read from the policy's folder.
      const audit = auditOptions(ctx?.cwd ?? process.cwd(), options, (name) => pi.getFlag?.(name));
      engine?.flushAudit(1000);
      engine = new Engine(policy.text, tools, { file: policy.file, ...(policy.dir ? { dir: policy.dir } : {}), ...audit });
      if (audit.audit && !engine.auditing) {
        ctx?.ui?.notify?.(`toolpolicy: cannot open the audit log \`${audit.audit}\`; going on without one`, 'warning');
      }
      const mode = options.mode ?? process.env.PI_TOOLS_MODE ?? engine.modes[0];
      const data = savedState(entries);
      chat = null;
      saved = '';
      if (data) {
        const { state, ignored } = resumable(data, mode);
        if (ignored.length > 0) {
          ctx?.ui?.notify?.(
            `toolpolicy: ignored in the saved chat state: ${ignored.join(', ')} (only its mode and evidence are resumed)`,
            'warning',
          );
        }
        try {
          if (state) chat = engine.resume(state);
          saved = JSON.stringify(chat?.state() ?? null);
          // The state is saved again without what was ignored.
          if (ignored.length > 0) saved = '';
        } catch (e) {
          // A mode the edited policy no longer declares: start afresh.
          ctx?.ui?.notify?.(`toolpolicy: ${e.message}; starting a new chat state`, 'warning');
        }
      }
      chat ??= engine.session(mode ? { mode } : {});
      // Ours replaces any other search tool of the same name.
      const name = searchName();
      if (name && tools.some((t) => t.name === name)) {
        own.set(name, null);
        tools = registryTools();
        engine.reloadRegistry(tools);
      }
      known = JSON.stringify(tools);
      active = '';
      sync();
      if (data && saved === '') save();
    }

    /** Registers (or updates) the engine's search tool as pi sees it. */
    function register(def) {
      if (own.get(def.name) === def.description) return;
      own.set(def.name, def.description);
      pi.registerTool({
        name: def.name,
        label: 'Tool search',
        description: def.description,
        parameters: def.parameters,
        async execute(_id, params) {
          const names = Array.isArray(params?.names) ? params.names.filter((n) => typeof n === 'string') : [];
          const query = typeof params?.query === 'string' ? params.query : '';
          const found = chat.search(query, names);
          sync();
          save();
          // pi fixes a run's tools when the run starts: a search that loaded
          // something ends the run, and `agent_end` starts the next one,
          // whose first request declares what was loaded.
          const loaded = found.activated.length > 0;
          if (loaded) continueAfterRun = found.activated;
          return {
            content: [{ type: 'text', text: found.text }],
            details: { activated: found.activated, unavailable: found.unavailable },
            terminate: loaded,
          };
        },
      });
    }

    /** Saves the chat's state in pi's session when it changed. */
    function save() {
      const state = chat.state();
      const text = JSON.stringify(state);
      if (text === saved) return;
      saved = text;
      pi.appendEntry(STATE_ENTRY, state);
    }

    /**
     * pi's active tools follow the plan; new tools join the registry, and
     * a tool whose definition changed is reloaded (a locked policy then
     * holds it to the lock).
     */
    function sync() {
      const tools = registryTools();
      const definitions = JSON.stringify(tools);
      if (definitions !== known) {
        engine.reloadRegistry(tools);
        known = definitions;
      }
      const list = chat.toolList();
      for (const def of list) {
        if (own.has(def.name) || !tools.some((t) => t.name === def.name)) register(def);
      }
      const next = list.map((t) => t.name);
      const key = next.join('\n');
      if (key !== active) {
        pi.setActiveTools(next);
        active = key;
      }
    }

    const ready = () => chat !== null;

    /** Why the policy did not load, while it does not. */
    let failure = null;

    pi.on('session_start', (_event, ctx) => {
      try {
        failure = null;
        start(ctx);
      } catch (e) {
        // Fail closed: a policy that does not load must not leave hidden
        // tools exposed, so no tool is declared until it is fixed (then
        // `/reload`). pi swallows errors thrown here: say why.
        failure = e.message;
        chat = null;
        pi.setActiveTools([]);
        console.error(`toolpolicy: ${e.message}`);
        ctx?.ui?.notify?.(`toolpolicy: no tools until the policy loads: ${e.message}`, 'error');
      }
    });

    pi.on('before_agent_start', () => {
      if (!ready()) return;
      chat.prompt();
      sync();
    });

    pi.on('agent_end', () => {
      const loaded = continueAfterRun;
      continueAfterRun = null;
      if (!loaded) return;
      // After the run has finished (pi is idle again), continue the chat in
      // a new run; the note is for the transcript, not shown to the user.
      setTimeout(() => {
        pi.sendMessage(
          {
            customType: 'toolpolicy',
            content: `Loaded ${loaded.join(', ')}: continue with them.`,
            display: false,
          },
          { triggerTurn: true },
        );
      }, 0);
    });

    pi.on('turn_start', () => {
      if (ready()) sync();
    });

    pi.on('tool_execution_start', (event) => {
      if (!ready() || own.has(event.toolName)) return;
      if (active.split('\n').includes(event.toolName)) return;
      // pi answers "not found" itself for a tool it does not declare; the
      // engine still hears of the call, so `on_miss` can declare it.
      const r = chat.call(event.toolName);
      if (r.declaredNextStep) sync();
    });

    pi.on('tool_call', (event) => {
      if (failure !== null) return { block: true, reason: `the tool policy did not load: ${failure}` };
      if (!ready() || own.has(event.toolName)) return undefined;
      const r = chat.call(event.toolName);
      if (r.allowed) return undefined;
      if (r.declaredNextStep) sync();
      return { block: true, reason: r.text };
    });

    pi.on('tool_result', (event) => {
      if (!ready() || own.has(event.toolName)) return undefined;
      chat.recordResult(event.toolName, event.isError ? 'error' : 'ok');
      save();
      return undefined;
    });

    pi.on('session_shutdown', () => {
      // What the log has queued is written before pi goes.
      engine?.flushAudit(2000);
    });

    pi.on('session_compact', () => {
      if (!ready()) return;
      chat.compact();
      save();
    });

    pi.registerCommand('tools-registry', {
      description: 'Write the tools pi knows, as the policy sees them, to a registry file (default .pi/tools.json)',
      handler: async (args, ctx) => {
        const cwd = ctx?.cwd ?? process.cwd();
        const path = resolve(cwd, args.trim() || REGISTRY_FILE);
        try {
          mkdirSync(dirname(path), { recursive: true });
          writeFileSync(path, `${JSON.stringify({ tools: registryTools() }, null, 2)}\n`);
          ctx?.ui?.notify?.(`toolpolicy: wrote the registry \`${path}\``, 'info');
        } catch (e) {
          ctx?.ui?.notify?.(`toolpolicy: cannot write \`${path}\`: ${e.message}`, 'error');
        }
      },
    });

    pi.registerCommand('tools-mode', {
      description: 'Switch the tool policy mode',
      handler: async (args, ctx) => {
        if (!ready()) return;
        try {
          chat.setMode(args.trim() || null);
          sync();
          save();
          ctx.ui.notify(`tool policy mode: ${args.trim()}`, 'info');
        } catch (e) {
          ctx.ui.notify(e.message, 'error');
        }
      },
    });
  };
}

export default createExtension();
