"""A scripted model behind the OpenAI Chat Completions API on 127.0.0.1, so
that the adapters' tests run the real frameworks offline, without a key.

A test gives a `script`: a function of the request's number (from 0) and
its body (parsed JSON) that returns the model's turn, a list of blocks,
each `("text", str)` or `("tool", name, arguments)`. Every request body is
recorded; the test asserts on them afterwards. Streaming requests are
answered as server-sent events, others as one JSON answer.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, List, Tuple

Turn = List[Tuple[Any, ...]]
Script = Callable[[int, Any], Turn]


class ModelServer:
    """Use as a context manager; `url` is the base URL (`.../v1`)."""

    def __init__(self, script: Script) -> None:
        self.script = script
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

    def __enter__(self) -> "ModelServer":
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
