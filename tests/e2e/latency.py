"""The latency `policy gateway` adds, measured on loopback stdio.

One client talks line-delimited JSON-RPC to server-everything directly and,
alternately, to the same server behind the gateway; each `tools/list` and
each `tools/call` of `echo` is timed from the request's write to its
response's read. Calls alternate between the two so that the machine's
drift falls on both alike. Prints the median and p99 of each and of the
difference (budget: 1 ms median, 5 ms p99), and the gateway's resident
memory at idle and after the calls (one client connection per gateway
process, so that is the memory per connection).

    cargo build --release --bin policy
    tests/e2e/install
    target/e2e/venv/bin/python tests/e2e/latency.py [--calls 1000] [--bin PATH]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import harness

WARM_UP = 100


class Peer:
    """A child process spoken to in JSON-RPC lines, the handshake done."""

    def __init__(self, argv: list[str], cwd: str) -> None:
        self.proc = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "latency", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"`{method}`: the server closed its output")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"`{method}`: {message['error']}")
                return message["result"]

    def timed(self, method: str, params: dict) -> float:
        """One round trip, in milliseconds."""
        started = time.perf_counter()
        self.request(method, params)
        return (time.perf_counter() - started) * 1000

    def rss_kib(self) -> int:
        for line in pathlib.Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def compare(direct: Peer, through: Peer, method: str, direct_params: dict, gw_params: dict, n: int):
    for _ in range(WARM_UP):
        direct.timed(method, direct_params)
        through.timed(method, gw_params)
    pairs = [(direct.timed(method, direct_params), through.timed(method, gw_params)) for _ in range(n)]
    d = [a for a, _ in pairs]
    g = [b for _, b in pairs]
    diff = [b - a for a, b in pairs]
    print(
        f"{method:<11} direct median {statistics.median(d):.3f} p99 {p99(d):.3f} | "
        f"gateway median {statistics.median(g):.3f} p99 {p99(g):.3f} | "
        f"added median {statistics.median(g) - statistics.median(d):+.3f} "
        f"p99 {p99(g) - p99(d):+.3f} (pairwise median {statistics.median(diff):+.3f} "
        f"p99 {p99(diff):+.3f}) ms"
    )
    return statistics.median(g) - statistics.median(d), p99(g) - p99(d)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="timed calls of each kind")
    parser.add_argument("--bin", default=str(harness.ROOT / "target" / "release" / "policy"))
    options = parser.parse_args()
    if harness.missing_parts() and not (harness.HOME / "installed").is_file():
        print("run tests/e2e/install first", file=sys.stderr)
        return 2
    work = pathlib.Path(tempfile.mkdtemp(prefix="policy-latency-"))
    server = harness.real_servers(work, ["everything"])["everything"]
    (work / "servers.json").write_text(json.dumps({"mcpServers": {"everything": server}}))
    # Every tool declared, so both lists carry the same 13 definitions.
    (work / "gateway.policy").write_text("NoDefer(*)\n")
    direct = Peer([server["command"], *server["args"]], str(work))
    gw_argv = [options.bin, "gateway", "--policy", "gateway.policy", "--servers", "servers.json"]
    through = Peer(gw_argv, str(work))
    time.sleep(1)
    idle = through.rss_kib()
    echo = {"message": "latency"}
    added = [
        compare(direct, through, "tools/list", {}, {}, options.calls),
        compare(
            direct,
            through,
            "tools/call",
            {"name": "echo", "arguments": echo},
            {"name": "everything__echo", "arguments": echo},
            options.calls,
        ),
    ]
    busy = through.rss_kib()
    print(f"gateway RSS: {idle / 1024:.1f} MiB at idle, {busy / 1024:.1f} MiB after the calls "
          f"(one connection; children not counted)")
    direct.close()
    through.close()
    within = all(median <= 1.0 and tail <= 5.0 for median, tail in added)
    print("within budget (1 ms median, 5 ms p99)" if within else "OVER BUDGET (1 ms median, 5 ms p99)")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
