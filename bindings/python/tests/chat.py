"""The chat every adapter's test runs against the real framework and the
scripted model: the model is given the declared tools and the search tool,
searches, calls the tool the search loaded (given in the next request),
and calls a hidden tool, which is refused without running.

The tools: `read_file` (declared), `web_fetch` (deferred), `secret`
(hidden).
"""

from __future__ import annotations

from typing import Any, List

from model_server import ModelServer, Turn

POLICY = "Defer(web_fetch)\nHide(secret)\n"
REFUSED = "Tool `secret` not found."
SEARCH = "tool_search"

ran: List[str] = []
"""The tools that actually ran, in order."""


def read_file(path: str) -> str:
    """Read a file. Returns its text."""
    ran.append("read_file")
    return f"the text of {path}"


def web_fetch(url: str) -> str:
    """Fetch a web page. Returns markdown."""
    ran.append("web_fetch")
    return f"# the page at {url}"


def secret() -> str:
    """Never shown."""
    ran.append("secret")
    return "the secret"


def script(n: int, body: Any) -> Turn:
    return [
        [("tool", SEARCH, {"query": "fetch a web page"})],
        [("tool", "web_fetch", {"url": "https://example.com"})],
        [("tool", "secret", {})],
        [("text", "done")],
    ][min(n, 3)]


def check(server: ModelServer, refusal: str = REFUSED) -> None:
    """What every adapter's chat must show; `refusal` is the text the model
    reads for the hidden tool's call."""
    assert server.errors == []
    assert len(server.requests) == 4, [server.tool_names(n) for n in range(len(server.requests))]
    assert sorted(server.tool_names(0)) == sorted([SEARCH, "read_file"])
    assert sorted(server.tool_names(1)) == sorted([SEARCH, "read_file", "web_fetch"]), server.tool_names(1)
    found = server.tool_results(1)[SEARCH]
    assert found.startswith("Loaded 1 tool, callable from your next step:\n- `web_fetch`"), found
    assert "# the page at https://example.com" in server.tool_results(2)["web_fetch"]
    assert refusal in server.tool_results(3)["secret"], server.tool_results(3)
    for n in range(4):
        assert "secret" not in server.tool_names(n)
    assert ran == ["web_fetch"], ran
