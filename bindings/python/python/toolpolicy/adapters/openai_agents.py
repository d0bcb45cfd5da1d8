"""The OpenAI Agents SDK: a session's plan as the run's tools.

```python
policy = PolicyTools(engine.session(), [read_file, web_fetch, secret])
agent = Agent(name="helper", tools=policy.tools, model=...)
result = await Runner.run(agent, "...", run_config=policy.run_config())
```

`tools` holds the engine's search tool and every tool of yours, each
enabled (`is_enabled`) only while the session's plan declares it, so the
model sees the declared tools and the search tool, and a tool the search
loads appears in the next request. Each call is checked with the session
first; a refused one returns the engine's not-found text without running
the tool, and an allowed one's result is recorded as evidence.
`run_config()` makes a call of a tool the model was not given (a hidden or
deferred one) answer the model with the engine's text instead of ending
the run, and tells the session about it (a deferred tool under
`on_miss = "activate"` is then declared from the next step).

Call `policy.session.prompt()` when a new user prompt starts.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, List, Optional, Sequence

from agents import FunctionTool, RunConfig, RunContextWrapper, Tool
from agents.tool_context import ToolContext
from agents.run_config import ToolErrorFormatterArgs

from .._native import Session

__all__ = ["PolicyTools", "registry"]


def registry(tools: Sequence[FunctionTool]) -> List[Dict[str, Any]]:
    """The registry an `Engine` is built from, from your function tools."""
    return [
        {"name": t.name, "description": t.description, "parameters": copy.deepcopy(t.params_json_schema)}
        for t in tools
    ]


class PolicyTools:
    """Your function tools, exposed as the session's plan says."""

    def __init__(self, session: Session, tools: Sequence[FunctionTool]) -> None:
        self.session = session
        self._search = self._search_tool()
        self.tools: List[Tool] = [self._search] if self._search else []
        self.tools.extend(self._guarded(t) for t in tools)

    def declared(self) -> List[str]:
        """The names this turn declares, the search tool included."""
        return [t["name"] for t in self.session.tool_list()]

    def run_config(self, **options: Any) -> RunConfig:
        """A `RunConfig` that answers calls of tools the model was not given
        with the engine's not-found text (your other options kept)."""
        return RunConfig(
            tool_not_found_behavior="return_error_to_model",
            tool_error_formatter=self._format_error,
            **options,
        )

    def _format_error(self, args: ToolErrorFormatterArgs[Any]) -> Optional[str]:
        if args.kind != "tool_not_found":
            return None
        verdict = self.session.call(args.tool_name)
        return verdict["text"] or args.default_message

    def _guarded(self, tool: FunctionTool) -> FunctionTool:
        session = self.session
        name = tool.name
        run = tool.on_invoke_tool

        async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> Any:
            verdict = session.call(name)
            if not verdict["allowed"]:
                return verdict["text"]
            try:
                out = await run(ctx, arguments)
            except BaseException:
                session.record_result(name, "error")
                raise
            session.record_result(name, "ok")
            return out

        def is_enabled(ctx: RunContextWrapper[Any], agent: Any) -> bool:
            return name in self.declared()

        guarded = copy.copy(tool)
        guarded.on_invoke_tool = on_invoke_tool
        guarded.is_enabled = is_enabled
        return guarded

    def _search_tool(self) -> Optional[FunctionTool]:
        """The engine's search tool as a function tool, or None when the
        policy has none (nothing deferred, no `search` statement)."""
        own = [t for t in self.session.tool_list() if t["name"] == self.session.plan()["search_tool"]]
        if not own:
            return None
        definition = own[0]
        session = self.session
        name = definition["name"]

        async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> str:
            try:
                args = json.loads(arguments or "{}")
                query = args.get("query", "")
                names = args.get("names") or []
            except (ValueError, AttributeError):
                return "The search takes `query` (text) and `names` (a list of tool names)."
            if not isinstance(query, str) or not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                return "The search takes `query` (text) and `names` (a list of tool names)."
            return session.search(query, names)["text"]

        tool = FunctionTool(
            name=name,
            description=definition["description"],
            params_json_schema=copy.deepcopy(definition["parameters"]),
            on_invoke_tool=on_invoke_tool,
            strict_json_schema=False,
        )

        def is_enabled(ctx: RunContextWrapper[Any], agent: Any) -> bool:
            # The description carries the catalog, which shrinks as tools load.
            for t in session.tool_list():
                if t["name"] == name:
                    tool.description = t["description"]
                    return True
            return False

        tool.is_enabled = is_enabled
        return tool
