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
