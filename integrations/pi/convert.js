// pi-lazy-tools settings to a policy.
//
// pi-lazy-tools (CodeBuddy-style deferral) is configured with two lists and
// a switch:
//
//   { "defer": ["Defer(*)", "browser_*"], "noDefer": ["read", "NoDefer(bash)"],
//     "deferToolLoading": true }
//
// optionally under a `lazyTools` key (pi's settings.json). An entry is
// `Defer(pattern)`, `NoDefer(pattern)` (modifiers in any case) or a bare
// pattern, which takes its list's action; `*` is the only wildcard.
// Precedence: NoDefer > Defer > `deferToolLoading`; `tool_search` and
// `defer_execute_tool` are never deferred. Settings that name neither list
// get pi-lazy-tools' preset: everything deferred but the everyday tools.
//
// The policy language has the same precedence, so the conversion is one
// statement per list: `search tool_search, defer_execute_tool` (the guards),
// `NoDefer(...)`, `Defer(...)`, and `defer_loading = false` for the switch.
// One difference, on purpose: an explicit modifier is honoured in either
// list (`"NoDefer(x)"` inside `defer` keeps `x` active), where pi-lazy-tools
// drops it silently.

/** Tools pi-lazy-tools keeps active when it is not configured. */
export const PRESET_ACTIVE = [
  'read', 'write', 'edit', 'bash', 'glob', 'grep',
  'web_search', 'web_fetch', 'ask_user_question', 'skill',
];

/** Tools pi-lazy-tools never defers: its search tool and its executor. */
export const GUARDS = ['tool_search', 'defer_execute_tool'];

/** One entry: `{action, pattern}`; throws naming the entry when malformed. */
export function parseEntry(entry, listAction, where) {
  if (typeof entry !== 'string') throw new Error(`${where} must be a string`);
  const text = entry.trim();
  const m = /^(defer|nodefer)\((.*)\)$/i.exec(text);
  const action = m ? (m[1].toLowerCase() === 'defer' ? 'defer' : 'noDefer') : listAction;
  const pattern = (m ? m[2] : text).trim();
  if (pattern === '') throw new Error(`${where} names no tool: \`${entry}\``);
  if (/^(defer|nodefer)\(/i.test(pattern)) throw new Error(`${where} nests a modifier: \`${entry}\``);
  return { action, pattern };
}

/** A pattern as the policy language writes it: bare where it can be, else quoted. */
export function selector(pattern) {
  const bare = /^[A-Za-z0-9_\-./:*]+$/.test(pattern) && !/^(skill|source|hint):/i.test(pattern);
  return bare ? pattern : `"${pattern.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** The settings object, under `lazyTools` or not. */
function settingsOf(doc) {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new Error('pi-lazy-tools settings must be an object');
  }
  const s = doc.lazyTools ?? doc;
  for (const key of ['defer', 'noDefer']) {
    if (s[key] !== undefined && !Array.isArray(s[key])) throw new Error(`\`${key}\` must be an array of strings`);
  }
  if (s.deferToolLoading !== undefined && typeof s.deferToolLoading !== 'boolean') {
    throw new Error('`deferToolLoading` must be true or false');
  }
  return s;
}

/** The policy text equivalent to pi-lazy-tools settings. */
export function policyFromLazyTools(doc) {
  const s = settingsOf(doc);
  const preset = s.defer === undefined && s.noDefer === undefined;
  const defer = preset ? ['Defer(*)'] : (s.defer ?? []);
  const noDefer = preset ? PRESET_ACTIVE : (s.noDefer ?? []);
  const entries = [
    ...defer.map((e, i) => parseEntry(e, 'defer', `defer[${i}]`)),
    ...noDefer.map((e, i) => parseEntry(e, 'noDefer', `noDefer[${i}]`)),
  ];
  const list = (action) => [...new Set(entries.filter((e) => e.action === action).map((e) => selector(e.pattern)))];
  const lines = [
    '# Converted from pi-lazy-tools settings: NoDefer beats Defer beats the switch,',
    '# and the search tools are never deferred.',
    `search ${GUARDS.join(', ')}`,
  ];
  if (s.deferToolLoading === false) lines.push('defer_loading = false');
  const keep = list('noDefer');
  const hold = list('defer');
  if (keep.length > 0) lines.push(`NoDefer(${keep.join(', ')})`);
  if (hold.length > 0) lines.push(`Defer(${hold.join(', ')})`);
  return `${lines.join('\n')}\n`;
}
