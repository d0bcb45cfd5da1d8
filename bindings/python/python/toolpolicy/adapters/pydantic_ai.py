"""pydantic-ai: a capability whose `prepare_tools` gives the model the
session's plan.

```python
policy = ToolPolicy(engine.session())
agent = Agent(model, tools=[read_file, web_fetch, secret], capabilities=[policy])
agent.run_sync("...")
```

The capability registers the engine's search tool. Each step,
`prepare_tools` keeps the tools the plan declares, in the plan's order,
with the search tool's description carrying this step's catalog; a tool
the search loads is in the next request. Each tool call is checked with
the session before it runs (`wrap_tool_execute`) and its result recorded
as evidence.

A call of a tool the step did not declare never reaches a hook: pydantic-ai
answers it itself with its own "Unknown tool name" retry prompt, naming
only the tools it was given. The capability tells the session about such a
call at the next step's `prepare_tools` (before the plan is read), so a
deferred tool under `on_miss = "activate"` is declared from the next step
as the engine intends; only the text the model reads is pydantic-ai's.

Call `policy.session.prompt()` when a new user prompt starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Sequence, Set

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, WrapToolExecuteHandler
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.tools import Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from .._native import Session

__all__ = ["ToolPolicy", "registry"]


def registry(tools: Sequence[Tool[Any]]) -> List[Dict[str, Any]]:
    """The registry an `Engine` is built from, from pydantic-ai tools."""
    return [
        {"name": t.name, "description": t.description or "", "parameters": t.function_schema.json_schema}
        for t in tools
    ]


@dataclass
class ToolPolicy(AbstractCapability[Any]):
    """Declares the session's plan as each step's tools and checks each
    call with the session."""

    session: Session
    _search_name: Optional[str] = field(default=None, init=False)
    _toolset: Optional[FunctionToolset[Any]] = field(default=None, init=False)
    _seen: Set[str] = field(default_factory=set, init=False)

    def __post_init__(self) -> None:
        session = self.session
        self._search_name = session.plan()["search_tool"]
        own = [t for t in session.tool_list() if t["name"] == self._search_name]
        if not own:
            return
        definition = own[0]

        def search(query: str, names: Optional[List[str]] = None) -> str:
            return session.search(query, names or [])["text"]

        self._toolset = FunctionToolset(
            [Tool.from_schema(search, name=definition["name"], description=definition["description"],
                              json_schema=dict(definition["parameters"]))]
        )

    @classmethod
    def get_serialization_name(cls) -> Optional[str]:
        return None

    def get_toolset(self) -> Any:
        return self._toolset

    def _note_undeclared_calls(self, ctx: RunContext[Any]) -> None:
        """Tells the session about calls pydantic-ai answered itself."""
        for message in ctx.messages:
            if not isinstance(message, ModelResponse):
                continue
            for part in message.parts:
                if isinstance(part, ToolCallPart) and part.tool_call_id not in self._seen:
                    self._seen.add(part.tool_call_id)
                    if part.tool_name != self._search_name:
                        self.session.call(part.tool_name)

    async def prepare_tools(self, ctx: RunContext[Any], tool_defs: List[ToolDefinition]) -> List[ToolDefinition]:
        self._note_undeclared_calls(ctx)
        by_name = {t.name: t for t in tool_defs}
        out = []
        for definition in self.session.tool_list():
            tool = by_name.get(definition["name"])
            if tool is None:
                continue
            if definition["name"] == self._search_name:
                # The description carries the catalog, which shrinks as tools load.
                tool = replace(tool, description=definition["description"])
            out.append(tool)
        return out

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        self._seen.add(call.tool_call_id)
        name = call.tool_name
        if name == self._search_name:
            return await handler(args)
        verdict = self.session.call(name)
        if not verdict["allowed"]:
            return verdict["text"]
        try:
            result = await handler(args)
        except BaseException:
            self.session.record_result(name, "error")
            raise
        self.session.record_result(name, "ok")
        return result
