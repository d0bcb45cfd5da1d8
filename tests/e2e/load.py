"""Load on `policy gateway --listen`: N concurrent clients, each making M
calls of the fixture's `echo`, against the fixture served over HTTP
directly and then through the gateway (the fixture behind it on standard
input), on loopback only. Prints each side's throughput and latency (p50,
p99), the latency the gateway adds, the CPU time each process spends per
call, and the gateway's resident memory per open session (S sessions
opened after the calls, each initialized and listed once).

The clients are `examples/http_load.rs` (one current-thread Rust process,
so that the client side is not what limits the run): 2026-07-28 requests
(no session, JSON answers), one keep-alive connection per client. Each
side is measured twice:

- closed loop: each client sends its next call when the last is answered,
  so at 100 clients a call's latency is mostly its wait behind the others
  (latency ~ clients / throughput);
- paced (`--rate`, default half the slower side's closed-loop throughput):
  the calls spread evenly over time in all, below both sides' capacity,
  so a call's latency is what serving it costs.

Direct and gateway runs alternate, `--rounds` times each (medians
reported), so that the machine's drift falls on both. Everything is
bounded: every request by 30 s, the whole run by `--timeout`.

    cargo build --release --bin policy --examples
    tests/e2e/install
    target/e2e/venv/bin/python tests/e2e/load.py --bin target/release/policy \\
        --fixture target/release/examples/mcp_fixture [--clients 100] [--calls 100] [--sessions 1000]
        [--rate auto|CALLS_PER_S|off] [--rounds 3] [--driver target/release/examples/http_load]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import harness

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
REQUEST_TIMEOUT = 30.0
# Calls each client makes before the measured ones (its connection opened).
WARM_UP = 5


def rss_kib(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


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


def cpu_ticks(pid: int) -> int:
    """User and system CPU time of a process, in clock ticks."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def family(pid: int) -> list[int]:
    """A process and its children (the gateway and the fixture it started)."""
    found = [pid]
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def drive(driver: str, url: str, tool: str, servers: dict[str, int], options,
          rate: float | None, deadline: float) -> dict:
    """One run of the load driver; its JSON report, with the CPU time per
    call of the driver and of each of the server side's `servers` (name to
    process id)."""
    left = deadline - time.monotonic()
    if left < 5:
        raise RuntimeError("the run's --timeout is spent")
    argv = [driver, "--url", url, "--tool", tool, "--clients", str(options.clients),
            "--calls", str(options.calls), "--warmup", str(WARM_UP), "--request-timeout", str(REQUEST_TIMEOUT),
            "--timeout", f"{left - 2:.0f}", "--json"]
    if rate is not None:
        argv += ["--rate", f"{rate:.0f}"]
    before = {name: cpu_ticks(pid) for name, pid in servers.items()}
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=left)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = {name: cpu_ticks(servers[name]) - ticks for name, ticks in before.items()}
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"the driver failed ({done.returncode}): {done.stderr.strip()}") from None
    if done.returncode != 0:
        raise RuntimeError(f"{report['failed']} calls failed, {report['answered']} answered "
                           f"(cut off: {report['cut_off']}): {report['errors']}")
    # The warm-up calls are in the CPU time too.
    calls = options.clients * (options.calls + WARM_UP)
    tick = os.sysconf("SC_CLK_TCK")
    report["cpu_us"] = {name: ticks / tick / calls * 1e6 for name, ticks in spent.items()}
    report["cpu_us"]["driver"] = ((after.ru_utime + after.ru_stime)
                                  - (children.ru_utime + children.ru_stime)) / calls * 1e6
    return report


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


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def measure(label: str, sides: dict, options, rate: float | None, deadline: float) -> dict:
    """`--rounds` runs of each side, alternating; prints each run and the
    medians; returns the median throughput of each side."""
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    print(f"{label}:")
    for n in range(options.rounds):
        for name, (url, tool, servers) in sides.items():
            report = drive(options.driver, url, tool, servers, options, rate, deadline)
            runs[name].append(report)
            cpu = ", ".join(f"{who} {us:.0f}" for who, us in report["cpu_us"].items())
            lag = (f"  sent late p99 {report['lag_p99_ms']:.2f} ms" if rate is not None else "")
            print(f"  {n + 1} {name:8} {report['throughput']:6.0f} calls/s  "
                  f"p50 {report['p50_ms']:7.2f} ms  p99 {report['p99_ms']:7.2f} ms  "
                  f"CPU µs a call: {cpu}{lag}", flush=True)
    d, g = runs["direct"], runs["gateway"]
    for name, side in runs.items():
        cpu = ", ".join(f"{who} {statistics.median(r['cpu_us'][who] for r in side):.0f}"
                        for who in side[0]["cpu_us"])
        print(f"  median {name:8} {median_of(side, 'throughput'):6.0f} calls/s  "
              f"p50 {median_of(side, 'p50_ms'):7.2f} ms  p99 {median_of(side, 'p99_ms'):7.2f} ms  "
              f"CPU µs a call: {cpu}")
    added_p50 = [gr["p50_ms"] - dr["p50_ms"] for dr, gr in zip(d, g)]
    added_p99 = [gr["p99_ms"] - dr["p99_ms"] for dr, gr in zip(d, g)]
    print(f"  added    p50 {statistics.median(added_p50):+.2f} ms "
          f"({min(added_p50):+.2f} to {max(added_p50):+.2f})  "
          f"p99 {statistics.median(added_p99):+.2f} ms "
          f"({min(added_p99):+.2f} to {max(added_p99):+.2f})")
    return {name: median_of(side, "throughput") for name, side in runs.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--rate", default="auto",
                        help="calls a second in all for the paced runs: a number, `auto` "
                             "(half the slower side's closed-loop throughput) or `off`")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bin", default=str(harness.policy_binary()))
    parser.add_argument("--fixture", default=str(pathlib.Path(harness.policy_binary()).parent
                                                 / "examples" / "mcp_fixture"))
    parser.add_argument("--driver", help="the load driver (default: http_load beside --fixture)")
    parser.add_argument("--timeout", type=float, default=600.0)
    options = parser.parse_args()
    for name, limit in (("clients", 1000), ("calls", 10000), ("sessions", 20000), ("rounds", 20)):
        if not 1 <= getattr(options, name) <= limit:
            parser.error(f"--{name} must be between 1 and {limit}")
    if options.rate not in ("auto", "off"):
        try:
            if not 1 <= float(options.rate) <= 1e6:
                raise ValueError
        except ValueError:
            parser.error(f"--rate must be `auto`, `off` or a number of calls a second, "
                         f"not `{options.rate}`")
    # The processes start in a folder of their own: paths given relative to
    # here are made absolute first.
    options.bin = str(pathlib.Path(options.bin).resolve())
    options.fixture = str(pathlib.Path(options.fixture).resolve())
    options.driver = str(pathlib.Path(options.driver).resolve() if options.driver
                         else pathlib.Path(options.fixture).parent / "http_load")
    if not pathlib.Path(options.driver).is_file():
        parser.error(f"no load driver at `{options.driver}` "
                     "(cargo build --release --examples builds it)")
    deadline = time.monotonic() + options.timeout

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
        behind = [pid for pid in family(gateway.pid) if pid != gateway.pid]
        if len(behind) != 1:
            raise RuntimeError(f"the gateway should have one child (the fixture): {behind}")
        sides = {"direct": (direct_url, "echo", {"fixture": direct.pid}),
                 "gateway": (gateway_url, "fx__echo",
                             {"gateway": gateway.pid, "fixture": behind[0]})}

        print(f"{options.clients} clients x {options.calls} calls, loopback, "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
        closed = measure("closed loop", sides, options, None, deadline)
        rate = None
        if options.rate == "auto":
            rate = round(min(closed.values()) / 2, -1) or 1.0
        elif options.rate != "off":
            rate = float(options.rate)
        if rate is not None:
            measure(f"paced, {rate:.0f} calls/s in all", sides, options, rate, deadline)
        print(f"load average {os.getloadavg()[0]:.1f} at the end", flush=True)

        async def sessions() -> dict:
            idle = rss_kib(gateway.pid)
            await open_sessions(gateway_url, options.sessions)
            opened = rss_kib(gateway.pid)
            return {"rss_kib_before_sessions": idle, "rss_kib_after_sessions": opened}

        result = asyncio.run(asyncio.wait_for(sessions(), max(1.0, deadline - time.monotonic())))
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
