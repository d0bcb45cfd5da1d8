"""`policy gateway --listen` in front of the real MCP servers, driven over
streamable HTTP by the official Python MCP client in both protocol eras
(sessions at 2025-11-25; requests without a session at 2026-07-28), and by
raw HTTP requests (httpx) for what no well-behaved client sends.

Run with the venv tests/e2e/install made (tests/e2e/run runs these too):
    target/e2e/venv/bin/python tests/e2e/test_listen.py [-k PATTERN]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import unittest

import anyio

import harness
from harness import LEGACY, MODERN, real_servers
from test_gateway import LISTED, POLICY, listed, outcome, through

MARK = "serving MCP over HTTP at "


@contextlib.contextmanager
def listening(work: pathlib.Path, servers: dict, policy: str = POLICY, args=(), env=None):
    """Starts `policy gateway --listen 127.0.0.1:0` on a servers file and a
    policy written in `work`; yields `(url, process, stderr file)` once it
    serves, and stops it (SIGTERM, then kill) afterwards."""
    servers_file = work / "servers.json"
    servers_file.write_text(json.dumps({"mcpServers": servers}, indent=2))
    policy_file = work / "gateway.policy"
    policy_file.write_text(policy)
    stderr_file = work / "gateway.stderr"
    argv = [
        str(harness.policy_binary()), "gateway", "--policy", str(policy_file),
        "--servers", str(servers_file), "--listen", "127.0.0.1:0", *args,
    ]
    with open(stderr_file, "w") as errlog:
        proc = subprocess.Popen(
            argv, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=errlog, env={**os.environ, **(env or {})},
        )
        try:
            deadline = time.monotonic() + harness.POLL_TIMEOUT * 3
            url = None
            while url is None:
                text = stderr_file.read_text(errors="replace")
                if MARK in text:
                    url = text.split(MARK, 1)[1].split()[0]
                elif proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the gateway did not listen:\n{text}")
                else:
                    time.sleep(0.05)
            yield url, proc, stderr_file
        except BaseException:
            sys.stderr.write(
                f"\n--- gateway stderr ---\n{stderr_file.read_text(errors='replace')[-4000:]}\n---\n"
            )
            raise
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)


@contextlib.asynccontextmanager
async def http_client(url: str, era: str, headers: dict | None = None):
    """The Python SDK's client over streamable HTTP in `era`, with `headers`
    on every request."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers=headers or {}, timeout=harness.CALL_TIMEOUT)
    async with http:
        client = Client(
            streamable_http_client(url, http_client=http),
            mode=era,
            cache=None,
            read_timeout_seconds=harness.CALL_TIMEOUT,
        )
        async with client:
            yield client


def post(url: str, body: dict, headers: dict | None = None, era: str = MODERN):
    """One raw POST; returns the httpx response. A 2026-07-28 request
    carries its version and method in headers and `_meta`."""
    import httpx2

    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if era == MODERN:
        body = json.loads(json.dumps(body))
        body.setdefault("params", {})["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"},
        }
        h["MCP-Protocol-Version"] = "2026-07-28"
        h["Mcp-Method"] = body["method"]
        if "name" in body["params"]:
            h["Mcp-Name"] = body["params"]["name"]
    h.update(headers or {})
    return httpx2.post(url, content=json.dumps(body), headers=h, timeout=harness.CALL_TIMEOUT)


def tools_list(id_: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/list", "params": {}}


class Case(unittest.IsolatedAsyncioTestCase):
    era = LEGACY

    async def asyncSetUp(self) -> None:
        asyncio.get_running_loop().slow_callback_duration = 60

    def setUp(self) -> None:
        harness.require_parts(self)
        self.work = harness.WorkDir()
        self.addCleanup(self.work.close)

    def servers(self, names=("everything", "memory")):
        return real_servers(self.work.path, list(names))


class Eras:
    """Cases that run once per protocol era."""

    async def test_several_clients_at_once_each_get_the_plan_from_one_set_of_servers(self):
        with listening(self.work.path, self.servers()) as (url, _, stderr):
            async def one(i: int):
                async with http_client(url, self.era) as client:
                    names = await listed(client)
                    ok, echoed = await outcome(client, "everything__echo", {"message": f"c{i}"})
                    return names, ok, echoed

            results = await asyncio.gather(*(one(i) for i in range(4)))
            for i, (names, ok, echoed) in enumerate(results):
                self.assertEqual(names, [n for n in LISTED if not n.startswith("time__")])
                self.assertTrue(ok, echoed)
                self.assertIn(f"c{i}", echoed)
            # One server of each, whatever the number of clients.
            text = stderr.read_text()
            self.assertEqual(text.count("note: server `everything` started"), 1, text)

    async def test_search_and_call_through_follow_the_era(self):
        with listening(self.work.path, self.servers()) as (url, _, _):
            async with http_client(url, self.era) as a, http_client(url, self.era) as b:
                ok, found = await outcome(a, "tool_search", {"query": "", "names": ["memory__read_graph"]})
                self.assertTrue(ok, found)
                self.assertIn("memory__read_graph", found)
                self.assertTrue((await through(a, "memory__read_graph", {}))[0])
                reached, text = await through(b, "memory__read_graph", {})
                if self.era == LEGACY:
                    # A session's search activates for that session alone.
                    self.assertFalse(reached, text)
                    self.assertIn("not found", text.lower())
                else:
                    # Without a session, any tool the context does not hide.
                    self.assertTrue(reached, text)
                # A hidden tool is refused on every path, in both eras.
                self.assertFalse((await through(b, "everything__get-env", {}))[0])
                self.assertFalse((await outcome(a, "everything__get-env", {}))[0])

    async def test_a_reload_reaches_every_client_from_its_next_request(self):
        with listening(self.work.path, self.servers()) as (url, _, stderr):
            async with http_client(url, self.era) as client:
                self.assertTrue((await outcome(client, "everything__echo", {"message": "x"}))[0])
                (self.work.path / "gateway.policy").write_text(
                    POLICY + "Hide(everything__echo)\n"
                )
                deadline = time.monotonic() + harness.POLL_TIMEOUT
                while "reloaded" not in stderr.read_text():
                    self.assertLess(time.monotonic(), deadline, stderr.read_text())
                    await anyio.sleep(0.1)
                self.assertNotIn("everything__echo", await listed(client))
                self.assertFalse((await outcome(client, "everything__echo", {"message": "x"}))[0])


    async def test_callers_with_different_tokens_get_different_lists_and_refusals(self):
        """Tokens of a clients file: `ops` is listed `everything__echo` and
        reaches the memory server's tools, `viewer` neither; a reload of the
        file takes them from `ops` alone (`auditor` keeps them)."""
        work = self.work.path
        clients = work / "clients.json"

        def write_clients(ops_flags):
            clients.write_text(json.dumps({"clients": {
                "ops": {"token": "${OPS_TOKEN}", "flags": ops_flags},
                "viewer": {"token": "${VIEWER_TOKEN}"},
                "auditor": {"token": "${AUDITOR_TOKEN}", "flags": ["ops"]},
            }}))

        write_clients(["ops"])
        tokens = {"OPS_TOKEN": "ops-token-0123456789abcdef",
                  "VIEWER_TOKEN": "viewer-token-0123456789abc",
                  "AUDITOR_TOKEN": "auditor-token-0123456789ab"}
        policy = POLICY + "when !ops {\n  Hide(source:mcp:memory, everything__echo)\n}\n"
        bearer = {k: {"Authorization": f"Bearer {v}"} for k, v in tokens.items()}
        with listening(work, self.servers(), policy, args=["--clients", str(clients)],
                       env=tokens) as (url, _, stderr):
            self.assertEqual(post(url, tools_list()).status_code, 401)
            async with http_client(url, self.era, bearer["OPS_TOKEN"]) as ops, \
                    http_client(url, self.era, bearer["VIEWER_TOKEN"]) as viewer, \
                    http_client(url, self.era, bearer["AUDITOR_TOKEN"]) as auditor:
                async def search(client):
                    ok, text = await outcome(client, "tool_search",
                                             {"query": "", "names": ["memory__read_graph"]})
                    return ok and "Not available" not in text

                self.assertTrue(await search(ops))
                self.assertFalse(await search(viewer))
                self.assertTrue((await through(ops, "memory__read_graph", {}))[0])
                self.assertFalse((await through(viewer, "memory__read_graph", {}))[0])
                self.assertIn("everything__echo", await listed(ops))
                self.assertNotIn("everything__echo", await listed(viewer))
                self.assertFalse((await outcome(viewer, "everything__echo", {"message": "x"}))[0])
                write_clients([])
                deadline = time.monotonic() + harness.POLL_TIMEOUT
                while "reloaded `" not in stderr.read_text():
                    self.assertLess(time.monotonic(), deadline, stderr.read_text())
                    await anyio.sleep(0.1)
                self.assertFalse((await through(ops, "memory__read_graph", {}))[0])
                self.assertTrue(await search(auditor))
                self.assertTrue((await through(auditor, "memory__read_graph", {}))[0])


class LegacyEra(Eras, Case):
    era = LEGACY


class ModernEra(Eras, Case):
    era = MODERN


class Refusals(Case):
    """What the listener refuses before MCP sees it, over raw HTTP."""

    def test_a_foreign_origin_is_403_and_no_origin_passes(self):
        with listening(self.work.path, self.servers(["everything"]),
                       args=["--allow-origin", "http://localhost:3000"]) as (url, _, _):
            self.assertEqual(post(url, tools_list(), {"Origin": "https://evil.example"}).status_code, 403)
            self.assertEqual(post(url, tools_list(), {"Origin": "http://localhost:3000"}).status_code, 200)
            self.assertEqual(post(url, tools_list()).status_code, 200)

    def test_a_body_over_16_mib_is_413(self):
        with listening(self.work.path, self.servers(["everything"])) as (url, _, _):
            big = tools_list()
            big["params"]["pad"] = "x" * (16 << 20)
            self.assertEqual(post(url, big).status_code, 413)
            self.assertEqual(post(url, tools_list()).status_code, 200)

    def test_an_ended_session_is_404_after_idle(self):
        with listening(self.work.path, self.servers(["everything"]),
                       args=["--session-idle", "1"]) as (url, _, _):
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "e2e", "version": "1"}}}
            opened = post(url, init, era=LEGACY)
            session = opened.headers["mcp-session-id"]
            old = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
            done = post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, old, era=LEGACY)
            self.assertEqual(done.status_code, 202)
            self.assertEqual(post(url, tools_list(), old, era=LEGACY).status_code, 200)
            time.sleep(2.5)
            self.assertEqual(post(url, tools_list(), old, era=LEGACY).status_code, 404)

    def test_requests_past_the_callers_share_are_429(self):
        slow = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "call_tool",
                           "arguments": {"name": "everything__trigger-long-running-operation",
                                         "arguments": {"duration": 3, "steps": 3}}}}
        with listening(self.work.path, self.servers(["everything"]),
                       args=["--max-concurrent-per-caller", "1"]) as (url, _, _):
            import threading

            answers = []

            def call_slowly():
                # The probes below may take the one share first: then again.
                deadline = time.monotonic() + harness.POLL_TIMEOUT
                answer = post(url, slow)
                while answer.status_code == 429 and time.monotonic() < deadline:
                    time.sleep(0.01)
                    answer = post(url, slow)
                answers.append(answer)

            worker = threading.Thread(target=call_slowly)
            worker.start()
            deadline = time.monotonic() + harness.POLL_TIMEOUT
            status = 200
            while status == 200 and time.monotonic() < deadline:
                status = post(url, tools_list()).status_code
                time.sleep(0.05)
            worker.join(timeout=harness.CALL_TIMEOUT)
            self.assertEqual(status, 429)
            self.assertEqual(answers[0].status_code, 200, answers[0].text)
            self.assertEqual(post(url, tools_list()).status_code, 200)


if __name__ == "__main__":
    sys.exit(harness.main(sys.modules[__name__]))
