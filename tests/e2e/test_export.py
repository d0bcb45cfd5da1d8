"""`policy export` against the real clients, with no gateway in between:
the export writes a client's own settings for the npm memory server (its
entry, and the policy's decisions as the client's allow and deny keys),
and the client, driven by a scripted model (model_server.py) as in
test_clients.py, starts the plain server from that entry.

The policy hides `memory__delete*` and, in mode `work`, defers
`memory__search_nodes` and `memory__open_nodes`; mode `review` hides the
tools that write as well. Each test asserts on the tools the client
declared to the model (hidden ones absent, exposed ones present, deferred
ones deferred where the client defers), and that a call of an exposed tool
reached the real server (the memory file it writes):

- Claude Code: `.mcp.json` and `.claude/settings.json` in the project
  (`permissions.deny`); with its tool search on, every tool the policy
  does not hide is deferred behind ToolSearch, and off, declared;
- Codex: `.codex/config.toml` in a trusted project (`enabled_tools`,
  `disabled_tools`);
- opencode: `opencode.json` in the project, the top-level `tools` map for
  a policy without modes, and an agent per mode (`agent.MODE.tools`) over a
  top level that turns the server's tools off;
- Qwen Code: `.qwen/settings.json` in the project (`includeTools`,
  `excludeTools`, `tools.visible` for the active tools ahead of its tool
  search), which Qwen Code runs only once the server is approved
  (`qwen mcp approve`), again after each change of its entry.

Gemini CLI is not installed by tests/e2e/install, so it is not run here.

Run with the other client tests (tests/e2e/run-clients -k export).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import unittest
from typing import Any, Callable
from unittest import mock

import harness
from harness import CLIENTS_BIN, NPM_BIN
from model_server import ModelServer
from test_clients import (
    CLAUDE_QUIET,
    OPENCODE_QUIET,
    QWEN_QUIET,
    chat_results,
    chat_tool_names,
    claude_results,
    client_env,
    codex_results,
    run_client,
    tool_names,
)

# A policy without modes, and one with two.
POLICY = """\
Hide(memory__delete*)
Defer(memory__search_nodes, memory__open_nodes)
"""
MODES_POLICY = """\
Hide(memory__delete*)
mode work {
  Defer(memory__search_nodes, memory__open_nodes)
}
mode review {
  Hide(memory__create*, memory__add*)
}
"""

# The memory server's tools as the policy (and mode `work`) decides them.
ACTIVE = {"create_entities", "create_relations", "add_observations", "read_graph"}
DEFERRED = {"search_nodes", "open_nodes"}
HIDDEN = {"delete_entities", "delete_observations", "delete_relations"}
# Mode `review`: only the tools that read.
REVIEW = {"read_graph", "search_nodes", "open_nodes"}

ENTITY = {
    "name": "export-e2e",
    "entityType": "test",
    "observations": ["written through an exported entry, no gateway"],
}
CREATE = {"entities": [ENTITY]}
FINAL = "Scripted model: the entity is written."
PROMPT = "Write the test entity into the knowledge graph."


def named(body: Any, prefix: str) -> set[str]:
    """The memory tools a request names anywhere (tool list, system
    prompt, conversation), without the client's prefix."""
    return {m[len(prefix) :] for m in re.findall(re.escape(prefix) + r"[a-z_]+", json.dumps(body))}


class ExportCase(unittest.TestCase):
    """A temporary HOME and project, a servers file naming the memory
    server, the two policies, and `policy export` to run."""

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
        root = self.work.path
        self.home = root / "home"
        self.home.mkdir()
        self.project = root / "project"
        self.project.mkdir()
        self.bin = root / "bin"
        self.bin.mkdir()
        self.memory = root / "memory.jsonl"
        servers = {
            "memory": {
                "command": str(NPM_BIN / "mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": str(self.memory)},
            }
        }
        (root / "servers.json").write_text(json.dumps({"mcpServers": servers}, indent=2))
        (root / "plain.policy").write_text(POLICY)
        (root / "modes.policy").write_text(MODES_POLICY)

    def export(self, to: str, out: pathlib.Path, *args: str, policy: str = "modes") -> str:
        """`policy export --to CLIENT --out OUT` (the servers started and
        listed, no registry); its report."""
        run = harness.run_policy(
            "export",
            "--to",
            to,
            "--policy",
            str(self.work.path / f"{policy}.policy"),
            "--servers",
            str(self.work.path / "servers.json"),
            "--out",
            str(out),
            *args,
            cwd=self.work.path,
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        return run.stderr

    def assert_written(self, result: str) -> None:
        """The call's result came from the real server, which wrote the
        entity to its file."""
        self.assertIn(ENTITY["name"], result)
        self.assertIn(ENTITY["observations"][0], result)
        self.assertIn(ENTITY["name"], self.memory.read_text())

    def assert_finished(self, run: subprocess.CompletedProcess, model: ModelServer) -> None:
        failure = f"exit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
        self.assertEqual(run.returncode, 0, failure)
        self.assertIn(FINAL, run.stdout, failure)
        self.assertEqual(model.errors, [])


class ClaudeCodeExport(ExportCase):
    client = "claude"
    prefix = "mcp__memory__"

    def run_claude(self, model: ModelServer, **env: str) -> subprocess.CompletedProcess:
        self.export("claude-code", self.project, "--mode", "work")
        environment = client_env(
            self.home,
            self.bin,
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="dummy",
            **CLAUDE_QUIET,
            **env,
        )
        # The allow rule is the user's own: the export leaves it alone.
        argv = ["claude", "-p", PROMPT, "--allowedTools", self.prefix + "create_entities"]
        return run_client(argv, environment, self.project)

    def test_export_claude_code_deferred_by_its_tool_search(self) -> None:
        """With its defaults, Claude Code defers every MCP tool the deny
        rules leave: none is in the first request's list, all of them (and
        no hidden one) are named as loadable through ToolSearch. The model
        loads `create_entities`, calls it, and the real server writes."""
        create = self.prefix + "create_entities"

        def script(api: str, body: Any) -> list[tuple]:
            if "ToolSearch" not in tool_names(body):
                return [("text", "ok")]
            done = claude_results(body["messages"], "")
            if not done:
                return [("tool", "ToolSearch", {"query": "select:" + create})]
            if len(done) == 1:
                return [("tool", create, CREATE)]
            return [("text", FINAL)]

        with ModelServer(script) as model:
            run = self.run_claude(model)
            self.assert_finished(run, model)
            turns = [r.body for r in model.posts("/messages") if "ToolSearch" in tool_names(r.body)]
            self.assertEqual(len(turns), 3, [json.dumps(t)[:300] for t in turns])
            first = turns[0]
            self.assertFalse([n for n in tool_names(first) if n.startswith(self.prefix)])
            self.assertEqual(named(first, self.prefix), ACTIVE | DEFERRED)
            self.assertIn(create, tool_names(turns[1]))
            for body in turns:
                self.assertFalse(named(body, self.prefix) & HIDDEN, "a denied tool was sent")
            [_, (name, result)] = claude_results(turns[-1]["messages"], "")
            self.assertEqual(name, create)
            self.assert_written(result)

    def test_export_claude_code_declared_without_tool_search(self) -> None:
        """With its tool search off, Claude Code declares every tool the
        deny rules leave, deferred ones too (it cannot defer one tool), and
        no denied one."""
        with ModelServer(lambda api, body: [("text", FINAL)]) as model:
            run = self.run_claude(model, ENABLE_TOOL_SEARCH="false")
            self.assert_finished(run, model)
            turns = [r.body for r in model.posts("/messages") if "Bash" in tool_names(r.body)]
            self.assertTrue(turns)
            declared = {n[len(self.prefix) :] for n in tool_names(turns[0]) if n.startswith(self.prefix)}
            self.assertEqual(declared, ACTIVE | DEFERRED)


class CodexExport(ExportCase):
    client = "codex"
    namespace = "mcp__memory"

    def namespace_tools(self, body: Any) -> set[str] | None:
        for tool in body.get("tools") or []:
            if tool.get("type") == "namespace" and tool.get("name") == self.namespace:
                return {t.get("name") for t in tool.get("tools", [])}
        return None

    def create_once(self, api: str, body: Any) -> list[tuple]:
        """The scripted model: `create_entities` once the memory tools are
        offered, then the final answer."""
        if self.namespace_tools(body) is None:
            return [("text", "ok")]
        if not codex_results(body["input"], self.namespace):
            return [("tool", "create_entities", CREATE, self.namespace)]
        return [("text", FINAL)]

    def run_codex(self, model: ModelServer, trust: str, **extra: str) -> subprocess.CompletedProcess:
        """`codex exec` with the export in the project's `.codex/config.toml`,
        the project `trust`ed or not in the user's config."""
        codex_home = self.home / ".codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(
            'model = "scripted"\n'
            'model_provider = "scripted"\n'
            "[model_providers.scripted]\n"
            'name = "scripted"\n'
            f'base_url = "{model.url}/v1"\n'
            'wire_api = "responses"\n'
            'env_key = "SCRIPTED_API_KEY"\n'
            f'[projects."{self.project}"]\n'
            f'trust_level = "{trust}"\n'
        )
        report = self.export("codex", self.project, "--mode", "work")
        # The report says what the test that needs trust shows.
        self.assertIn("only when it trusts the project", report)
        env = client_env(self.home, self.bin, CODEX_HOME=str(codex_home), SCRIPTED_API_KEY="dummy", **extra)
        argv = ["codex", "exec", "--skip-git-repo-check", "--strict-config", PROMPT]
        return run_client(argv, env, self.project)

    def test_export_codex_enabled_and_disabled_tools(self) -> None:
        """Codex lists exactly `enabled_tools` (the deferred ones hidden, as
        Codex cannot defer), and the call reaches the real server."""

        with ModelServer(self.create_once) as model:
            run = self.run_codex(model, "trusted")
            self.assert_finished(run, model)
            turns = [r.body for r in model.posts("/responses") if self.namespace_tools(r.body)]
            self.assertEqual(len(turns), 2, [json.dumps(t)[:300] for t in turns])
            for body in turns:
                self.assertEqual(self.namespace_tools(body), ACTIVE)
            [(name, result)] = codex_results(turns[-1]["input"], self.namespace)
            self.assertEqual(name, "create_entities")
            self.assert_written(result)

    def test_export_codex_passes_a_variable_on_by_name(self) -> None:
        """Codex expands nothing in its config and gives a server only the
        variables it names: the servers file's `MEMORY_FILE_PATH:
        "${MEMORY_FILE_PATH}"` is exported as `env_vars`, and the server
        writes where the caller's environment says."""
        servers = {
            "memory": {
                "command": str(NPM_BIN / "mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": "${MEMORY_FILE_PATH}"},
            }
        }
        (self.work.path / "servers.json").write_text(json.dumps({"mcpServers": servers}))

        # Set for the export too, which starts the server to list its tools.
        with ModelServer(self.create_once) as model, mock.patch.dict(os.environ, MEMORY_FILE_PATH=str(self.memory)):
            run = self.run_codex(model, "trusted", MEMORY_FILE_PATH=str(self.memory))
            self.assert_finished(run, model)
            config = (self.project / ".codex" / "config.toml").read_text()
            self.assertIn('env_vars = ["MEMORY_FILE_PATH"]', config)
            self.assertNotIn("${", config)
            turns = [r.body for r in model.posts("/responses") if self.namespace_tools(r.body)]
            [(name, result)] = codex_results(turns[-1]["input"], self.namespace)
            self.assertEqual(name, "create_entities")
            # Written to the file the environment named, not the default.
            self.assert_written(result)

    def test_export_codex_project_file_needs_trust(self) -> None:
        """In a project Codex does not trust, it reads no `.codex/config.toml`
        there: the exported server is not started."""
        with ModelServer(lambda api, body: [("text", FINAL)]) as model:
            run = self.run_codex(model, "untrusted")
            self.assert_finished(run, model)
            turns = model.posts("/responses")
            self.assertTrue(turns)
            for record in turns:
                self.assertIsNone(self.namespace_tools(record.body))


class ChatExport(ExportCase):
    """A client that speaks Chat Completions to the scripted model."""

    prefix = ""

    def memory_tools(self, body: Any) -> set[str]:
        return {n[len(self.prefix) :] for n in chat_tool_names(body) if n.startswith(self.prefix)}

    def call_once(self, tool: str, args: Any) -> Callable[[str, Any], list[tuple]]:
        """The scripted model: a call of `tool` once the memory tools are
        offered, then the final answer."""

        def script(api: str, body: Any) -> list[tuple]:
            if not self.memory_tools(body):
                return [("text", "ok")]
            if not chat_results(body["messages"], self.prefix):
                return [("tool", self.prefix + tool, args)]
            return [("text", FINAL)]

        return script


class OpenCodeExport(ChatExport):
    client = "opencode"
    prefix = "memory_"

    def run_opencode(self, model: ModelServer, policy: str, *args: str) -> subprocess.CompletedProcess:
        config = {
            "provider": {
                "scripted": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "scripted",
                    "options": {"baseURL": f"{model.url}/v1", "apiKey": "dummy"},
                    "models": {"scripted": {"name": "scripted", "tool_call": True}},
                }
            },
            "model": "scripted/scripted",
        }
        (self.project / "opencode.json").write_text(json.dumps(config, indent=2))
        # Merged into the project's file: the provider stays.
        self.export("opencode", self.project, policy=policy)
        self.assertIn('"scripted"', (self.project / "opencode.json").read_text())
        env = client_env(self.home, self.bin, **OPENCODE_QUIET)
        return run_client(["opencode", "run", *args, PROMPT], env, self.project)

    def test_export_opencode_tools_map(self) -> None:
        """A policy without modes: the top-level `tools` map turns the hidden
        and deferred tools off, and the model gets the others."""

        with ModelServer(self.call_once("create_entities", CREATE)) as model:
            run = self.run_opencode(model, "plain")
            self.assert_finished(run, model)
            turns = [r.body for r in model.posts("/chat/completions") if self.memory_tools(r.body)]
            self.assertEqual(len(turns), 2, [json.dumps(t)[:300] for t in turns])
            for body in turns:
                self.assertEqual(self.memory_tools(body), ACTIVE)
            [(name, result)] = chat_results(turns[-1]["messages"], self.prefix)
            self.assertEqual(name, "create_entities")
            self.assert_written(result)

    def test_export_opencode_agent_per_mode(self) -> None:
        """Modes: an agent's `tools` map takes precedence over the top
        level's `memory_*: false`, so `--agent review` gets exactly the
        mode's tools, and calls one."""

        with ModelServer(self.call_once("read_graph", {})) as model:
            run = self.run_opencode(model, "modes", "--agent", "review")
            self.assert_finished(run, model)
            turns = [r.body for r in model.posts("/chat/completions") if self.memory_tools(r.body)]
            self.assertEqual(len(turns), 2, [json.dumps(t)[:300] for t in turns])
            for body in turns:
                self.assertEqual(self.memory_tools(body), REVIEW)
            [(name, result)] = chat_results(turns[-1]["messages"], self.prefix)
            self.assertEqual(name, "read_graph")
            self.assertIn('"entities"', result)


class QwenCodeExport(ChatExport):
    client = "qwen"
    prefix = "mcp__memory__"

    def qwen(self, *args: str, model: ModelServer | None = None) -> subprocess.CompletedProcess:
        extra = {}
        if model is not None:
            extra = {
                "OPENAI_BASE_URL": f"{model.url}/v1",
                "OPENAI_API_KEY": "dummy",
                "OPENAI_MODEL": "scripted",
            }
        return run_client(["qwen", *args], client_env(self.home, self.bin, **extra), self.project)

    def export_approved(self, tool_search: bool) -> str:
        """The work mode exported into the project and the server approved;
        the export's report."""
        user = dict(QWEN_QUIET)
        if not tool_search:
            user["tools"] = {"toolSearch": {"enabled": False}}
        (self.home / ".qwen").mkdir()
        (self.home / ".qwen" / "settings.json").write_text(json.dumps(user, indent=2))
        report = self.export("qwen-code", self.project, "--mode", "work")
        self.assertIn("`qwen mcp approve NAME`", report)
        self.assertIn("`tools.visible`", report)

        listed = self.qwen("mcp", "list")
        self.assertIn("memory:", listed.stdout)
        self.assertIn("Pending approval", listed.stdout, listed.stdout + listed.stderr)
        approved = self.qwen("mcp", "approve", "memory")
        self.assertEqual(approved.returncode, 0, approved.stderr)
        return report

    def test_export_qwen_code_defers_behind_its_tool_search(self) -> None:
        """With Qwen Code's defaults (its tool search on), the request
        declares exactly the active tools (`tools.visible`); the deferred
        ones are named in its prompt for `tool_search`, the hidden ones
        nowhere."""
        self.export_approved(tool_search=True)
        with ModelServer(lambda api, body: [("text", FINAL)]) as model:
            run = self.qwen(PROMPT, model=model)
            self.assert_finished(run, model)
            posts = model.posts("/chat/completions")
            # The agent's turns carry `tool_search`; a slow machine can see
            # a request sent again, so each is checked, not their number.
            turns = [r.body for r in posts if "tool_search" in chat_tool_names(r.body)]
            self.assertTrue(turns, [json.dumps(r.body)[:600] for r in posts])
            for body in turns:
                self.assertEqual(self.memory_tools(body), ACTIVE, chat_tool_names(body))
                text = json.dumps(body)
                mentioned = {n[len(self.prefix) :] for n in re.findall(r"mcp__memory__[A-Za-z0-9_]+", text)}
                self.assertTrue(DEFERRED <= mentioned, mentioned)
                self.assertEqual(mentioned & HIDDEN, set(), mentioned)

    def test_export_qwen_code_include_and_exclude_tools(self) -> None:
        """The project's `.qwen/settings.json` waits for approval (headless,
        the server is skipped until then); approved, with Qwen Code's tool
        search off, it declares exactly `includeTools` (the active tools and
        the deferred ones, as the report says), and the call reaches the real
        server. A new export that changes the entry waits for approval
        again."""
        report = self.export_approved(tool_search=False)
        self.assertIn("With the tool search off every included tool is declared", report)

        with ModelServer(self.call_once("create_entities", CREATE)) as model:
            # The prompt first: `--allowed-tools` takes every word after it.
            run = self.qwen(PROMPT, "--allowed-tools", self.prefix + "create_entities", model=model)
            self.assert_finished(run, model)
            turns = [r.body for r in model.posts("/chat/completions") if self.memory_tools(r.body)]
            self.assertEqual(len(turns), 2, [json.dumps(t)[:300] for t in turns])
            for body in turns:
                self.assertEqual(self.memory_tools(body), ACTIVE | DEFERRED)
            [(name, result)] = chat_results(turns[-1]["messages"], self.prefix)
            self.assertEqual(name, "create_entities")
            self.assert_written(result)

        self.export("qwen-code", self.project, "--mode", "review")
        listed = self.qwen("mcp", "list")
        self.assertIn("Pending approval", listed.stdout, listed.stdout + listed.stderr)


if __name__ == "__main__":
    import sys

    sys.exit(harness.main(sys.modules[__name__]))
