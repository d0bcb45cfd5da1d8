#!/usr/bin/env node
// Lays out `@toolpolicy/node` for publishing as napi-rs lays its packages
// out: the main package (napi's generated loader `index.js`, its `.d.ts`, no
// binary) with one optional dependency per platform in packaging/targets,
// and this machine's platform package `@toolpolicy/node-SUFFIX` holding
// `toolpolicy.SUFFIX.node`, the name the loader requires. Reads the build
// of `npm run build` in bindings/node.
//
//   node packaging/npm/node-packages.js SUFFIX OUT
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const [suffix, out] = process.argv.slice(2);
if (!out) {
  process.stderr.write("usage: node-packages.js SUFFIX OUT\n");
  process.exit(2);
}
const root = path.join(__dirname, "..", "..");
const source = path.join(root, "bindings", "node");
const manifest = JSON.parse(fs.readFileSync(path.join(source, "package.json"), "utf8"));
const suffixes = fs
  .readFileSync(path.join(root, "packaging", "targets"), "utf8")
  .split("\n")
  .filter((line) => line.trim() && !line.startsWith("#"))
  .map((line) => line.trim().split(/\s+/)[1]);
const binary = `${manifest.napi.binaryName}.${suffix}.node`;

for (const file of ["index.js", "index.d.ts", binary]) {
  if (!fs.existsSync(path.join(source, file))) {
    process.stderr.write(`node-packages.js: bindings/node/${file} is missing (run \`npm run build\` there)\n`);
    process.exit(1);
  }
}

// The platform package.
const [os, cpu, abi] = suffix.split("-");
const libc = { gnu: "glibc", musl: "musl" }[abi];
const platformDir = path.join(out, `node-${suffix}`);
fs.mkdirSync(platformDir, { recursive: true });
const platform = {
  name: `${manifest.name}-${suffix}`,
  version: manifest.version,
  description: `The native part of ${manifest.name} for ${suffix}; installed by \`${manifest.name}\``,
  license: manifest.license,
  main: binary,
  files: [binary],
  os: [os],
  cpu: [cpu],
  ...(libc ? { libc: [libc] } : {}),
  engines: manifest.engines,
};
fs.writeFileSync(path.join(platformDir, "package.json"), `${JSON.stringify(platform, null, 2)}\n`);
fs.copyFileSync(path.join(source, binary), path.join(platformDir, binary));

// The main package: what a user installs, without build tools or binary.
const mainDir = path.join(out, "node");
fs.mkdirSync(mainDir, { recursive: true });
const { devDependencies, scripts, ...published } = manifest;
published.files = ["index.js", "index.d.ts", "README.md"];
published.optionalDependencies = Object.fromEntries(
  suffixes.map((s) => [`${manifest.name}-${s}`, manifest.version]),
);
fs.writeFileSync(path.join(mainDir, "package.json"), `${JSON.stringify(published, null, 2)}\n`);
for (const file of ["index.js", "index.d.ts"]) {
  fs.copyFileSync(path.join(source, file), path.join(mainDir, file));
}
fs.copyFileSync(path.join(__dirname, "node-README.md"), path.join(mainDir, "README.md"));
