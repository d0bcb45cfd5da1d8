from toolpolicy import Engine, ToolPolicyError

tools = [
    {"name": "read_file", "description": "Read a file. Returns its text.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "web_fetch", "description": "Fetch a web page. Returns markdown.",
     "parameters": {"type": "object", "properties": {"url": {"type": "string"}}}},
    {"name": "delete_file", "description": "Delete a file."},
]
engine = Engine("Defer(web_fetch)\nHide(delete_file)\n", tools)
chat = engine.session()
print([t["name"] for t in chat.tool_list()])  # what the model is given this turn
print(chat.search("fetch a web page")["text"])  # the search tool's result text
print([t["name"] for t in chat.tool_list()])  # web_fetch is declared from now on
if chat.call("web_fetch")["allowed"]:
    chat.record_result("web_fetch", "ok")  # evidence that keeps it loaded
print(chat.call("delete_file")["text"])  # refused: "Tool `delete_file` not found."
saved = chat.state()  # persist it; engine.resume(saved) rebuilds the chat
try:
    engine.reload_policy("Defer(\n")
except ToolPolicyError as e:
    print(e.diagnostics[0]["code"], e.diagnostics[0]["line"])  # the last good policy stays
