"""What the end-to-end tests share: where the installed servers and the
`policy` binary are, the servers file naming the real servers, and a
connection to `policy gateway` from the official Python MCP client.

The client runs in either protocol era: `legacy` is the initialize handshake
at 2025-11-25 (what every client before the 2026 revision speaks), and
`2026-07-28` adopts the stateless revision directly, so both eras reach the
gateway whatever the children behind it speak.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOME = pathlib.Path(os.environ.get("E2E_HOME", ROOT / "target" / "e2e"))
NPM_BIN = HOME / "npm" / "node_modules" / ".bin"
VENV_BIN = HOME / "venv" / "bin"
CLIENTS_BIN = HOME / "clients" / "node_modules" / ".bin"
IN_CI = bool(os.environ.get("CI"))

# The eras the client speaks; each test case runs in both.
LEGACY = "legacy"
MODERN = "2026-07-28"
ERA_VERSIONS = {LEGACY: "2025-11-25", MODERN: "2026-07-28"}

# Every wait in the tests is bounded by one of these (seconds).
CALL_TIMEOUT = 30.0
POLL_TIMEOUT = 20.0
RUN_TIMEOUT = 900.0


def policy_binary() -> pathlib.Path:
    """The `policy` binary cargo built: POLICY_BIN, else the debug build in
    CARGO_TARGET_DIR or target/."""
    if os.environ.get("POLICY_BIN"):
        return pathlib.Path(os.environ["POLICY_BIN"])
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "policy"


def missing_parts() -> list[str]:
    """What the tests need and cannot find; empty when all is there."""
    missing = []
    if not (HOME / "installed").is_file():
        missing.append(f"the real servers (run tests/e2e/install; looked in {HOME})")
    if not policy_binary().is_file():
        missing.append(f"the policy binary (cargo build; looked for {policy_binary()})")
    return missing


def require_parts(case: unittest.TestCase) -> None:
    """Skips a test where a part is missing, with what to do; under CI a
    missing part is a failure, never a skip."""
    missing = missing_parts()
    if not missing:
        return
    message = "missing: " + "; ".join(missing)
    if IN_CI:
        case.fail(message)
    case.skipTest(message)


def real_servers(work: pathlib.Path, names: list[str] | None = None) -> dict[str, Any]:
    """An `mcpServers` map of the real servers, in this order, with their data
    in `work`: a memory file, a folder the filesystem server may read, and a
    git repository with one commit."""
    (work / "files").mkdir(exist_ok=True)
    repo = work / "repo"
    if not repo.exists():
        repo.mkdir()
        git = ["git", "-C", str(repo), "-c", "user.name=e2e", "-c", "user.email=e2e@localhost"]
        subprocess.run([*git[:3], "init", "-q"], check=True)
        (repo / "README").write_text("e2e\n")
        subprocess.run([*git, "add", "README"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    every = {
        "everything": {"command": str(NPM_BIN / "mcp-server-everything"), "args": ["stdio"]},
        "memory": {
            "command": str(NPM_BIN / "mcp-server-memory"),
            "env": {"MEMORY_FILE_PATH": str(work / "memory.jsonl")},
        },
        "filesystem": {
            "command": str(NPM_BIN / "mcp-server-filesystem"),
            "args": [str(work / "files")],
        },
        "time": {"command": str(VENV_BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": str(VENV_BIN / "mcp-server-git"), "args": ["--repository", str(repo)]},
    }
    return {name: every[name] for name in (names or list(every))}


@contextmanager
def remote_everything(work: pathlib.Path):
    """`server-everything` serving streamable HTTP on a free local port, as a
    remote server would; yields its servers entry (`{"url": ...}`) and kills
    it afterwards. Waits, bounded, until the port answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = open(work / "everything-http.stderr", "w")
    server = subprocess.Popen(
        [str(NPM_BIN / "mcp-server-everything"), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + POLL_TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"server-everything did not listen on {port}: "
                        + (work / "everything-http.stderr").read_text(errors="replace")
                    )
                time.sleep(0.1)
        yield {"url": f"http://127.0.0.1:{port}/mcp"}
    finally:
        server.kill()
        server.wait(timeout=10)
        log.close()


def script_server(work: pathlib.Path, name: str, source: str) -> dict[str, Any]:
    """A servers entry running a small Python MCP server written by a test."""
    path = work / f"{name}.py"
    path.write_text(source)
    return {"command": sys.executable, "args": [str(path), str(work / f"{name}.pids")]}


@dataclass
class Gateway:
    """A live connection to `policy gateway`, with its files."""

    client: Any
    policy: pathlib.Path
    stderr: pathlib.Path
    notifications: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)

    def stderr_text(self) -> str:
        return self.stderr.read_text(errors="replace")


@asynccontextmanager
async def gateway(work: pathlib.Path, era: str, servers: dict[str, Any], policy: str, args=()):
    """Starts `policy gateway` on a servers file and a policy written in
    `work`, and connects the Python client to it over stdio in `era`.

    Notifications the client receives are recorded by method, and anything
    on the gateway's standard output that is not a protocol message lands
    in `stray`: the gateway may print nothing else there.
    """
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    servers_file = work / "servers.json"
    servers_file.write_text(json.dumps({"mcpServers": servers}, indent=2))
    policy_file = work / "gateway.policy"
    policy_file.write_text(policy)
    stderr_file = work / "gateway.stderr"
    argv = ["gateway", "--policy", str(policy_file), "--servers", str(servers_file), *args]
    params = StdioServerParameters(command=str(policy_binary()), args=argv, cwd=str(work))
    with open(stderr_file, "w") as errlog:
        live = Gateway(client=None, policy=policy_file, stderr=stderr_file)

        async def on_message(message: Any) -> None:
            if isinstance(message, Exception):
                live.stray.append(repr(message))
            else:
                live.notifications.append(message.method)

        client = Client(
            stdio_client(params, errlog=errlog),
            mode=era,
            cache=None,
            message_handler=on_message,
            read_timeout_seconds=CALL_TIMEOUT,
        )
        # The handshake is bounded by the client's read timeout; the context
        # must be entered and left in one task, so no cancel scope wraps it.
        try:
            async with client:
                live.client = client
                yield live
        except BaseException:
            # What the gateway and its children said is the first thing a
            # failure needs.
            sys.stderr.write(f"\n--- gateway stderr ---\n{live.stderr_text()[-4000:]}\n---\n")
            raise


def run_policy(*args: str, cwd: pathlib.Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs the `policy` binary to completion, standard input closed."""
    return subprocess.run(
        [str(policy_binary()), *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def gateway_pids(marker: str) -> list[int]:
    """Processes running `policy gateway` whose command line names `marker`
    (a test's own folder), read from /proc."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if "gateway" in words and any(marker in w for w in words):
            found.append(int(entry.name))
    return found


class WorkDir:
    """A temporary folder per test, removed afterwards."""

    def __init__(self) -> None:
        self.path = pathlib.Path(tempfile.mkdtemp(prefix="policy-e2e-"))

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def main(*modules) -> int:
    """Runs test modules' cases (`-k PATTERN` picks some), and closes with
    one `N passed, N failed, N skipped` line; non-zero exit on a failure."""
    import argparse
    import faulthandler

    # No run may hang: past this, every thread's stack is printed and the
    # run ends with a failure.
    faulthandler.dump_traceback_later(RUN_TIMEOUT, exit=True)
    parser = argparse.ArgumentParser()
    parser.add_argument("-k", action="append", default=[], help="run tests whose name holds this")
    parser.add_argument("-q", action="store_true", help="one character per test")
    options = parser.parse_args()
    loader = unittest.TestLoader()
    loader.testNamePatterns = [f"*{k}*" for k in options.k] or None
    suite = unittest.TestSuite(loader.loadTestsFromModule(m) for m in modules)
    result = unittest.TextTestRunner(verbosity=1 if options.q else 2).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    print(f"e2e: {passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 and result.testsRun > 0 else 1
