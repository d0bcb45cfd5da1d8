#!/usr/bin/env node
// Lays out one platform's npm package, `@toolpolicy/cli-SUFFIX`, in OUT:
// its package.json (with `os`, `cpu` and, on Linux, `libc`, so that npm
// installs it only where it runs), a README and the binary in bin/. No
// install script: the binary is in the tarball.
//
//   node packaging/npm/platform-package.js SUFFIX VERSION BINARY OUT
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const [suffix, version, binary, out] = process.argv.slice(2);
if (!out) {
  process.stderr.write("usage: platform-package.js SUFFIX VERSION BINARY OUT\n");
  process.exit(2);
}
const [os, cpu, abi] = suffix.split("-");
const libc = { gnu: "glibc", musl: "musl" }[abi];
const name = `@toolpolicy/cli-${suffix}`;
const exe = os === "win32" ? "policy.exe" : "policy";

const manifest = {
  name,
  version,
  description: `The \`policy\` binary of toolpolicy for ${suffix}; installed by the \`toolpolicy\` package`,
  license: "MIT OR Apache-2.0",
  os: [os],
  cpu: [cpu],
  ...(libc ? { libc: [libc] } : {}),
  files: [`bin/${exe}`, "README.md"],
  preferUnplugged: true,
};

fs.mkdirSync(path.join(out, "bin"), { recursive: true });
fs.writeFileSync(path.join(out, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
fs.writeFileSync(
  path.join(out, "README.md"),
  `# ${name}\n\nThe \`policy\` binary of toolpolicy ${version} for ${suffix}. ` +
    "Install `toolpolicy` instead (`npx -y toolpolicy --help`): it picks this " +
    "package on this platform and runs the binary.\n",
);
fs.copyFileSync(binary, path.join(out, "bin", exe));
fs.chmodSync(path.join(out, "bin", exe), 0o755);
