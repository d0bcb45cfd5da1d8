#!/usr/bin/env node
// The `policy` command from npm. This package carries no binary: each
// platform's binary is an optional dependency of its own
// (`@toolpolicy/cli-linux-x64-gnu`, ...), which npm installs only where its
// `os`, `cpu` and `libc` match. This launcher finds that package and runs its
// binary with the same arguments and standard streams, passes its exit code
// (or the signal that ended it) through, forwards SIGINT, SIGTERM and SIGHUP,
// and ends the binary when its own parent goes away: npm runs a bin through
// `sh -c`, which passes no signal on, so a client that stops `npx` would
// otherwise leave the binary running. It watches the shell's parent too,
// for a shell outlives a parent killed outright.
"use strict";

const { execFileSync, spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const SCOPE = "@toolpolicy/cli-";
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP"];
// How often the parent is looked for, and how long the binary has to stop
// after a SIGTERM before it is killed.
const PARENT_POLL_MS = 500;
const GRACE_MS = 5000;

/** This machine's package suffix, as in packaging/targets. */
function platformSuffix() {
  const { platform, arch } = process;
  if (platform === "linux") {
    const report = process.report && process.report.getReport();
    const glibc = report && report.header && report.header.glibcVersionRuntime;
    return `linux-${arch}-${glibc ? "gnu" : "musl"}`;
  }
  if (platform === "win32") return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/** The platforms a release has packages for: this package's optional dependencies. */
function knownSuffixes() {
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "package.json"), "utf8"));
  return Object.keys(manifest.optionalDependencies || {})
    .filter((name) => name.startsWith(SCOPE))
    .map((name) => name.slice(SCOPE.length));
}

function fail(message) {
  process.stderr.write(`toolpolicy: ${message}\n`);
  process.exit(2);
}

function binaryPath() {
  const suffix = platformSuffix();
  const known = knownSuffixes();
  const name = SCOPE + suffix;
  if (!known.includes(suffix)) {
    fail(
      `no binary for this platform (\`${suffix}\`); packages exist for ${known.map((s) => `\`${s}\``).join(", ")}\n` +
        "help: on another platform, build from source: `cargo install toolpolicy` (Rust 1.88 or later)",
    );
  }
  const exe = process.platform === "win32" ? "policy.exe" : "policy";
  try {
    return path.join(path.dirname(require.resolve(`${name}/package.json`)), "bin", exe);
  } catch {
    fail(
      `\`${name}\` is not installed; it is an optional dependency of \`toolpolicy\`\n` +
        "help: install again without `--omit=optional` or `--no-optional`",
    );
  }
}

/** `[state, ppid, start time]` of a process from /proc, or null when it is gone. */
function procStat(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[0] === "Z" ? null : [fields[0], Number(fields[1]), fields[19]];
  } catch {
    return null;
  }
}

function commandName(pid) {
  try {
    if (process.platform === "linux") return fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim();
    return execFileSync("ps", ["-o", "comm=", "-p", String(pid)], { encoding: "utf8" }).trim();
  } catch {
    return "";
  }
}

function parentOf(pid) {
  if (process.platform === "linux") {
    const stat = procStat(pid);
    return stat ? stat[1] : 0;
  }
  try {
    return Number(execFileSync("ps", ["-o", "ppid=", "-p", String(pid)], { encoding: "utf8" }).trim());
  } catch {
    return 0;
  }
}

const SHELLS = new Set(["sh", "dash", "bash", "ash", "zsh", "busybox"]);

/**
 * The processes whose end means nobody waits for this one any more: the
 * parent and, where the parent is the shell npm runs a bin through
 * (`sh -c`), the shell's own parent too (`npx`, a client's child): a shell
 * waiting for its child outlives a parent killed outright.
 */
function watchedProcesses() {
  const watched = [process.ppid];
  const name = commandName(process.ppid).split("/").pop();
  if (SHELLS.has(name)) {
    const above = parentOf(process.ppid);
    if (above > 1) watched.push(above);
  }
  return watched.map((pid) => ({ pid, start: process.platform === "linux" ? (procStat(pid) || [])[2] : null }));
}

function gone({ pid, start }) {
  if (process.platform === "linux") {
    const stat = procStat(pid);
    return stat === null || stat[2] !== start;
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return error.code !== "EPERM";
  }
}

function main() {
  const child = spawn(binaryPath(), process.argv.slice(2), { stdio: "inherit" });
  let stopping = null;
  const stop = (signal) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    if (!stopping) {
      stopping = setTimeout(() => child.kill("SIGKILL"), GRACE_MS);
      stopping.unref();
    }
  };
  for (const signal of FORWARDED) process.on(signal, () => stop(signal));

  const watched = watchedProcesses();
  const watch = setInterval(() => {
    if (watched.some(gone)) stop("SIGTERM");
  }, PARENT_POLL_MS);
  watch.unref();

  child.on("error", (error) => fail(`cannot run \`${child.spawnfile}\`: ${error.message}`));
  child.on("exit", (code, signal) => {
    clearInterval(watch);
    if (signal) {
      // Ended by a signal: end the same way, so that the caller sees it.
      for (const s of FORWARDED) process.removeAllListeners(s);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code === null ? 1 : code);
  });
}

main();
