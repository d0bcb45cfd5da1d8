"""A scripted model behind the HTTP APIs the agent clients call, so the
clients run offline, without an API key: the Anthropic Messages API (Claude
Code), the OpenAI Responses API (Codex) and the OpenAI Chat Completions API
(opencode, Qwen Code), each streamed as server-sent events, or as one JSON
answer when the request does not ask for a stream.

A test gives a `script`: a function of the request's body (parsed JSON) that
returns the model's turn, a list of blocks, each `("text", str)` or
`("tool", name, arguments)`. Every request is recorded (method, path, body);
the test asserts on the records afterwards. Nothing here reaches the network:
the server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Turn = list[tuple]


@dataclass
class Record:
    method: str
    path: str
    body: Any


class ModelServer:
    """An HTTP server on a free local port; `url` is its address."""

    def __init__(self, script: Callable[[str, Any], Turn]) -> None:
        self.script = script
        self.records: list[Record] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.record(self.command, self.path, None)
                if self.path.split("?")[0].endswith("/models"):
                    self.send_json(200, {"data": [], "models": [], "has_more": False})
                else:
                    self.send_json(404, {"error": {"type": "not_found", "message": self.path}})

            def do_HEAD(self) -> None:
                owner.record(self.command, self.path, None)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.headers.get("Content-Encoding") == "zstd":
                    owner.note(f"{self.path}: a zstd-compressed body, which is not read here")
                    self.send_json(400, {"error": {"message": "compressed body"}})
                    return
                try:
                    body = json.loads(raw) if raw else None
                except ValueError as e:
                    owner.note(f"{self.path}: a body that is not JSON: {e}")
                    self.send_json(400, {"error": {"message": "bad json"}})
                    return
                owner.record(self.command, self.path, body)
                path = self.path.split("?")[0]
                try:
                    if path.endswith("/messages/count_tokens"):
                        self.send_json(200, {"input_tokens": 100})
                    elif path.endswith("/messages"):
                        self.anthropic(body)
                    elif path.endswith("/responses"):
                        self.openai_responses(body)
                    elif path.endswith("/chat/completions"):
                        self.openai_chat(body)
                    else:
                        self.send_json(404, {"error": {"type": "not_found", "message": path}})
                except Exception as e:  # the test reads `errors`; the client sees a 500
                    owner.note(f"{path}: {type(e).__name__}: {e}")
                    self.send_json(500, {"error": {"type": "api_error", "message": str(e)}})

            def send_json(self, status: int, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def send_events(self, events: list[tuple[str | None, Any]]) -> None:
                """Server-sent events, each `(name, value)`: a value that
                is not a string is sent as JSON; a name of None sends the
                data line alone (Chat Completions names no event)."""
                data = b"".join(
                    (f"event: {name}\n" if name else "").encode()
                    + f"data: {v if isinstance(v, str) else json.dumps(v)}\n\n".encode()
                    for name, v in events
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def anthropic(self, body: Any) -> None:
                turn = owner.script("anthropic", body)
                model = body.get("model", "scripted")
                content = []
                for block in turn:
                    if block[0] == "text":
                        content.append({"type": "text", "text": block[1]})
                    else:
                        content.append(
                            {
                                "type": "tool_use",
                                "id": f"toolu_{uuid.uuid4().hex[:20]}",
                                "name": block[1],
                                "input": block[2],
                            }
                        )
                stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
                usage = {"input_tokens": 100, "output_tokens": 10}
                message = {
                    "id": f"msg_{uuid.uuid4().hex[:20]}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                }
                if not body.get("stream"):
                    self.send_json(200, message)
                    return
                events = [
                    (
                        "message_start",
                        {
                            "type": "message_start",
                            "message": {**message, "content": [], "stop_reason": None},
                        },
                    )
                ]
                for i, block in enumerate(content):
                    if block["type"] == "text":
                        start = {"type": "text", "text": ""}
                        delta = {"type": "text_delta", "text": block["text"]}
                    else:
                        start = {**block, "input": {}}
                        partial = json.dumps(block["input"])
                        delta = {"type": "input_json_delta", "partial_json": partial}
                    events += [
                        (
                            "content_block_start",
                            {"type": "content_block_start", "index": i, "content_block": start},
                        ),
                        (
                            "content_block_delta",
                            {"type": "content_block_delta", "index": i, "delta": delta},
                        ),
                        ("content_block_stop", {"type": "content_block_stop", "index": i}),
                    ]
                events += [
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 10},
                        },
                    ),
                    ("message_stop", {"type": "message_stop"}),
                ]
                self.send_events(events)

            def openai_responses(self, body: Any) -> None:
                turn = owner.script("openai", body)
                rid = f"resp_{uuid.uuid4().hex[:20]}"
                output = []
                for block in turn:
                    if block[0] == "text":
                        output.append(
                            {
                                "type": "message",
                                "id": f"msg_{uuid.uuid4().hex[:20]}",
                                "role": "assistant",
                                "status": "completed",
                                "content": [
                                    {"type": "output_text", "text": block[1], "annotations": []}
                                ],
                            }
                        )
                    else:
                        call = {
                            "type": "function_call",
                            "id": f"fc_{uuid.uuid4().hex[:20]}",
                            "call_id": f"call_{uuid.uuid4().hex[:20]}",
                            "name": block[1],
                            "arguments": json.dumps(block[2]),
                            "status": "completed",
                        }
                        # A tool of a namespace (Codex lists an MCP server's
                        # tools as one) is called by its namespace and name.
                        if len(block) > 3:
                            call["namespace"] = block[3]
                        output.append(call)
                usage = {
                    "input_tokens": 100,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 10,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 110,
                }
                response = {
                    "id": rid,
                    "object": "response",
                    "status": "completed",
                    "model": body.get("model", "scripted"),
                    "output": output,
                    "usage": usage,
                }
                if not body.get("stream"):
                    self.send_json(200, response)
                    return
                events = [
                    (
                        "response.created",
                        {
                            "type": "response.created",
                            "response": {**response, "status": "in_progress", "output": []},
                        },
                    )
                ]
                for i, item in enumerate(output):
                    events.append(
                        (
                            "response.output_item.added",
                            {"type": "response.output_item.added", "output_index": i, "item": item},
                        )
                    )
                    if item["type"] == "message":
                        events.append(
                            (
                                "response.output_text.delta",
                                {
                                    "type": "response.output_text.delta",
                                    "item_id": item["id"],
                                    "output_index": i,
                                    "content_index": 0,
                                    "delta": item["content"][0]["text"],
                                },
                            )
                        )
                    events.append(
                        (
                            "response.output_item.done",
                            {"type": "response.output_item.done", "output_index": i, "item": item},
                        )
                    )
                done = {"type": "response.completed", "response": response}
                events.append(("response.completed", done))
                self.send_events(events)

            def openai_chat(self, body: Any) -> None:
                turn = owner.script("chat", body)
                cid = f"chatcmpl-{uuid.uuid4().hex[:20]}"
                model = body.get("model", "scripted")
                text = "".join(b[1] for b in turn if b[0] == "text")
                calls = [
                    {
                        "id": f"call_{uuid.uuid4().hex[:20]}",
                        "type": "function",
                        "function": {"name": b[1], "arguments": json.dumps(b[2])},
                    }
                    for b in turn
                    if b[0] == "tool"
                ]
                finish = "tool_calls" if calls else "stop"
                usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
                head = {"id": cid, "created": int(time.time()), "model": model}
                if not body.get("stream"):
                    message: dict[str, Any] = {"role": "assistant", "content": text or None}
                    if calls:
                        message["tool_calls"] = calls
                    choice = {"index": 0, "message": message, "finish_reason": finish}
                    answer = {**head, "object": "chat.completion", "choices": [choice]}
                    self.send_json(200, {**answer, "usage": usage})
                    return

                def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> Any:
                    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
                    return (None, {**head, "object": "chat.completion.chunk", "choices": [choice]})

                events = [chunk({"role": "assistant", "content": ""})]
                if text:
                    events.append(chunk({"content": text}))
                for i, call in enumerate(calls):
                    # The call's name first, its arguments in a delta of
                    # their own, as the API streams them.
                    function = {"name": call["function"]["name"], "arguments": ""}
                    first = {**call, "index": i, "function": function}
                    events.append(chunk({"tool_calls": [first]}))
                    arguments = {"arguments": call["function"]["arguments"]}
                    events.append(chunk({"tool_calls": [{"index": i, "function": arguments}]}))
                events.append(chunk({}, finish))
                if (body.get("stream_options") or {}).get("include_usage"):
                    usage_chunk = {**head, "object": "chat.completion.chunk", "choices": []}
                    events.append((None, {**usage_chunk, "usage": usage}))
                events.append((None, "[DONE]"))
                self.send_events(events)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def record(self, method: str, path: str, body: Any) -> None:
        with self.lock:
            self.records.append(Record(method, path, body))

    def note(self, error: str) -> None:
        with self.lock:
            self.errors.append(error)

    def __enter__(self) -> "ModelServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def posts(self, suffix: str) -> list[Record]:
        with self.lock:
            return [
                r
                for r in self.records
                if r.method == "POST" and r.path.split("?")[0].endswith(suffix)
            ]
