// What pi's tools say they do, as MCP annotations, for `hint:` selectors.
//
// pi's own `read`, `grep`, `find` and `ls` only read, so they are marked
// `readOnlyHint: true` (and `openWorldHint: false`: they stay on the
// machine): `Grant(hint:read_only)` keeps them in a plan mode. Every other
// tool carries the `annotations` its definition has (an MCP adapter's
// tools, an extension that sets them), or none, and then counts as
// destructive, as MCP's defaults say.

/** pi's built-in tools that only read. */
export const READ_ONLY_BUILTINS = ['read', 'grep', 'find', 'ls'];

const READ_ONLY = Object.freeze({ readOnlyHint: true, openWorldHint: false });

/** A tool's annotations, or `undefined`; `source` is what `sourceOf` says. */
export function annotationsOf(tool, source) {
  const own = tool.annotations;
  if (own !== null && typeof own === 'object' && !Array.isArray(own)) return own;
  if (source === 'builtin' && READ_ONLY_BUILTINS.includes(tool.name)) return { ...READ_ONLY };
  return undefined;
}

/** The registry entry's extra field: `{annotations}`, or nothing. */
export function hintFields(tool, source) {
  const annotations = annotationsOf(tool, source);
  return annotations === undefined ? {} : { annotations };
}
