"""Load on `policy gateway --listen`: N concurrent clients, each making M
calls of the fixture's `echo` one after another, against the fixture served
over HTTP directly and then through the gateway (the fixture behind it on
standard input), on loopback only. Prints each side's throughput and
latency (p50, p99), the latency the gateway adds, and the gateway's
resident memory per open session (S sessions opened after the calls, each
initialized and listed once).

Requests are of the 2026-07-28 revision (no session, JSON answers), one
keep-alive connection per client. Everything is bounded: every request by
30 s, the whole run by `--timeout`.

    cargo build --release --bin policy --example mcp_fixture
    tests/e2e/install
    target/e2e/venv/bin/python tests/e2e/load.py --bin target/release/policy \\
        --fixture target/release/examples/mcp_fixture [--clients 100] [--calls 100] [--sessions 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import harness

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "1"},
}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
REQUEST_TIMEOUT = 30.0


def rss_kib(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def answer_of(response) -> dict:
    """The JSON-RPC answer of a JSON or event-stream body."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            message = json.loads(line[5:])
            if "result" in message or "error" in message:
                return message
    raise RuntimeError(f"no answer: {response.status_code} {response.text[:200]}")


async def one_client(url: str, tool: str, calls: int, latencies: list[float], i: int) -> None:
    import httpx2

    headers = {**HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Mcp-Name": tool}
    async with httpx2.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
        for n in range(calls):
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": tool, "arguments": {"text": f"c{i}-{n}"}, "_meta": META}}
            started = time.perf_counter()
            response = await http.post(url, content=json.dumps(body), headers=headers)
            answer = answer_of(response)
            latencies.append(time.perf_counter() - started)
            if response.status_code != 200 or "error" in answer or answer["result"].get("isError"):
                raise RuntimeError(f"call {n} of client {i} failed: {response.status_code} {answer}")


async def round_of(url: str, tool: str, clients: int, calls: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    started = time.perf_counter()
    await asyncio.gather(*(one_client(url, tool, calls, latencies, i) for i in range(clients)))
    return time.perf_counter() - started, latencies


async def open_sessions(url: str, count: int) -> None:
    import httpx2

    limit = asyncio.Semaphore(20)

    async def one(i: int) -> None:
        async with limit, httpx2.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": f"load-{i}", "version": "1"}}}
            opened = await http.post(url, content=json.dumps(init), headers=HEADERS)
            session = opened.headers["mcp-session-id"]
            old = {**HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
            await http.post(url, content=json.dumps(
                {"jsonrpc": "2.0", "method": "notifications/initialized"}), headers=old)
            listed = await http.post(url, content=json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), headers=old)
            answer_of(listed)["result"]

    await asyncio.gather(*(one(i) for i in range(count)))


def start(argv: list[str], env: dict, cwd: str, stderr) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=cwd, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=stderr, text=True)


def wait_for(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise RuntimeError(f"{what}: not within {timeout}s")


def summary(name: str, wall: float, latencies: list[float]) -> dict:
    ms = [x * 1000 for x in latencies]
    return {"side": name, "calls": len(ms), "throughput": len(ms) / wall,
            "p50_ms": statistics.median(ms), "p99_ms": percentile(ms, 99)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--bin", default=str(harness.policy_binary()))
    parser.add_argument("--fixture", default=str(pathlib.Path(harness.policy_binary()).parent
                                                 / "examples" / "mcp_fixture"))
    parser.add_argument("--timeout", type=float, default=600.0)
    options = parser.parse_args()
    for name, limit in (("clients", 1000), ("calls", 10000), ("sessions", 20000)):
        if not 1 <= getattr(options, name) <= limit:
            parser.error(f"--{name} must be between 1 and {limit}")

    work = pathlib.Path(tempfile.mkdtemp(prefix="policy-load-"))
    procs: list[subprocess.Popen] = []
    try:
        direct = start([options.fixture], {"FIXTURE_HTTP": "1", "FIXTURE_TOOLS": "echo"},
                       str(work), subprocess.DEVNULL)
        procs.append(direct)
        direct_url = direct.stdout.readline().strip()
        if not direct_url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the fixture did not serve HTTP: {direct_url!r}")
        (work / "p.policy").write_text("NoDefer(*)\n")
        (work / "s.json").write_text(json.dumps({"mcpServers": {"fx": {
            "command": options.fixture, "env": {"FIXTURE_TOOLS": "echo"}}}}))
        errlog = open(work / "gateway.stderr", "w")
        bound = str(options.clients * 2 + 50)
        gateway = start([options.bin, "gateway", "--policy", "p.policy", "--servers", "s.json",
                         "--listen", "127.0.0.1:0", "--max-concurrent", bound,
                         "--max-concurrent-per-caller", bound,
                         "--max-sessions", str(options.sessions + 10)],
                        {}, str(work), errlog)
        procs.append(gateway)
        mark = "serving MCP over HTTP at "
        text = wait_for(lambda: mark in (work / "gateway.stderr").read_text()
                        and (work / "gateway.stderr").read_text(), "the gateway's URL")
        gateway_url = text.split(mark, 1)[1].split()[0]

        async def run() -> dict:
            # A warm-up round on each side, then the measured rounds, side by side.
            await round_of(direct_url, "echo", min(options.clients, 10), 10)
            await round_of(gateway_url, "fx__echo", min(options.clients, 10), 10)
            wall_d, lat_d = await round_of(direct_url, "echo", options.clients, options.calls)
            wall_g, lat_g = await round_of(gateway_url, "fx__echo", options.clients, options.calls)
            idle = rss_kib(gateway.pid)
            await open_sessions(gateway_url, options.sessions)
            opened = rss_kib(gateway.pid)
            return {"direct": summary("direct", wall_d, lat_d),
                    "gateway": summary("gateway", wall_g, lat_g),
                    "rss_kib_before_sessions": idle, "rss_kib_after_sessions": opened}

        result = asyncio.run(asyncio.wait_for(run(), options.timeout))
        d, g = result["direct"], result["gateway"]
        print(f"{options.clients} clients x {options.calls} calls, loopback, "
              f"load average {os.getloadavg()[0]:.1f}")
        for side in (d, g):
            print(f"  {side['side']:8} {side['throughput']:8.0f} calls/s  "
                  f"p50 {side['p50_ms']:7.2f} ms  p99 {side['p99_ms']:7.2f} ms")
        print(f"  added    p50 {g['p50_ms'] - d['p50_ms']:+.2f} ms  p99 {g['p99_ms'] - d['p99_ms']:+.2f} ms")
        per = (result["rss_kib_after_sessions"] - result["rss_kib_before_sessions"]) / options.sessions
        print(f"  gateway resident memory: {result['rss_kib_before_sessions']} KiB, "
              f"{result['rss_kib_after_sessions']} KiB with {options.sessions} sessions open: "
              f"{per:.1f} KiB a session")
        return 0
    finally:
        for proc in procs:
            # SIGTERM: the gateway stops its server before it exits.
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
