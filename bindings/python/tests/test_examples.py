"""The examples (the ones docs/python.md shows, as they are) run as
written, the frameworks' against the scripted model, reached through the
OpenAI clients' own environment variables."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from model_server import ModelServer

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
DOCS = HERE.parents[2] / "docs" / "python.md"


def test_the_engine_example_runs() -> None:
    r = subprocess.run([sys.executable, str(EXAMPLES / "engine_example.py")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "['tool_search', 'read_file']",
        "Loaded 1 tool, callable from your next step:",
        "- `web_fetch`: Fetch a web page.",
        "0 tools remain on demand.",
        "['tool_search', 'read_file', 'web_fetch']",
        "Tool `delete_file` not found.",
        "PL001 2",
    ]


def script(n: int, body: Any) -> Any:
    return [
        [("tool", "tool_search", {"query": "fetch a web page"})],
        [("tool", "web_fetch", {"url": "https://example.com"})],
        [("text", "done")],
    ][min(n, 2)]


@pytest.mark.parametrize("example", ["openai_agents_example.py", "pydantic_ai_example.py", "langchain_example.py"])
def test_a_framework_example_runs_against_the_scripted_model(example: str) -> None:
    with ModelServer(script) as server:
        env = dict(
            os.environ,
            OPENAI_BASE_URL=server.url,
            OPENAI_API_KEY="none",
            OPENAI_AGENTS_DISABLE_TRACING="1",
            LANGSMITH_TRACING="false",
        )
        r = subprocess.run([sys.executable, str(EXAMPLES / example)], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "done ['web_fetch']", r.stdout + r.stderr[-3000:]
    assert server.errors == []
    assert sorted(server.tool_names(0)) == ["read_file", "tool_search"]
    assert sorted(server.tool_names(1)) == ["read_file", "tool_search", "web_fetch"]


def test_the_docs_show_the_examples_as_they_are() -> None:
    if not DOCS.exists():
        pytest.fail(f"{DOCS} is missing")
    blocks = re.findall(r"<!-- example: (\S+) -->\n```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    shown = {name for name, _ in blocks}
    assert shown == {p.name for p in EXAMPLES.glob("*.py")}, shown
    for name, code in blocks:
        assert code == (EXAMPLES / name).read_text(encoding="utf-8"), f"docs/python.md shows an old {name}"


# What each example prints when `python -m toolpolicy.testing` runs it: the
# scripted model searches for the prompt, calls the tool the search loaded
# and answers `done`; the example prints that and the session's evidence.
UNDER_TESTING = {
    "openai_agents_example.py": "done ['web_fetch']",
    "pydantic_ai_example.py": "done ['web_fetch']",
    "langchain_example.py": "done ['web_fetch']",
    "many_tools_example.py": "done ['forecast_lima']",
}


@pytest.mark.parametrize("example", sorted(UNDER_TESTING))
def test_an_example_runs_under_the_shipped_scripted_model(example: str) -> None:
    """`python -m toolpolicy.testing python EXAMPLE`, as docs/python.md says,
    with no OpenAI variable of the caller's: offline, without a key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_"))}
    argv = [sys.executable, "-m", "toolpolicy.testing", sys.executable, str(EXAMPLES / example)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == UNDER_TESTING[example], r.stdout + r.stderr[-3000:]


def test_the_scripted_model_s_usual_script_searches_calls_and_answers() -> None:
    from toolpolicy.testing import search_then_call

    script = search_then_call()
    tools = [{"type": "function", "function": {"name": n, "parameters": p}} for n, p in [
        ("tool_search", {}),
        ("read_file", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ]]
    first = {"messages": [{"role": "user", "content": "fetch a page"}], "tools": tools}
    assert script(0, first) == [("tool", "tool_search", {"query": "fetch a page"})]
    loaded = {"type": "function", "function": {"name": "web_fetch", "parameters": {
        "type": "object", "properties": {"url": {"type": "string"}, "n": {"type": "integer"}}, "required": ["url"]}}}
    assert script(1, {"messages": [], "tools": [*tools, loaded]}) == [("tool", "web_fetch", {"url": "example"})]
    assert script(2, {"messages": [], "tools": tools}) == [("text", "done")]


def test_the_runner_without_a_command_says_how_to_use_it() -> None:
    r = subprocess.run([sys.executable, "-m", "toolpolicy.testing"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "usage: python -m toolpolicy.testing COMMAND" in r.stderr
    missing = subprocess.run([sys.executable, "-m", "toolpolicy.testing", "no-such-command-here"],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 127
    assert "cannot run `no-such-command-here`" in missing.stderr
