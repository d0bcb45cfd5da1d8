"""`policy gateway` behind real agent clients, each driven by a scripted
model (model_server.py) so nothing leaves the machine and no key is needed:

- Claude Code (npm `@anthropic-ai/claude-code`), set up with docs/gateway.md's
  `claude mcp add --scope user tools -- policy gateway ...` line, run
  headless (`claude -p`) against a scripted Anthropic Messages API;
- Codex (npm `@openai/codex`), set up with docs/gateway.md's
  `[mcp_servers.tools]` block in `$CODEX_HOME/config.toml`, run as
  `codex exec` against a scripted OpenAI Responses API;
- opencode (npm `opencode-ai`), set up with docs/gateway.md's `mcp` block in
  ~/.config/opencode/opencode.json, run as `opencode run` against a scripted
  OpenAI Chat Completions API (an `@ai-sdk/openai-compatible` provider);
- Qwen Code (npm `@qwen-code/qwen-code`), set up with docs/gateway.md's
  `mcpServers` block in ~/.qwen/settings.json, run headless (`qwen PROMPT`)
  against the same Chat Completions API (`OPENAI_BASE_URL`).

The snippets are read from docs/gateway.md itself (the HTTP entries of Claude
Code and Codex from the README), so the pages cannot drift from what is
tested. Behind the gateway runs the npm memory server under a policy
that declares `memory__read_graph`, hides `memory__delete_entities` and
defers the rest. The scripted model, in each client:

1. checks the tools the client sent: the gateway's search tool, its
   call-through tool and the declared tool, no deferred and no hidden one;
   then searches for the tool that creates entities;
2. reads the search result (the loaded tools and their parameters), calls
   `memory__create_entities` through `call_tool`;
3. reads its result, tries the hidden `memory__delete_entities` through
   `call_tool`;
4. reads the refusal and ends with text.

The test then asserts on what the model server recorded, on the client's
exit and output, on the memory file the real server wrote, and that no
gateway outlives the client.

Run with the venv tests/e2e/install made (tests/e2e/run-clients does all):
    target/e2e/venv/bin/python tests/e2e/test_clients.py [-k PATTERN]
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import signal
import subprocess
import time
import unittest
from collections.abc import Callable
from typing import Any

import harness
from harness import CLIENTS_BIN, NPM_BIN, ROOT
from model_server import ModelServer

POLICY = """\
NoDefer(memory__read_graph)
Hide(memory__delete_entities)
Defer(*)
"""

# The gateway's tools as the model sees them (call exposure), without the
# client's prefix, and the tool the policy hides.
LISTED = {"tool_search", "call_tool", "memory__read_graph"}
HIDDEN = "memory__delete_entities"

ENTITY = {
    "name": "gateway-e2e",
    "entityType": "test",
    "observations": ["written by a scripted model through a real client"],
}
FINAL = "Scripted model: the entity is written and the hidden tool was refused."

# How long one client run may take, start to exit (seconds).
CLIENT_TIMEOUT = 120.0


def readme_block(heading: str, lang: str) -> str:
    """The first fenced `lang` block after the line starting with `heading`
    in docs/gateway.md's "Adding it to a client"."""
    text = (ROOT / "docs" / "gateway.md").read_text()
    start = text.index("## Adding it to a client")
    at = text.index(heading, start)
    match = re.compile(rf"```{lang}\n(.*?)```", re.S).search(text, at)
    if match is None:
        raise AssertionError(f"docs/gateway.md: no ```{lang} block after {heading!r}")
    return match.group(1)



def http_block(lang: str) -> str:
    """The fenced `lang` block naming the team's URL in the README's "Put
    your client behind it" (the gateway served with `--listen`);
    docs/gateway.md repeats it, and a cargo test keeps the two the same."""
    text = (ROOT / "README.md").read_text()
    start = text.index("### 5. Put your client behind it")
    end = text.index("\n## ", start)
    for match in re.compile(rf"```{lang}\n(.*?)```", re.S).finditer(text, start, end):
        if DOCS_URL in match.group(1):
            return match.group(1)
    raise AssertionError(f"README.md: no ```{lang} block for an HTTP entry")


# The URL the HTTP snippets name, replaced by the test's gateway.
DOCS_URL = "https://mcp.example.com/mcp"
# A team member's token, in the environment as the snippets expect.
TEAM_TOKEN = "team-token-0123456789abcdef"


def readme_modes_block(contains: str, lang: str) -> str:
    """The first fenced `lang` block holding `contains` in README.md's
    "Modes and flags behind the gateway"."""
    text = (ROOT / "README.md").read_text()
    start = text.index("## Modes and flags behind the gateway")
    end = text.index("\n## ", start + 1)
    for match in re.compile(rf"```{lang}\n(.*?)```", re.S).finditer(text, start, end):
        if contains in match.group(1):
            return match.group(1)
    raise AssertionError(f"README.md: no ```{lang} block with {contains!r} about modes")


# A policy with the two modes of the README's example, over the memory server.
MODES_POLICY = """\
search tool_search
mode work {
  NoDefer(memory__read_graph, memory__create_entities)
  Defer(*)
}
mode review {
  NoDefer(memory__read_graph)
  Hide(memory__create*, memory__delete*)
  Defer(*)
}
"""

def next_step(results: list[tuple[str, str]]) -> tuple:
    """The scripted conversation: given the gateway tools' results so far,
    as (tool, text), the model's next move: a gateway tool and its arguments,
    or the final text."""
    if not results:
        return ("tool_search", {"query": "create entities in the knowledge graph"})
    if len(results) == 1:
        arguments = {"entities": [ENTITY]}
        return ("call_tool", {"name": "memory__create_entities", "arguments": arguments})
    if len(results) == 2:
        return ("call_tool", {"name": HIDDEN, "arguments": {"entityNames": [ENTITY["name"]]}})
    return ("text", FINAL)


def run_client(
    argv: list[str], env: dict[str, str], cwd: pathlib.Path
) -> subprocess.CompletedProcess:
    """Runs a client to its exit in a process group of its own, standard
    input closed; past CLIENT_TIMEOUT the whole group is killed and the test
    fails with what the client printed."""
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=CLIENT_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(
            f"{argv[0]} did not exit within {CLIENT_TIMEOUT:.0f} s\n"
            f"--- stdout ---\n{out[-3000:]}\n--- stderr ---\n{err[-3000:]}"
        ) from None
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def client_env(home: pathlib.Path, bin_dir: pathlib.Path, **extra: str) -> dict[str, str]:
    """A clean environment: a temporary HOME, PATH with `policy` and the
    clients first, and nothing of the caller's configuration or keys."""
    env = {
        "HOME": str(home),
        "PATH": os.pathsep.join(
            [str(bin_dir), str(CLIENTS_BIN), os.environ.get("PATH", "/usr/bin:/bin")]
        ),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    env.update(extra)
    return env


class ClientCase(unittest.TestCase):
    """A temporary HOME with the gateway's policy and servers file where the
    docs/gateway.md puts them (~/.config/toolpolicy/), and `policy` on PATH."""

    client = ""

    def setUp(self) -> None:
        harness.require_parts(self)
        if not (CLIENTS_BIN / self.client).exists():
            message = f"missing: {self.client} (run tests/e2e/install; looked in {CLIENTS_BIN})"
            if harness.IN_CI:
                self.fail(message)
            self.skipTest(message)
        self.work = harness.WorkDir()
        self.addCleanup(self.work.close)
        self.home = self.work.path / "home"
        config = self.home / ".config" / "toolpolicy"
        config.mkdir(parents=True)
        (config / "gateway.policy").write_text(POLICY)
        self.memory = self.work.path / "memory.jsonl"
        servers = {
            "memory": {
                "command": str(NPM_BIN / "mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": str(self.memory)},
            }
        }
        (config / "servers.json").write_text(json.dumps({"mcpServers": servers}, indent=2))
        self.bin = self.work.path / "bin"
        self.bin.mkdir()
        (self.bin / "policy").symlink_to(harness.policy_binary().resolve())
        self.project = self.work.path / "project"
        self.project.mkdir()

    @contextlib.contextmanager
    def listening(self):
        """`policy gateway --listen` on the page's policy and servers, with a
        clients file that names one caller by `${TOOLPOLICY_TOKEN}`; yields
        its URL and stops it afterwards."""
        from test_listen import listening

        config = self.home / ".config" / "toolpolicy"
        work = self.work.path / "http"
        work.mkdir()
        clients = work / "clients.json"
        clients.write_text(json.dumps({"clients": {"team": {"token": "${TOOLPOLICY_TOKEN}"}}}))
        servers = json.loads((config / "servers.json").read_text())["mcpServers"]
        with listening(work, servers, POLICY, args=["--clients", str(clients)],
                       env={"TOOLPOLICY_TOKEN": TEAM_TOKEN}) as (url, _, _):
            yield url

    def assert_finished(self, run: subprocess.CompletedProcess[str], model: ModelServer) -> None:
        """The client exited cleanly with the scripted model's last words,
        and the model saw every request it expected."""
        failure = f"exit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
        self.assertEqual(run.returncode, 0, failure)
        self.assertIn(FINAL, run.stdout, failure)
        self.assertEqual(model.errors, [])

    def assert_results(self, results: list[tuple[str, str]]) -> None:
        """The gateway's answers the client passed back to the model: the
        search loaded the deferred tool with its parameters, the call through
        `call_tool` reached the real server, the hidden tool was refused."""
        names = [name for name, _ in results]
        self.assertEqual(names, ["tool_search", "call_tool", "call_tool"], results)
        search, created, refused = (text for _, text in results)
        self.assertIn("memory__create_entities", search)
        self.assertIn('"entityType"', search, "the search gives the loaded tool's parameters")
        self.assertNotIn(HIDDEN, search)
        self.assertIn(ENTITY["name"], created)
        self.assertIn(ENTITY["observations"][0], created)
        self.assertIn(f"Tool `{HIDDEN}` not found.", refused)
        # The real server wrote the entity, and the hidden call deleted nothing.
        self.assertIn(ENTITY["name"], self.memory.read_text())

    def assert_served_as_listed(
        self,
        model: ModelServer,
        turns: list[Any],
        tools: Callable[[Any], set[str]],
        results: Callable[[Any], list[tuple[str, str]]],
        history: str,
    ) -> None:
        """The page's run, seen by the model: four agent turns, each with
        the gateway's tools exactly as listed (call exposure: the list never
        changes, deferred tools stay out), the gateway's answers in the last
        turn's conversation (`history` is its key; `results` reads them),
        and the hidden tool never sent."""
        self.assertEqual(len(turns), 4, [json.dumps(t)[:300] for t in turns])
        for body in turns:
            self.assertEqual(tools(body), LISTED)
        self.assert_results(results(turns[-1][history]))
        self.assert_hidden_never_sent(model, turns, history)

    def assert_hidden_never_sent(self, server: ModelServer, turns: list[Any], history: str) -> None:
        """No request the client made names the hidden tool outside the
        conversation (`history` is its key): not in a tool list, a system
        prompt, instructions. Inside it, only once the scripted model has
        called it itself: every turn before that, search result included,
        never names it."""
        for record in server.records:
            body = {k: v for k, v in (record.body or {}).items() if k != history}
            self.assertNotIn(HIDDEN, json.dumps(body), f"{record.path} names the hidden tool")
        for i, body in enumerate(turns[:3]):
            self.assertNotIn(HIDDEN, json.dumps(body), f"turn {i + 1} names the hidden tool")

    def assert_no_gateway_left(self) -> None:
        """The client stopped the gateway it started when it exited."""
        deadline = time.monotonic() + harness.POLL_TIMEOUT
        while harness.gateway_pids(str(self.home)) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual(harness.gateway_pids(str(self.home)), [], "a gateway outlived its client")


CLAUDE_QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


class ClaudeCode(ClientCase):
    client = "claude"
    prefix = "mcp__tools__"

    def script(self, api: str, body: Any) -> list[tuple]:
        if self.prefix + "tool_search" not in tool_names(body):
            # A request of the client's own (a title, a summary): not the agent.
            return [("text", "ok")]
        step = next_step(claude_results(body["messages"], self.prefix))
        if step[0] == "text":
            return [step]
        return [("tool", self.prefix + step[0], step[1])]

    def env(self, model: ModelServer, **extra: str) -> dict[str, str]:
        return client_env(
            self.home,
            self.bin,
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="dummy",
            **CLAUDE_QUIET,
            **extra,
        )

    def gateway_tools(self, body: Any) -> set[str]:
        names = tool_names(body)
        return {n[len(self.prefix) :] for n in names if n.startswith(self.prefix)}

    def agent_turns(self, model: ModelServer) -> list[Any]:
        return [
            r.body
            for r in model.posts("/messages")
            if self.prefix + "tool_search" in tool_names(r.body)
        ]

    def project_config(self, *more_args: str) -> pathlib.Path:
        """The page's `.mcp.json`, `more_args` added to the gateway's."""
        config = json.loads(readme_block("or in `.mcp.json`", "json"))
        config["mcpServers"]["tools"]["args"] += list(more_args)
        path = self.work.path / "mcp.json"
        path.write_text(json.dumps(config))
        return path

    def test_claude_code_headless_through_the_readme_snippet(self) -> None:
        with ModelServer(self.script) as model:
            # Claude Code defers MCP tools behind its own ToolSearch by
            # default; off, they are in the request's `tools` as the gateway
            # lists them (test_claude_code_own_tool_search covers it on).
            env = self.env(model, ENABLE_TOOL_SEARCH="false")
            # The page's line, as a user types it.
            snippet = readme_block("**Claude Code**", "sh")
            self.assertIn("claude mcp add --scope user tools -- policy gateway", snippet)
            added = run_client(["bash", "-c", snippet], env, self.project)
            self.assertEqual(added.returncode, 0, added.stderr)
            listed = run_client(["claude", "mcp", "list"], env, self.project)
            connected = r"tools: policy gateway .*✔ Connected"
            self.assertRegex(listed.stdout, connected, listed.stdout + listed.stderr)

            self.claude_serves_the_chat(model, env)
        self.assert_no_gateway_left()

    def claude_serves_the_chat(self, model: ModelServer, env: dict[str, str]) -> None:
        """Claude Code, with the gateway added as `tools`, runs the chat of
        the scripted model and is served what the gateway listed."""
        prompt = "Write the test entity into the knowledge graph."
        run = run_client(
            ["claude", "-p", prompt, "--allowedTools", "mcp__tools"], env, self.project
        )
        self.assert_finished(run, model)
        self.assert_served_as_listed(
            model,
            self.agent_turns(model),
            self.gateway_tools,
            lambda history: claude_results(history, self.prefix),
            "messages",
        )

    def test_claude_code_own_tool_search(self) -> None:
        """With its defaults, Claude Code defers MCP tools itself: the
        gateway's listed tools are named in the system prompt as loadable
        through its ToolSearch, and only those (no deferred or hidden one).
        The scripted model loads the gateway's two tools with ToolSearch,
        then goes the same way as without it. Set up with docs/gateway.md's
        `.mcp.json` (Claude Code expands ${HOME} there)."""
        gateway_tools = [self.prefix + "tool_search", self.prefix + "call_tool"]

        def script(api: str, body: Any) -> list[tuple]:
            if "ToolSearch" not in tool_names(body):
                return [("text", "ok")]
            if not claude_results(body["messages"], "ToolSearch"):
                return [("tool", "ToolSearch", {"query": "select:" + ",".join(gateway_tools)})]
            return self.script(api, body)

        with ModelServer(script) as model:
            config = self.project_config()
            prompt = "Write the test entity into the knowledge graph."
            argv = ["claude", "-p", prompt, "--mcp-config", str(config), "--strict-mcp-config"]
            run = run_client([*argv, "--allowedTools", "mcp__tools"], self.env(model), self.project)
            self.assert_finished(run, model)

            turns = [r.body for r in model.posts("/messages") if "ToolSearch" in tool_names(r.body)]
            self.assertEqual(len(turns), 5, [json.dumps(t)[:300] for t in turns])
            first = turns[0]
            self.assertFalse([n for n in tool_names(first) if n.startswith(self.prefix)])
            named = set(re.findall(r"mcp__tools__[A-Za-z0-9_]+", json.dumps(first)))
            self.assertEqual(named, {self.prefix + n for n in LISTED}, json.dumps(first)[:3000])
            # Loaded by ToolSearch, the gateway's tools join the list, marked
            # deferred; the declared one, not asked for, stays out.
            for body in turns[1:]:
                loaded = [n for n in tool_names(body) if n.startswith(self.prefix)]
                self.assertEqual(sorted(loaded), sorted(gateway_tools))
            self.assert_results(claude_results(turns[-1]["messages"], self.prefix))
            self.assert_hidden_never_sent(model, turns[1:], "messages")
        self.assert_no_gateway_left()

    def test_claude_code_over_http_with_a_bearer_header(self) -> None:
        """The README's `claude mcp add --transport http` line, against
        `policy gateway --listen --clients`: the entry connects with its
        bearer header, and the agent is served as on standard input."""
        with self.listening() as url, ModelServer(self.script) as model:
            env = self.env(model, ENABLE_TOOL_SEARCH="false", TOOLPOLICY_TOKEN=TEAM_TOKEN)
            snippet = http_block("sh")
            self.assertIn(DOCS_URL, snippet)
            added = run_client(["bash", "-c", snippet.replace(DOCS_URL, url)], env, self.project)
            self.assertEqual(added.returncode, 0, added.stderr)
            listed = run_client(["claude", "mcp", "list"], env, self.project)
            self.assertRegex(listed.stdout, r"tools: http://\S+ \(HTTP\).*✔ Connected",
                             listed.stdout + listed.stderr)
            self.claude_serves_the_chat(model, env)
        self.assert_no_gateway_left()

    def test_claude_code_one_entry_per_mode_from_the_readme(self) -> None:
        """The README's `claude mcp add` lines, one per mode, each connect;
        an entry without `--mode` on the same policy is what the README says
        a client shows: a server that failed to connect, nothing more."""
        config = self.home / ".config" / "toolpolicy"
        (config / "modes.policy").write_text(MODES_POLICY)
        env = client_env(self.home, self.bin, **CLAUDE_QUIET)
        snippet = readme_modes_block("claude mcp add", "sh")
        self.assertIn("--mode work", snippet)
        self.assertIn("--mode review", snippet)
        added = run_client(["bash", "-c", snippet], env, self.project)
        self.assertEqual(added.returncode, 0, added.stderr)
        listed = run_client(["claude", "mcp", "list"], env, self.project)
        shown = listed.stdout + listed.stderr
        self.assertRegex(shown, r"tools-work: policy gateway --mode work .*✔ Connected", shown)
        self.assertRegex(shown, r"tools-review: policy gateway --mode review .*✔ Connected", shown)

        # The work line, as one line, under another name and without `--mode`.
        work = snippet.replace("\\\n", " ").splitlines()[0]
        without = work.replace("tools-work", "tools-none").replace(" --mode work", "")
        self.assertNotEqual(without, work)
        added = run_client(["bash", "-c", without], env, self.project)
        self.assertEqual(added.returncode, 0, added.stderr)
        listed = run_client(["claude", "mcp", "list"], env, self.project)
        shown = listed.stdout + listed.stderr
        line = next((l for l in shown.splitlines() if l.startswith("tools-none:")), "")
        self.assertRegex(line, r"policy gateway --policy \S+modes.policy --servers ", shown)
        self.assertIn("Failed to connect", line, shown)
        # Run by hand, the same command says why.
        direct = run_client(["bash", "-c", without.split(" -- ", 1)[1]], env, self.project)
        self.assertEqual(direct.returncode, 2, direct.stderr)
        self.assertIn("`--mode` is required", direct.stderr)
        self.assert_no_gateway_left()

    def test_claude_code_is_served_call_exposure_under_list_changed(self) -> None:
        """Claude Code speaks protocol 2026-07-28, where the list may not
        change as a side effect of a request: under `--exposure
        list-changed` the gateway serves it `call` exposure, so the list
        keeps `call_tool` and the search says to call through it."""
        with ModelServer(self.script) as model:
            config = self.project_config("--exposure", "list-changed")
            run = run_client(
                [
                    "claude",
                    "-p",
                    "Write the test entity into the knowledge graph.",
                    "--mcp-config",
                    str(config),
                    "--strict-mcp-config",
                    "--allowedTools",
                    "mcp__tools",
                ],
                self.env(model, ENABLE_TOOL_SEARCH="false"),
                self.project,
            )
            self.assertEqual(run.returncode, 0, run.stderr[-2000:])
            self.assertIn(FINAL, run.stdout)
            turns = self.agent_turns(model)
            self.assertEqual(len(turns), 4)
            for body in turns:
                self.assertEqual(self.gateway_tools(body), LISTED)
            results = claude_results(turns[-1]["messages"], self.prefix)
            self.assertIn("call them through `call_tool`", results[0][1])
            self.assert_results(results)
        self.assert_no_gateway_left()


def tool_names(body: Any) -> list[str]:
    return [t.get("name") for t in body.get("tools") or []]


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def claude_results(messages: list[dict], prefix: str) -> list[tuple[str, str]]:
    """The results of the gateway's tools in an Anthropic conversation, in
    order, as (tool without the client's prefix, text)."""
    names: dict[str, str] = {}
    results = []
    for message in messages:
        if not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_use":
                names[block["id"]] = block["name"]
            elif block.get("type") == "tool_result":
                name = names.get(block.get("tool_use_id"), "")
                if name.startswith(prefix):
                    results.append((name[len(prefix) :], text_of(block.get("content"))))
    return results


class Codex(ClientCase):
    client = "codex"
    namespace = "mcp__tools"

    def script(self, api: str, body: Any) -> list[tuple]:
        if self.namespace_tools(body) is None:
            return [("text", "ok")]
        step = next_step(codex_results(body["input"], self.namespace))
        if step[0] == "text":
            return [step]
        return [("tool", step[0], step[1], self.namespace)]

    def namespace_tools(self, body: Any) -> set[str] | None:
        """The gateway's tools in a request: Codex lists an MCP server's
        tools as one namespace, `mcp__SERVER`."""
        for tool in body.get("tools") or []:
            if tool.get("type") == "namespace" and tool.get("name") == self.namespace:
                return {t.get("name") for t in tool.get("tools", [])}
        return None

    def agent_turns(self, model: ModelServer) -> list[Any]:
        posts = model.posts("/responses")
        return [r.body for r in posts if self.namespace_tools(r.body) is not None]

    def run_codex(
        self, model: ModelServer, *more_args: str, url: str | None = None
    ) -> subprocess.CompletedProcess:
        """`codex exec` with docs/gateway.md's `[mcp_servers.tools]` block (the
        user's home where it says /home/you, `more_args` added to the
        gateway's; with `url`, the HTTP entry's block at that URL) after a
        model provider at the scripted model."""
        codex_home = self.home / ".codex"
        codex_home.mkdir(exist_ok=True)
        snippet = readme_block("**Codex**", "toml") if url is None else http_block("toml")
        self.assertIn("[mcp_servers.tools]", snippet)
        snippet = snippet.replace("/home/you", str(self.home))
        if url is not None:
            self.assertIn(DOCS_URL, snippet)
            snippet = snippet.replace(DOCS_URL, url)
        if more_args:
            extra = "".join(f', "{a}"' for a in more_args)
            snippet = re.sub(r'(servers\.json")\]', rf"\1{extra}]", snippet)
            self.assertIn(more_args[-1], snippet)
        provider = (
            'model = "scripted"\n'
            'model_provider = "scripted"\n'
            "[model_providers.scripted]\n"
            'name = "scripted"\n'
            f'base_url = "{model.url}/v1"\n'
            'wire_api = "responses"\n'
            'env_key = "SCRIPTED_API_KEY"\n\n'
        )
        (codex_home / "config.toml").write_text(provider + snippet)
        env = client_env(
            self.home,
            self.bin,
            CODEX_HOME=str(codex_home),
            SCRIPTED_API_KEY="dummy",
            TOOLPOLICY_TOKEN=TEAM_TOKEN,
        )
        argv = [
            "codex",
            "exec",
            "--skip-git-repo-check",
            "--strict-config",
            # Nobody is there to approve a call in `codex exec`.
            "-c",
            'mcp_servers.tools.default_tools_approval_mode="approve"',
            "Write the test entity into the knowledge graph.",
        ]
        return run_client(argv, env, self.project)

    def codex_serves_the_chat(self, model: ModelServer, url: str | None = None) -> None:
        """`codex exec` runs the chat to its end, served as the gateway listed
        (on standard input, or at `url`)."""
        run = self.run_codex(model, url=url)
        self.assert_finished(run, model)
        self.assert_served_as_listed(
            model,
            self.agent_turns(model),
            self.namespace_tools,
            lambda history: codex_results(history, self.namespace),
            "input",
        )

    def test_codex_exec_through_the_readme_snippet(self) -> None:
        with ModelServer(self.script) as model:
            self.codex_serves_the_chat(model)
        self.assert_no_gateway_left()

    def test_codex_over_http_with_a_bearer_token(self) -> None:
        """The README's HTTP `[mcp_servers.tools]` block (a URL and
        `bearer_token_env_var`), against `policy gateway --listen
        --clients`: served as on standard input."""
        with self.listening() as url, ModelServer(self.script) as model:
            self.codex_serves_the_chat(model, url)
        self.assert_no_gateway_left()

    def test_codex_does_not_reread_the_list(self) -> None:
        """Codex speaks 2025-06-18, so `--exposure list-changed` is served
        as asked: the list has no `call_tool`, and a search sends
        `notifications/tools/list_changed`. Codex does not list the tools
        again, so a loaded tool never reaches its model: with Codex, keep
        the default `call` exposure. (Fails the day Codex re-reads the list,
        and docs/gateway.md's advice can change.)"""

        def script(api: str, body: Any) -> list[tuple]:
            tools = self.namespace_tools(body)
            if tools is None:
                return [("text", "ok")]
            if not codex_results(body["input"], self.namespace):
                search = {"names": ["memory__create_entities"]}
                return [("tool", "tool_search", search, self.namespace)]
            return [("text", "listed: " + ", ".join(sorted(tools)))]

        with ModelServer(script) as model:
            run = self.run_codex(model, "--exposure", "list-changed")
            self.assertEqual(run.returncode, 0, run.stderr[-3000:])
            turns = self.agent_turns(model)
            self.assertEqual(len(turns), 2, [json.dumps(t)[:300] for t in turns])
            before = {"tool_search", "memory__read_graph"}
            self.assertEqual(self.namespace_tools(turns[0]), before)
            search = codex_results(turns[1]["input"], self.namespace)
            self.assertIn("Loaded 1 tool, callable from your next step", search[0][1])
            # The list the model gets after the search is the one before it.
            self.assertEqual(self.namespace_tools(turns[1]), before)
        self.assert_no_gateway_left()


def codex_results(items: list[dict], namespace: str) -> list[tuple[str, str]]:
    """The results of the gateway's tools in a Responses API input, in order,
    as (tool, text)."""
    names: dict[str, str] = {}
    results = []
    for item in items:
        if item.get("type") == "function_call" and item.get("namespace") == namespace:
            names[item["call_id"]] = item["name"]
        elif item.get("type") == "function_call_output" and item.get("call_id") in names:
            output = item.get("output")
            if isinstance(output, dict):
                output = output.get("content", "")
            results.append((names[item["call_id"]], text_of(output)))
    return results


# opencode fetches nothing at start with these: no update check, no models.dev
# catalogue (the provider below names its model itself), no language server
# downloads, no sharing. (The tests also pass with no network at all.)
OPENCODE_QUIET = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}


class ChatClient(ClientCase):
    """A client on the OpenAI Chat Completions API whose names for the
    gateway's tools start with `prefix`."""

    prefix = ""

    def script(self, api: str, body: Any) -> list[tuple]:
        if self.prefix + "tool_search" not in chat_tool_names(body):
            # A request of the client's own (a title, memory upkeep): not the agent.
            return [("text", "ok")]
        step = next_step(chat_results(body["messages"], self.prefix))
        if step[0] == "text":
            return [step]
        return [("tool", self.prefix + step[0], step[1])]

    def assert_chat_served_as_listed(self, model: ModelServer, turns: list[Any]) -> None:
        self.assert_served_as_listed(
            model,
            turns,
            self.gateway_tools,
            lambda history: chat_results(history, self.prefix),
            "messages",
        )

    def gateway_tools(self, body: Any) -> set[str]:
        names = chat_tool_names(body)
        return {n[len(self.prefix) :] for n in names if n.startswith(self.prefix)}

    def relist_script(self, api: str, body: Any) -> list[tuple]:
        """For `--exposure list-changed`: search (loading
        `memory__create_entities`), then a second later call the declared
        tool, then end by naming the gateway's tools in the last request."""
        if self.prefix + "tool_search" not in chat_tool_names(body):
            return [("text", "ok")]
        done = chat_results(body["messages"], self.prefix)
        if not done:
            search = {"query": "create entities", "names": ["memory__create_entities"]}
            return [("tool", self.prefix + "tool_search", search)]
        if len(done) == 1:
            time.sleep(1.0)
            return [("tool", self.prefix + "memory__read_graph", {})]
        return [("text", "listed: " + ", ".join(sorted(self.gateway_tools(body))))]


class OpenCode(ChatClient):
    client = "opencode"
    # opencode names an MCP server's tool `SERVER_TOOL`.
    prefix = "tools_"

    def agent_turns(self, model: ModelServer) -> list[Any]:
        posts = model.posts("/chat/completions")
        return [r.body for r in posts if self.prefix + "tool_search" in chat_tool_names(r.body)]

    def run_opencode(self, model: ModelServer, *more_args: str) -> subprocess.CompletedProcess:
        """`opencode run` with docs/gateway.md's `mcp` block in
        ~/.config/opencode/opencode.json (`more_args` added to the gateway's
        command), beside an OpenAI-compatible provider at the scripted
        model."""
        config = json.loads(readme_block("**opencode**", "json"))
        command = config["mcp"]["tools"]["command"]
        self.assertEqual(command[:2], ["policy", "gateway"])
        command += list(more_args)
        config["provider"] = {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "scripted",
                "options": {"baseURL": f"{model.url}/v1", "apiKey": "dummy"},
                "models": {"scripted": {"name": "scripted", "tool_call": True}},
            }
        }
        config["model"] = "scripted/scripted"
        path = self.home / ".config" / "opencode" / "opencode.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(config, indent=2))
        env = client_env(self.home, self.bin, **OPENCODE_QUIET)
        prompt = "Write the test entity into the knowledge graph."
        return run_client(["opencode", "run", prompt], env, self.project)

    def test_opencode_run_through_the_readme_snippet(self) -> None:
        with ModelServer(self.script) as model:
            run = self.run_opencode(model)
            self.assert_finished(run, model)

            self.assert_chat_served_as_listed(model, self.agent_turns(model))
        self.assert_no_gateway_left()

    def test_opencode_rereads_the_list(self) -> None:
        """opencode speaks 2025-11-25, so `--exposure list-changed` is served
        as asked: the list has no `call_tool`, and a search sends
        `notifications/tools/list_changed`. opencode lists the tools again
        (its MCP SDK waits 300 ms to gather notifications first), and the
        loaded tool joins the list its model gets from then on. The
        scripted model takes a second over the step after the search, so
        the new list is there by the next one."""

        with ModelServer(self.relist_script) as model:
            run = self.run_opencode(model, "--exposure", "list-changed")
            self.assertEqual(run.returncode, 0, run.stderr[-3000:])
            turns = self.agent_turns(model)
            self.assertEqual(len(turns), 3, [json.dumps(t)[:300] for t in turns])
            before = {"tool_search", "memory__read_graph"}
            self.assertEqual(self.gateway_tools(turns[0]), before)
            search = chat_results(turns[1]["messages"], self.prefix)
            loaded = "callable from your next step:\n- `memory__create_entities`"
            self.assertIn(loaded, search[0][1])
            # Listed again: the loaded tools are in the list, callable by
            # name; `call_tool` and the hidden tool are not.
            listed = self.gateway_tools(turns[2])
            self.assertTrue(before | {"memory__create_entities"} <= listed, listed)
            self.assertFalse({"call_tool", HIDDEN} & listed, listed)
            self.assertIn("memory__create_entities, ", run.stdout)
        self.assert_no_gateway_left()


# Qwen Code's settings that keep it from calling home: no update check, no
# usage statistics.
QWEN_QUIET = {
    "general": {"enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
}


class QwenCode(ChatClient):
    client = "qwen"
    # Qwen Code names an MCP server's tool `mcp__SERVER__TOOL`.
    prefix = "mcp__tools__"

    def agent_turns(self, model: ModelServer, marker: str) -> list[Any]:
        posts = model.posts("/chat/completions")
        return [r.body for r in posts if marker in chat_tool_names(r.body)]

    def run_qwen(
        self,
        model: ModelServer,
        *args: str,
        tool_search: bool = False,
        gateway_args: tuple[str, ...] = (),
    ) -> subprocess.CompletedProcess:
        """`qwen` headless (`args` after the prompt) with docs/gateway.md's
        `mcpServers` block in ~/.qwen/settings.json (`gateway_args` added to
        the gateway's), against the scripted model as an OpenAI-compatible
        endpoint. Qwen Code defers MCP tools behind its own `tool_search`
        by default; unless `tool_search`, that is off, and they are in the
        request's `tools` as the gateway lists them."""
        config = json.loads(readme_block("**Qwen Code**", "json"))
        self.assertEqual(config["mcpServers"]["tools"]["command"], "policy")
        config["mcpServers"]["tools"]["args"] += list(gateway_args)
        config.update(QWEN_QUIET)
        if not tool_search:
            config["tools"] = {"toolSearch": {"enabled": False}}
        path = self.home / ".qwen" / "settings.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(config, indent=2))
        env = client_env(
            self.home,
            self.bin,
            OPENAI_BASE_URL=f"{model.url}/v1",
            OPENAI_API_KEY="dummy",
            OPENAI_MODEL="scripted",
        )
        prompt = "Write the test entity into the knowledge graph."
        # The prompt first: `--allowed-tools` takes every word after it.
        return run_client(["qwen", prompt, *args], env, self.project)

    def test_qwen_code_headless_through_the_readme_snippet(self) -> None:
        with ModelServer(self.script) as model:
            run = self.run_qwen(model, "--allowed-tools", "mcp__tools")
            self.assert_finished(run, model)

            turns = self.agent_turns(model, self.prefix + "tool_search")
            self.assert_chat_served_as_listed(model, turns)
        self.assert_no_gateway_left()

    def test_qwen_code_does_not_reread_the_list(self) -> None:
        """Qwen Code speaks 2025-11-25, so `--exposure list-changed` is
        served as asked: the list has no `call_tool`, and a search sends
        `notifications/tools/list_changed`. Qwen Code does not list the
        tools again, so a loaded tool never reaches its model, not even a
        second later: with Qwen Code, keep the default `call` exposure. The
        search gives `query` as well as `names`: Qwen Code checks arguments
        against the tool's schema, where `query` is required."""

        with ModelServer(self.relist_script) as model:
            exposure = ("--exposure", "list-changed")
            run = self.run_qwen(model, "--allowed-tools", "mcp__tools", gateway_args=exposure)
            self.assertEqual(run.returncode, 0, run.stderr[-3000:])
            turns = self.agent_turns(model, self.prefix + "tool_search")
            self.assertEqual(len(turns), 3, [json.dumps(t)[:300] for t in turns])
            search = chat_results(turns[1]["messages"], self.prefix)
            loaded = "callable from your next step:\n- `memory__create_entities`"
            self.assertIn(loaded, search[0][1])
            # The list the model gets after the search is the one before it.
            for body in turns:
                self.assertEqual(self.gateway_tools(body), {"tool_search", "memory__read_graph"})
        self.assert_no_gateway_left()

    def test_qwen_code_asks_before_a_gateway_call(self) -> None:
        """Qwen Code asks before each MCP call; headless, where nobody
        answers, it declines the call unless `--allowed-tools mcp__tools`
        (or `--approval-mode yolo`) allows it."""

        def script(api: str, body: Any) -> list[tuple]:
            if self.prefix + "tool_search" not in chat_tool_names(body):
                return [("text", "ok")]
            if not chat_results(body["messages"], self.prefix):
                return [("tool", self.prefix + "tool_search", {"query": "create entities"})]
            return [("text", FINAL)]

        with ModelServer(script) as model:
            run = self.run_qwen(model)
            self.assert_finished(run, model)
            turns = self.agent_turns(model, self.prefix + "tool_search")
            self.assertEqual(len(turns), 2, [json.dumps(t)[:300] for t in turns])
            [(_, refused)] = chat_results(turns[1]["messages"], self.prefix)
            self.assertIn(
                f'Qwen Code requires permission to use "{self.prefix}tool_search", '
                "but that permission was declined",
                refused,
            )
        self.assert_no_gateway_left()

    def test_qwen_code_own_tool_search(self) -> None:
        """With its defaults, Qwen Code defers MCP tools behind its own
        `tool_search` and `tool_call`: none of the gateway's tools is in the
        request's list, and its prompt names exactly the gateway's listed
        tools (no deferred or hidden one)."""
        with ModelServer(lambda api, body: [("text", FINAL)]) as model:
            run = self.run_qwen(model, "--allowed-tools", "mcp__tools", tool_search=True)
            self.assert_finished(run, model)
            turns = self.agent_turns(model, "tool_call")
            self.assertEqual(len(turns), 1, [json.dumps(t)[:300] for t in turns])
            self.assertIn("tool_search", chat_tool_names(turns[0]))
            self.assertEqual(self.gateway_tools(turns[0]), set())
            named = set(re.findall(r"mcp__tools__[A-Za-z0-9_]+", json.dumps(turns[0])))
            self.assertEqual(named, {self.prefix + n for n in LISTED}, json.dumps(turns[0])[:3000])
        self.assert_no_gateway_left()

def chat_tool_names(body: Any) -> list[str]:
    return [t.get("function", {}).get("name") for t in body.get("tools") or []]


def chat_results(messages: list[dict], prefix: str) -> list[tuple[str, str]]:
    """The results of the gateway's tools in a Chat Completions conversation,
    in order, as (tool without the client's prefix, text)."""
    names: dict[str, str] = {}
    results = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        if message.get("role") == "tool":
            name = names.get(message.get("tool_call_id"), "")
            if name.startswith(prefix):
                results.append((name[len(prefix) :], text_of(message.get("content"))))
    return results


if __name__ == "__main__":
    import sys

    # The export's tests (test_export.py) run the same clients, without
    # the gateway: tests/e2e/run-clients runs both.
    import test_export

    sys.exit(harness.main(sys.modules[__name__], test_export))
