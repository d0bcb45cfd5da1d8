"""The release artifacts in dist/ (scripts/package), installed as a user
installs them: served from a local npm registry (verdaccio) and a local PyPI
index (pypiserver), both on 127.0.0.1 and started and stopped here, then
installed and run with no Rust toolchain on PATH, each in a fresh folder
with an empty npm or uv cache:

- `npx -y toolpolicy --version`, `check` on a bundled policy and on a broken
  one (the same output and exit code as the binary of a checkout);
- the launcher: arguments and exit codes through, SIGTERM forwarded, the
  binary stopped when `npx` is killed outright, a plain message on a
  platform with no package;
- `npx -y toolpolicy gateway` as Claude Code's entry (when
  tests/e2e/install has put Claude Code in place), connected and listing the
  policy's tools;
- `uvx --from toolpolicy-cli policy ...` the same;
- `pip install toolpolicy` in a fresh venv, running the OpenAI Agents SDK
  example against `toolpolicy.testing`;
- `npm install @toolpolicy/node` and a plan.

It prints the time from an empty cache to the first answer of
`npx -y toolpolicy gateway --dry-run` and of `uvx`, and the installed sizes
(docs/performance.md quotes them).

Run by tests/packaging/run, which installs the registries first.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
import harness  # noqa: E402  (the e2e tests' helpers: /proc scans, the closing line)

DIST = pathlib.Path(os.environ.get("PACKAGING_DIST", ROOT / "dist"))
TOOLS = pathlib.Path(os.environ.get("PACKAGING_HOME", ROOT / "target" / "packaging"))
VERDACCIO = TOOLS / "npm" / "node_modules" / "verdaccio" / "bin" / "verdaccio"
VENV_BIN = TOOLS / "venv" / "bin"
WHEELHOUSE = TOOLS / "wheelhouse"
CLAUDE = harness.CLIENTS_BIN / "claude"
# The checkout's own build, whose output the installed binary must match.
CHECKOUT_POLICY = pathlib.Path(os.environ.get("POLICY_BIN", ROOT / "target" / "release" / "policy"))
# How long one install-and-run may take (seconds).
RUN_TIMEOUT = 180.0

POLICY = ROOT / "policies" / "gateway.policy"
BROKEN = ROOT / "policies" / "invalid" / "many-errors.policy"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before it answered")
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not answer at {url} within 60 s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Registries:
    """verdaccio and pypiserver on free loopback ports, with dist/ published."""

    def __init__(self) -> None:
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="toolpolicy-registries-"))
        self.procs: list[subprocess.Popen] = []
        npm_port, pypi_port = free_port(), free_port()
        self.npm = f"http://127.0.0.1:{npm_port}/"
        self.pypi = f"http://127.0.0.1:{pypi_port}/simple/"
        config = self.work / "verdaccio.yaml"
        config.write_text(
            f"storage: {self.work / 'storage'}\n"
            f"auth:\n  htpasswd:\n    file: {self.work / 'htpasswd'}\n"
            "uplinks: {}\n"
            "packages:\n"
            "  '**':\n    access: $all\n    publish: $authenticated\n"
            "max_body_size: 200mb\n"
            "web:\n  enable: false\n"
            "log: { type: stdout, format: pretty, level: warn }\n"
        )
        log = open(self.work / "verdaccio.log", "w")
        self.procs.append(
            subprocess.Popen(
                ["node", str(VERDACCIO), "--config", str(config), "--listen", f"127.0.0.1:{npm_port}"],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        )
        wait_for(self.npm + "-/ping", self.procs[-1], "verdaccio")
        # pypiserver serves the wheels and the adapters' pinned wheels
        # (tests/packaging/run downloads them once), nothing else.
        pypi_log = open(self.work / "pypiserver.log", "w")
        self.procs.append(
            subprocess.Popen(
                [str(VENV_BIN / "pypi-server"), "run", "-i", "127.0.0.1", "-p", str(pypi_port),
                 "-a", ".", "-P", ".", "--disable-fallback", str(DIST / "pypi"), str(WHEELHOUSE)],
                stdout=pypi_log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        )
        wait_for(self.pypi, self.procs[-1], "pypiserver")
        self.publish()

    def publish(self) -> None:
        request = urllib.request.Request(
            self.npm + "-/user/org.couchdb.user:ci",
            data=json.dumps({"name": "ci", "password": "packaging-ci"}).encode(),
            method="PUT",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            token = json.load(answer)["token"]
        npmrc = self.work / "publish.npmrc"
        npmrc.write_text(f"//{self.npm.split('//')[1]}:_authToken={token}\n")
        # Platform packages first, as a release publishes them.
        tarballs = sorted(DIST.glob("npm/*.tgz"), key=lambda p: ("-linux-" not in p.name, p.name))
        for tarball in tarballs:
            published = subprocess.run(
                ["npm", "publish", str(tarball), "--registry", self.npm, "--userconfig", str(npmrc),
                 "--access", "public", "--loglevel=error"],
                capture_output=True,
                text=True,
                timeout=120,
            )
            if published.returncode != 0:
                raise RuntimeError(f"npm publish {tarball.name}: {published.stderr[-2000:]}")

    def close(self) -> None:
        for proc in self.procs:
            stop(proc)
        shutil.rmtree(self.work, ignore_errors=True)


REGISTRIES: Registries | None = None


def setUpModule() -> None:
    global REGISTRIES
    REGISTRIES = Registries()


def tearDownModule() -> None:
    if REGISTRIES is not None:
        REGISTRIES.close()


class UserCase(unittest.TestCase):
    """A fresh HOME, project folder and empty caches; PATH with Node, npm,
    uv and the system's tools, and no cargo or rustc."""

    def setUp(self) -> None:
        assert REGISTRIES is not None
        self.reg = REGISTRIES
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="toolpolicy-user-"))
        self.addCleanup(shutil.rmtree, self.work, True)
        self.home = self.work / "home"
        self.project = self.work / "project with spaces"
        bin_dir = self.work / "bin"
        for d in (self.home, self.project, bin_dir):
            d.mkdir()
        for tool in ("uv", "uvx"):
            (bin_dir / tool).symlink_to(VENV_BIN / tool)
        node_dir = str(pathlib.Path(shutil.which("node") or "/usr/bin/node").resolve().parent)
        path = os.pathsep.join(dict.fromkeys([str(bin_dir), node_dir, "/usr/local/bin", "/usr/bin", "/bin"]))
        for tool in ("cargo", "rustc", "rustup"):
            self.assertIsNone(shutil.which(tool, path=path), f"{tool} is on the user's PATH")
        self.env = {
            "HOME": str(self.home),
            "PATH": path,
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.work),
            "npm_config_registry": self.reg.npm,
            "npm_config_cache": str(self.work / "npm-cache"),
            "npm_config_userconfig": str(self.home / ".npmrc"),
            "npm_config_update_notifier": "false",
            "npm_config_audit": "false",
            "npm_config_fund": "false",
            "UV_INDEX_URL": self.reg.pypi,
            "UV_CACHE_DIR": str(self.work / "uv-cache"),
            "UV_TOOL_DIR": str(self.work / "uv-tools"),
            "UV_PYTHON_DOWNLOADS": "never",
            "UV_NO_PROGRESS": "1",
            "PIP_INDEX_URL": self.reg.pypi,
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        (self.home / ".npmrc").write_text("")
        shutil.copy(POLICY, self.project / "gateway.policy")
        shutil.copy(BROKEN, self.project / "broken.policy")
        (self.project / "servers.json").write_text(json.dumps({"mcpServers": {}}))

    def run_user(self, argv: list[str], timeout: float = RUN_TIMEOUT, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(
            argv, env=self.env, cwd=self.project, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=timeout, **kw,
        )

    def checkout_policy(self, *args: str) -> subprocess.CompletedProcess:
        """The binary of the checkout, for the output a user gets from a build."""
        return subprocess.run(
            [str(CHECKOUT_POLICY), *args], cwd=self.project,
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        )

    def processes_under(self, marker: str) -> list[str]:
        """Command lines of running processes that name `marker`."""
        found = []
        for entry in pathlib.Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    words = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
                except OSError:
                    continue
                if any(marker in w for w in words):
                    found.append(" ".join(words))
        return found

    def assert_none_left(self, marker: str) -> None:
        deadline = time.monotonic() + 15
        while self.processes_under(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.processes_under(marker), [], "a process outlived its parent")

    def assert_same_as_checkout(self, run: subprocess.CompletedProcess, *args: str) -> None:
        built = self.checkout_policy(*args)
        self.assertEqual((run.returncode, run.stdout, run.stderr), (built.returncode, built.stdout, built.stderr))

    def du(self, path: pathlib.Path) -> int:
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def version() -> str:
    return subprocess.run(
        [str(ROOT / "scripts" / "package"), "version"], capture_output=True, text=True, check=True
    ).stdout.strip()


class Npx(UserCase):
    def test_version_check_and_a_broken_policy_as_from_a_checkout(self) -> None:
        run = self.run_user(["npx", "-y", "toolpolicy", "--version"])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.strip(), f"policy {version()}")
        checked = self.run_user(["npx", "-y", "toolpolicy", "check", "gateway.policy"])
        self.assertEqual(checked.returncode, 0, checked.stderr)
        self.assert_same_as_checkout(checked, "check", "gateway.policy")
        broken = self.run_user(["npx", "-y", "toolpolicy", "check", "broken.policy"])
        self.assertEqual(broken.returncode, 1, broken.stdout + broken.stderr)
        self.assertIn("PL0", broken.stdout + broken.stderr)
        self.assert_same_as_checkout(broken, "check", "broken.policy")

    def test_global_install_gives_policy_and_an_argument_with_spaces(self) -> None:
        prefix = self.work / "global"
        run = self.run_user(["npm", "install", "-g", "--prefix", str(prefix), "toolpolicy"])
        self.assertEqual(run.returncode, 0, run.stderr)
        spaced = self.project / "a policy é.policy"
        shutil.copy(POLICY, spaced)
        for name in ("policy", "toolpolicy"):
            checked = self.run_user([str(prefix / "bin" / name), "check", spaced.name])
            self.assertEqual(checked.returncode, 0, checked.stderr)
            self.assert_same_as_checkout(checked, "check", spaced.name)
        # No install script ran, and the platform package is the only other one.
        modules = prefix / "lib" / "node_modules"
        installed = sorted(json.loads(p.read_text())["name"] for p in modules.rglob("package.json"))
        self.assertEqual(installed, ["@toolpolicy/cli-linux-x64-gnu", "toolpolicy"])
        print(f"\n  installed size (npm install -g toolpolicy): {self.du(modules) / 1e6:.1f} MB", file=sys.stderr)

    def test_first_answer_of_the_gateway_from_an_empty_cache(self) -> None:
        t0 = time.monotonic()
        run = self.run_user(["npx", "-y", "toolpolicy", "gateway", "--dry-run",
                             "--policy", "gateway.policy", "--servers", "servers.json"])
        took = time.monotonic() - t0
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("listed (", run.stdout)
        t1 = time.monotonic()
        again = self.run_user(["npx", "-y", "toolpolicy", "gateway", "--dry-run",
                               "--policy", "gateway.policy", "--servers", "servers.json"])
        cached = time.monotonic() - t1
        self.assertEqual(again.returncode, 0, again.stderr)
        print(f"\n  npx -y toolpolicy gateway --dry-run: {took:.1f} s from an empty cache, {cached:.1f} s cached",
              file=sys.stderr)

    def gateway(self, *launcher: str) -> subprocess.Popen:
        """A gateway started as a client starts it, its input held open."""
        proc = subprocess.Popen(
            [*launcher, "gateway", "--policy", "gateway.policy", "--servers", "servers.json"],
            env=self.env, cwd=self.project, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
        )
        self.addCleanup(self.kill_group, proc)
        # Up once the installed binary runs.
        deadline = time.monotonic() + RUN_TIMEOUT
        while not self.binary_pids() and time.monotonic() < deadline:
            if proc.poll() is not None:
                self.fail(f"exit {proc.returncode}: {proc.communicate()[1].decode(errors='replace')[-2000:]}")
            time.sleep(0.2)
        self.assertTrue(self.binary_pids(), "the gateway did not start")
        return proc

    def kill_group(self, proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def binary_pids(self) -> list[str]:
        return [c for c in self.processes_under(str(self.work)) if "/bin/policy" in c.split(" ")[0]]

    def test_sigterm_to_npx_leaves_no_process(self) -> None:
        proc = self.gateway("npx", "-y", "toolpolicy")
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        self.assert_none_left(str(self.work / "npm-cache"))

    def test_npx_killed_outright_leaves_no_gateway(self) -> None:
        """SIGKILL ends `npx` with no chance to pass anything on: the
        launcher sees its parent gone and stops the binary."""
        proc = self.gateway("npx", "-y", "toolpolicy")
        proc.kill()
        proc.wait(30)
        self.assert_none_left(str(self.work / "npm-cache"))

    def test_the_launcher_forwards_sigterm_and_the_exit(self) -> None:
        prefix = self.work / "global"
        self.assertEqual(self.run_user(["npm", "install", "-g", "--prefix", str(prefix), "toolpolicy"]).returncode, 0)
        proc = self.gateway(str(prefix / "bin" / "policy"))
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
        self.assertIn(code, (0, -signal.SIGTERM), proc.communicate()[1].decode(errors="replace")[-2000:])
        self.assert_none_left(str(prefix))
        # An exit code of the binary's own comes through as it is.
        usage = self.run_user([str(prefix / "bin" / "policy"), "no-such-command"])
        self.assertEqual(usage.returncode, 2, usage.stderr)

    def test_a_platform_with_no_package_is_named(self) -> None:
        prefix = self.work / "global"
        self.assertEqual(self.run_user(["npm", "install", "-g", "--prefix", str(prefix), "toolpolicy"]).returncode, 0)
        launcher = prefix / "lib" / "node_modules" / "toolpolicy" / "bin" / "toolpolicy.js"
        pretend = self.work / "aix.js"
        pretend.write_text('Object.defineProperty(process, "platform", { value: "aix" });\n')
        run = self.run_user(["node", "--require", str(pretend), str(launcher), "--version"])
        self.assertEqual(run.returncode, 2)
        self.assertIn("no binary for this platform (`aix-x64`)", run.stderr)
        self.assertIn("`linux-x64-gnu`", run.stderr)
        self.assertIn("`darwin-arm64`", run.stderr)


class ClaudeCodeEntry(UserCase):
    def test_npx_gateway_as_claude_codes_entry_lists_the_policys_tools(self) -> None:
        if not CLAUDE.exists():
            message = f"missing: claude (run tests/e2e/install; looked in {CLAUDE})"
            if harness.IN_CI:
                self.fail(message)
            self.skipTest(message)
        from model_server import ModelServer

        seen: list[list[str]] = []

        def script(api: str, body: object) -> list[tuple]:
            names = [t.get("name", "") for t in (body or {}).get("tools") or []] if isinstance(body, dict) else []
            if any(n.startswith("mcp__tools__") for n in names):
                seen.append(sorted(n for n in names if n.startswith("mcp__tools__")))
            return [("text", "Scripted model: listed.")]

        memory = {"memory": {"command": str(harness.NPM_BIN / "mcp-server-memory"),
                             "env": {"MEMORY_FILE_PATH": str(self.work / "memory.jsonl")}}}
        (self.project / "servers.json").write_text(json.dumps({"mcpServers": memory}))
        (self.project / "memory.policy").write_text("NoDefer(memory__read_graph)\nHide(memory__delete_entities)\nDefer(*)\n")
        with ModelServer(script) as model:
            self.env.update(ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY="dummy", DISABLE_TELEMETRY="1",
                            DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                            ENABLE_TOOL_SEARCH="false")
            self.env["PATH"] = f"{harness.CLIENTS_BIN}{os.pathsep}{self.env['PATH']}"
            added = self.run_user(["claude", "mcp", "add", "--scope", "user", "tools", "--", "npx", "-y", "toolpolicy",
                                   "gateway", "--policy", str(self.project / "memory.policy"),
                                   "--servers", str(self.project / "servers.json")])
            self.assertEqual(added.returncode, 0, added.stderr)
            listed = self.run_user(["claude", "mcp", "list"])
            self.assertRegex(listed.stdout, r"tools: npx -y toolpolicy gateway .*✔ Connected", listed.stdout + listed.stderr)
            run = self.run_user(["claude", "-p", "List your tools.", "--allowedTools", "mcp__tools"])
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertTrue(seen, "Claude Code sent no request with the gateway's tools")
        self.assertEqual(seen[0], ["mcp__tools__call_tool", "mcp__tools__memory__read_graph", "mcp__tools__tool_search"])
        self.assert_none_left(str(self.work / "npm-cache"))


class Uvx(UserCase):
    def test_uvx_version_check_broken_and_first_answer(self) -> None:
        t0 = time.monotonic()
        dry = self.run_user(["uvx", "--from", "toolpolicy-cli", "policy", "gateway", "--dry-run",
                             "--policy", "gateway.policy", "--servers", "servers.json"])
        took = time.monotonic() - t0
        self.assertEqual(dry.returncode, 0, dry.stderr)
        self.assertIn("listed (", dry.stdout)
        run = self.run_user(["uvx", "--from", "toolpolicy-cli", "policy", "--version"])
        self.assertEqual((run.returncode, run.stdout.strip()), (0, f"policy {version()}"), run.stderr)
        broken = self.run_user(["uvx", "--from", "toolpolicy-cli", "policy", "check", "broken.policy"])
        self.assertEqual(broken.returncode, 1, broken.stderr)
        self.assert_same_as_checkout(broken, "check", "broken.policy")
        size = self.du(self.work / "uv-cache")
        print(f"\n  uvx --from toolpolicy-cli policy gateway --dry-run: {took:.1f} s from an empty cache;"
              f" uv cache {size / 1e6:.1f} MB", file=sys.stderr)


class Pip(UserCase):
    def test_pip_install_toolpolicy_runs_the_agents_example_against_the_scripted_model(self) -> None:
        venv = self.work / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        py = str(venv / "bin" / "python")
        pins = [line for line in (ROOT / "bindings" / "python" / "requirements-adapters.txt").read_text().splitlines()
                if line.startswith(("openai-agents==", "openai=="))]
        run = self.run_user([py, "-m", "pip", "install", "--quiet", "toolpolicy", *pins])
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        example = ROOT / "bindings" / "python" / "examples" / "openai_agents_example.py"
        shutil.copy(example, self.project / example.name)
        ran = self.run_user([py, "-m", "toolpolicy.testing", py, example.name])
        self.assertEqual(ran.returncode, 0, ran.stderr[-3000:])
        self.assertEqual(ran.stdout.strip(), "done ['web_fetch']", ran.stderr[-3000:])


class NodeModule(UserCase):
    def test_npm_install_toolpolicy_node_and_a_plan(self) -> None:
        (self.project / "package.json").write_text('{"name": "app", "private": true}\n')
        run = self.run_user(["npm", "install", "@toolpolicy/node"])
        self.assertEqual(run.returncode, 0, run.stderr)
        code = (
            'const { Engine } = require("@toolpolicy/node");'
            'const e = new Engine("Defer(web_fetch)\\n", [{name: "read", description: "Read a file."},'
            '{name: "web_fetch", description: "Fetch a web page."}]);'
            'const p = e.session().plan();'
            'console.log(JSON.stringify([p.declared.map((t) => t.name ?? t), p.deferred.map((t) => t.name ?? t)]));'
        )
        planned = self.run_user(["node", "-e", code])
        self.assertEqual(planned.returncode, 0, planned.stderr)
        self.assertEqual(json.loads(planned.stdout), [["read"], ["web_fetch"]])


if __name__ == "__main__":
    sys.exit(harness.main(sys.modules[__name__]))
