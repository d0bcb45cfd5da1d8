"""The pydantic-ai capability against the real `Agent` and a scripted model."""

from __future__ import annotations

from typing import Any

from openai import AsyncOpenAI
from pydantic_ai import Agent, Tool
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import chat
from model_server import ModelServer
from toolpolicy import Engine
from toolpolicy.adapters.pydantic_ai import ToolPolicy, registry


def test_a_chat_sees_the_plan_searches_loads_and_is_refused_a_hidden_tool() -> None:
    chat.ran.clear()
    tools = [Tool(f) for f in (chat.read_file, chat.web_fetch, chat.secret)]
    engine = Engine(chat.POLICY, registry(tools))
    policy = ToolPolicy(engine.session())
    with ModelServer(chat.script) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=20)
        model = OpenAIChatModel("scripted", provider=OpenAIProvider(openai_client=client))
        agent: Agent[None, str] = Agent(model, tools=tools, capabilities=[policy])
        result = agent.run_sync("Fetch example.com")
    assert result.output == "done"
    # pydantic-ai answers a call of a tool it was not given itself, naming
    # only the tools it was given; the rest of the chat is the engine's.
    chat.check(server, refusal="Unknown tool name: 'secret'. Available tools: 'read_file', 'tool_search', 'web_fetch'")
    assert "web_fetch" in policy.session.state()["evidence"], "the result is evidence"


def test_a_call_of_a_deferred_tool_it_was_not_given_declares_it_next_step() -> None:
    """`on_miss = "activate"`: the session hears of the call at the next step."""
    chat.ran.clear()
    tools = [Tool(f) for f in (chat.read_file, chat.web_fetch, chat.secret)]
    engine = Engine(chat.POLICY, registry(tools))
    policy = ToolPolicy(engine.session())

    def script(n: int, body: Any) -> Any:
        return [
            [("tool", "web_fetch", {"url": "https://example.com"})],
            [("tool", "web_fetch", {"url": "https://example.com"})],
            [("text", "done")],
        ][min(n, 2)]

    with ModelServer(script) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=20)
        model = OpenAIChatModel("scripted", provider=OpenAIProvider(openai_client=client))
        agent: Agent[None, str] = Agent(model, tools=tools, capabilities=[policy])
        assert agent.run_sync("Fetch example.com").output == "done"
    assert "web_fetch" not in server.tool_names(0)
    assert "web_fetch" in server.tool_names(1)
    assert chat.ran == ["web_fetch"]
