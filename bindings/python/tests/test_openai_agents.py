"""The OpenAI Agents SDK adapter against the real SDK and a scripted model."""

from __future__ import annotations

import asyncio

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

import chat
from model_server import ModelServer
from toolpolicy import Engine
from toolpolicy.adapters.openai_agents import PolicyTools, registry


def test_a_chat_sees_the_plan_searches_loads_and_is_refused_a_hidden_tool() -> None:
    set_tracing_disabled(True)
    chat.ran.clear()
    tools = [function_tool(f) for f in (chat.read_file, chat.web_fetch, chat.secret)]
    engine = Engine(chat.POLICY, registry(tools))
    policy = PolicyTools(engine.session(), tools)
    with ModelServer(chat.script) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=20)
        agent = Agent(
            name="helper",
            instructions="Help.",
            tools=policy.tools,
            model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
        )
        result = asyncio.run(
            asyncio.wait_for(Runner.run(agent, "Fetch example.com", run_config=policy.run_config()), 60)
        )
    assert result.final_output == "done"
    chat.check(server)
    assert "web_fetch" in policy.session.state()["evidence"], "the result is evidence"


def test_registry_is_the_function_tools_definitions() -> None:
    tools = [function_tool(f) for f in (chat.read_file, chat.web_fetch)]
    r = registry(tools)
    assert [t["name"] for t in r] == ["read_file", "web_fetch"]
    assert r[0]["parameters"]["properties"]["path"]["type"] == "string"
    assert r[0]["description"] == "Read a file. Returns its text."
