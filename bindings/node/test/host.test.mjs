// Inputs that must never take the host down: the module lives inside an
// agent runtime with every chat in it, so an argument or a file that cannot
// be handled throws, and the process goes on. Each case runs in a child
// Node process with a memory limit and a time limit, so that a case that
// aborts, hangs or eats memory fails its test instead of the test run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const modulePath = fileURLToPath(new URL('../index.js', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const policyPath = `${root}policies/pi-desktop.policy`;
const registryPath = `${root}examples/registries/pi-desktop.json`;

/** The most virtual memory a child may map (1 GiB): Node itself needs well under it. */
const MEMORY_KIB = 1024 * 1024;

/**
 * Runs `body` (JavaScript, with `Engine` in scope) in a child process
 * limited to 1 GiB and 20 s; returns what it threw (`{name, message}`), or
 * `null` when it threw nothing. The test fails if the child died.
 */
function inChild(body) {
  const script = `
    const { Engine } = require(${JSON.stringify(modulePath)});
    let out = null;
    try {
      ${body};
    } catch (e) {
      out = { name: e.name, message: e.message };
    }
    process.stdout.write(JSON.stringify(out));
  `;
  const r = spawnSync('/bin/sh', ['-c', `ulimit -v ${MEMORY_KIB} && exec "$0" "$@"`, process.execPath, '-e', script], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(r.error, undefined, `the child did not run to its end: ${r.error}`);
  assert.equal(r.signal, null, `the child was killed by ${r.signal}: ${r.stderr}`);
  assert.equal(r.status, 0, `the child exited with ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// `new Array(2**32 - 1)`: one line of JavaScript, no element, the largest
// length an array can claim.
const SPARSE = 'new Array(2 ** 32 - 1)';

test('a huge sparse array in any string-array argument throws at its first hole', () => {
  const setup = `const engine = new Engine('Defer(WebFetch)\\n', [{ name: 'Read' }, { name: 'WebFetch' }]);
    const chat = engine.session();`;
  const cases = [
    ['names of search', `chat.search('fetch', ${SPARSE})`, /^names\[0\] must be a string, not undefined$/],
    ['names of load', `chat.load(${SPARSE})`, /^names\[0\] must be a string, not undefined$/],
    ['flags of a session', `engine.session({ flags: ${SPARSE} })`, /^context\.flags\[0\] must be a string, not undefined$/],
    ['grants of a session', `engine.session({ grants: ${SPARSE} })`, /^context\.grants\[0\] must be a string, not undefined$/],
    ['flags of setContext', `chat.setContext({ flags: ${SPARSE} })`, /\.flags\[0\] must be a string, not undefined$/],
    ['grants of setContext', `chat.setContext({ grants: ${SPARSE} })`, /\.grants\[0\] must be a string, not undefined$/],
    ['flags of explain', `engine.explain('Read', { flags: ${SPARSE} })`, /\.flags\[0\] must be a string, not undefined$/],
    // One element, then holes: the check stops at the first hole.
    ['a string, then holes', `const a = ${SPARSE}; a[0] = 'WebFetch'; chat.load(a)`, /^names\[1\] must be a string, not undefined$/],
  ];
  for (const [what, call, message] of cases) {
    const thrown = inChild(`${setup} ${call}`);
    assert.ok(thrown, `${what}: nothing was thrown`);
    assert.equal(thrown.name, 'ToolPolicyError', `${what}: ${thrown.message}`);
    assert.match(thrown.message, message, what);
  }
});

test('a huge sparse array where JSON is taken (tools, skills, a saved state) throws', () => {
  const cases = [
    ['tools', `new Engine('', ${SPARSE})`],
    ['tools under `tools`', `new Engine('', { tools: ${SPARSE} })`],
    ['skills', `new Engine('', [], { skills: ${SPARSE} })`],
    ['reloadRegistry', `new Engine('', []).reloadRegistry(${SPARSE})`],
    ['reloadSkills', `new Engine('', []).reloadSkills(${SPARSE})`],
    ['a saved state', `new Engine('', []).resume({ context: { flags: ${SPARSE} }, evidence: ${SPARSE} })`],
  ];
  for (const [what, call] of cases) {
    const thrown = inChild(call);
    assert.ok(thrown, `${what}: nothing was thrown`);
  }
});

test('every file read is capped at 64 MiB: /dev/zero is refused, not read until memory runs out', () => {
  const message = (path) => `cannot read \`${path}\`: it is larger than 64 MiB, the most an input file may hold`;
  const cases = [
    ['the policy', `Engine.fromFiles('/dev/zero', ${JSON.stringify(registryPath)})`],
    ['the registry', `Engine.fromFiles(${JSON.stringify(policyPath)}, '/dev/zero')`],
    ['the skills', `Engine.fromFiles(${JSON.stringify(policyPath)}, ${JSON.stringify(registryPath)}, '/dev/zero')`],
  ];
  for (const [what, call] of cases) {
    const thrown = inChild(call);
    assert.ok(thrown, `${what}: nothing was thrown`);
    assert.equal(thrown.name, 'ToolPolicyError', `${what}: ${thrown.message}`);
    assert.equal(thrown.message, message('/dev/zero'), what);
  }
  // A host's own files (the pi extension's policy and settings) read the same way.
  const own = inChild(`require(${JSON.stringify(modulePath)}).readInput('/dev/zero')`);
  assert.equal(own?.message, message('/dev/zero'));
  // The ordinary errors read as before.
  const missing = inChild(`Engine.fromFiles('/nonexistent/p.policy', ${JSON.stringify(registryPath)})`);
  assert.match(missing.message, /^cannot read `\/nonexistent\/p\.policy`: no such file or directory/);
});

test('a FIFO is read like a file: under the same cap when it never ends, whole when it does', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'toolpolicy-node-'));
  const fifo = join(dir, 'policy.fifo');
  const made = spawnSync('mkfifo', [fifo]);
  if (made.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    t.skip('mkfifo is not available');
    return;
  }
  /** A writer that opens the FIFO and writes `source` into it. */
  const writer = (source) => spawn('/bin/sh', ['-c', 'exec cat "$0" > "$1"', source, fifo], { stdio: 'ignore' });
  const writers = [];
  try {
    writers.push(writer('/dev/zero'));
    const endless = inChild(`Engine.fromFiles(${JSON.stringify(fifo)}, ${JSON.stringify(registryPath)})`);
    assert.ok(endless, 'an endless FIFO was read');
    assert.match(endless.message, /^cannot read `.*policy\.fifo`: it is larger than 64 MiB, the most an input file may hold$/);

    // `--policy <(cat p.policy)` in a shell: the policy arrives whole.
    writers.push(writer(policyPath));
    const whole = inChild(`
      const engine = Engine.fromFiles(${JSON.stringify(fifo)}, ${JSON.stringify(registryPath)});
      if (engine.modes.join() !== 'agent,chat') throw new Error('modes: ' + engine.modes.join());
    `);
    assert.equal(whole, null, whole?.message);
  } finally {
    for (const w of writers) if (w.exitCode === null && w.signalCode === null) w.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('readInput reads text as the engine does: without a byte-order mark, UTF-8 or an error naming the file', () => {
  const { readInput } = createRequire(import.meta.url)(modulePath);
  const dir = mkdtempSync(join(tmpdir(), 'toolpolicy-node-'));
  try {
    writeFileSync(join(dir, 'bom.policy'), '\ufeffDefer(*)\n');
    assert.equal(readInput(join(dir, 'bom.policy')), 'Defer(*)\n');
    writeFileSync(join(dir, 'latin1.policy'), Buffer.from([0x44, 0xe9, 0x0a]));
    assert.throws(() => readInput(join(dir, 'latin1.policy')), { name: 'ToolPolicyError', message: /^`.*latin1\.policy` is not UTF-8$/ });
    assert.throws(() => readInput(join(dir, 'none.policy')), {
      name: 'ToolPolicyError',
      message: /^cannot read `.*none\.policy`: no such file or directory/,
    });
    assert.throws(() => readInput(dir), { name: 'ToolPolicyError', message: /^cannot read `.*`: is a directory/ });
    assert.throws(() => readInput(1), { name: 'ToolPolicyError', message: 'path must be a string, not a number' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
