"""A scripted model for tests and examples: the OpenAI Chat Completions API
on 127.0.0.1, answering from a script, so that an agent framework behind
the adapters runs for real, offline and without a key.

A `script` is a function of the request's number (from 0) and its body
(parsed JSON) that returns the model's turn: a list of blocks, each
`("text", str)` or `("tool", name, arguments)`. `search_then_call()` is the
usual one: search for the prompt, call the tool the search loaded, answer.
Every request body is recorded for a test to assert on. Streaming requests
are answered as server-sent events, others as one JSON answer.

In a test::

    with ScriptedModel(search_then_call(final="done")) as model:
        os.environ.update(model.env())
        ...  # run the agent; then look at model.requests

Around a script that reaches a model through the OpenAI client's own
environment variables (`OPENAI_BASE_URL`, `OPENAI_API_KEY`), as every
example in the docs does::

    python -m toolpolicy.testing python my_agent.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

__all__ = ["ScriptedModel", "Script", "Turn", "search_then_call", "completion", "main"]

Turn = List[Tuple[Any, ...]]
Script = Callable[[int, Any], Turn]


class ScriptedModel:
    """A scripted model on 127.0.0.1; use as a context manager. `url` is
    the base URL (`.../v1`), `requests` the bodies it was sent, `errors`
    what went wrong on its side (an unexpected path, a failing script)."""

    def __init__(self, script: Optional[Script] = None) -> None:
        self.script = script or search_then_call()
        self.requests: list[Any] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                if not self.path.split("?")[0].endswith("/chat/completions"):
                    owner.errors.append(f"unexpected path {self.path}")
                    self.reply(404, {"error": {"message": self.path}})
                    return
                with owner.lock:
                    n = len(owner.requests)
                    owner.requests.append(body)
                try:
                    turn = owner.script(n, body)
                except Exception as e:  # noqa: BLE001 - reported to the test
                    owner.errors.append(f"request {n}: the script failed: {e!r}")
                    turn = [("text", "the script failed")]
                if body.get("stream"):
                    self.stream(n, body, turn)
                else:
                    self.reply(200, completion(n, body, turn))

            def reply(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def stream(self, n: int, body: Any, turn: Turn) -> None:
                whole = completion(n, body, turn)
                message = whole["choices"][0]["message"]
                delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
                if message.get("tool_calls"):
                    delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
                chunks = [
                    {"id": whole["id"], "object": "chat.completion.chunk", "created": 0, "model": whole["model"],
                     "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                    {"id": whole["id"], "object": "chat.completion.chunk", "created": 0, "model": whole["model"],
                     "choices": [{"index": 0, "delta": {}, "finish_reason": whole["choices"][0]["finish_reason"]}],
                     "usage": whole["usage"]},
                ]
                data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                raw = data.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "ScriptedModel":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)

    def tool_names(self, n: int) -> list[str]:
        """The names of the tools request `n` declared."""
        return [t["function"]["name"] for t in self.requests[n].get("tools") or []]

    def tool_results(self, n: int) -> dict[str, str]:
        """Request `n`'s tool results, by the name of the tool called."""
        calls: dict[str, str] = {}
        results: dict[str, str] = {}
        for m in self.requests[n]["messages"]:
            for c in m.get("tool_calls") or []:
                calls[c["id"]] = c["function"]["name"]
            if m.get("role") == "tool":
                content = m.get("content")
                if isinstance(content, list):
                    content = "".join(p.get("text", "") for p in content)
                results[calls.get(m.get("tool_call_id"), "?")] = content
        return results


    def env(self) -> Dict[str, str]:
        """The environment variables that point the OpenAI clients (and the
        frameworks built on them) at this model, with a placeholder key and
        the frameworks' tracing off."""
        return {
            "OPENAI_BASE_URL": self.url,
            "OPENAI_API_KEY": "scripted",
            "OPENAI_AGENTS_DISABLE_TRACING": "1",
            "LANGSMITH_TRACING": "false",
        }


def completion(n: int, body: Any, turn: Turn) -> dict[str, Any]:
    text = "".join(b[1] for b in turn if b[0] == "text")
    calls = [
        {"id": f"call_{n}_{i}", "type": "function", "function": {"name": b[1], "arguments": json.dumps(b[2])}}
        for i, b in enumerate(turn)
        if b[0] == "tool"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _tool_names(body: Any) -> List[str]:
    return [t.get("function", {}).get("name", "") for t in body.get("tools") or []]


def _placeholder(schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    placeholders: Dict[str, Any] = {"integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
    return placeholders.get(kind, "example") if isinstance(kind, str) else "example"


def _arguments(body: Any, name: str) -> Dict[str, Any]:
    """Placeholder arguments for the tool `name` declares: each required
    parameter (each parameter, where none is required) by its type."""
    for tool in body.get("tools") or []:
        function = tool.get("function", {})
        if function.get("name") == name:
            schema = function.get("parameters") or {}
            properties = schema.get("properties") or {}
            wanted = schema.get("required") or list(properties)
            return {key: _placeholder(properties.get(key)) for key in wanted}
    return {}


def search_then_call(
    search_tool: str = "tool_search",
    query: Optional[str] = None,
    call: Optional[str] = None,
    arguments: Optional[Dict[str, Any]] = None,
    final: str = "done",
) -> Script:
    """The usual script of an agent behind a policy, one step a request:

    1. call `search_tool` with `query` (by default the last user message);
    2. call `call` with `arguments` (by default the first tool declared now
       that the first request did not declare, with a placeholder for each
       required parameter); skipped when the search loaded nothing;
    3. answer `final`.
    """
    first: List[str] = []

    def script(n: int, body: Any) -> Turn:
        if n == 0:
            first[:] = _tool_names(body)
            if search_tool not in first:
                return [("text", final)]
            asked = query
            if asked is None:
                users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
                asked = _text(users[-1].get("content")) if users else ""
            return [("tool", search_tool, {"query": asked})]
        if n == 1:
            name = call or next((t for t in _tool_names(body) if t not in first), None)
            if name is not None:
                args = arguments if arguments is not None else _arguments(body, name)
                return [("tool", name, args)]
        return [("text", final)]

    return script


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m toolpolicy.testing COMMAND...`: runs COMMAND with the
    OpenAI client's environment pointed at a scripted model
    (`search_then_call()`), and exits with its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m toolpolicy.testing COMMAND [ARG...]", file=sys.stderr)
        print("runs COMMAND against a scripted model on 127.0.0.1 (OPENAI_BASE_URL, OPENAI_API_KEY)", file=sys.stderr)
        return 0 if args else 2
    with ScriptedModel() as model:
        try:
            return subprocess.call(args, env={**os.environ, **model.env()})
        except OSError as e:
            print(f"toolpolicy.testing: cannot run `{args[0]}`: {e.strerror}", file=sys.stderr)
            return 127


if __name__ == "__main__":
    sys.exit(main())
