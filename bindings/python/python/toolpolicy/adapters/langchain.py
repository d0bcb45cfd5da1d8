"""LangChain agents (`create_agent`): a middleware that gives the model the
session's plan.

```python
policy = ToolPolicyMiddleware(engine.session())
agent = create_agent(model, tools=[read_file, web_fetch, secret], middleware=[policy])
agent.invoke({"messages": [{"role": "user", "content": "..."}]})
```

The middleware registers the engine's search tool. Before each model call
it keeps, of the agent's tools, those the plan declares, in the plan's
order, with the search tool's description carrying this turn's catalog; a
tool the search loads is in the next request. Each tool call is checked
with the session: a refused one (a hidden tool, a deferred one not loaded)
gets the engine's not-found text as an error `ToolMessage` without
running; an allowed one's result is recorded as evidence (an error
`ToolMessage` as a failed result).

Call `policy.session.prompt()` when a new user prompt starts.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, Union

from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain.agents.middleware.types import ModelCallResult, ModelResponse
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from .._native import Session

__all__ = ["ToolPolicyMiddleware", "registry"]

ToolResult = Union[ToolMessage, Command[Any]]


def registry(tools: Sequence[Any]) -> List[Dict[str, Any]]:
    """The registry an `Engine` is built from, from LangChain tools (or
    anything `convert_to_openai_tool` takes)."""
    out = []
    for t in tools:
        f = convert_to_openai_tool(t)["function"]
        out.append({"name": f["name"], "description": f.get("description", ""), "parameters": f.get("parameters", {})})
    return out


def _name(tool: Union[BaseTool, Dict[str, Any]]) -> str:
    if isinstance(tool, BaseTool):
        return tool.name
    return str(tool.get("name") or tool.get("function", {}).get("name", ""))


class ToolPolicyMiddleware(AgentMiddleware):
    """Declares the session's plan as each model call's tools and checks
    each tool call with the session."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self._search_name: Optional[str] = session.plan()["search_tool"]
        own = [t for t in session.tool_list() if t["name"] == self._search_name]
        self.tools: List[BaseTool] = []
        if own:
            definition = own[0]

            def search(query: str, names: Optional[List[str]] = None) -> str:
                return session.search(query, names or [])["text"]

            self.tools = [
                StructuredTool.from_function(
                    func=search,
                    name=definition["name"],
                    description=definition["description"],
                    args_schema=dict(definition["parameters"]),
                )
            ]

    def _declare(self, request: ModelRequest) -> ModelRequest:
        listed = self.session.tool_list()
        by_name = {_name(t): t for t in request.tools}
        tools: List[Union[BaseTool, Dict[str, Any]]] = []
        for definition in listed:
            tool = by_name.get(definition["name"])
            if tool is None:
                continue
            if definition["name"] == self._search_name and isinstance(tool, BaseTool):
                # The description carries the catalog, which shrinks as tools load.
                tool = tool.model_copy(update={"description": definition["description"]})
            tools.append(tool)
        return request.override(tools=tools)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelCallResult:
        return handler(self._declare(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelCallResult:
        return await handler(self._declare(request))

    def _refusal(self, request: ToolCallRequest) -> Optional[ToolMessage]:
        call = request.tool_call
        if call["name"] == self._search_name:
            return None
        verdict = self.session.call(call["name"])
        if verdict["allowed"]:
            return None
        return ToolMessage(
            content=verdict["text"] or "",
            tool_call_id=call["id"] or "",
            name=call["name"],
            status="error",
        )

    def _record(self, request: ToolCallRequest, result: ToolResult) -> None:
        name = request.tool_call["name"]
        if name == self._search_name:
            return
        failed = isinstance(result, ToolMessage) and result.status == "error"
        self.session.record_result(name, "error" if failed else "ok")

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        try:
            result = handler(request)
        except BaseException:
            self.session.record_result(request.tool_call["name"], "error")
            raise
        self._record(request, result)
        return result

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        try:
            result = await handler(request)
        except BaseException:
            self.session.record_result(request.tool_call["name"], "error")
            raise
        self._record(request, result)
        return result
