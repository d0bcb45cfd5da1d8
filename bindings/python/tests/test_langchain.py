"""The LangChain middleware against the real `create_agent` and a scripted model."""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

import chat
from model_server import ModelServer
from toolpolicy import Engine
from toolpolicy.adapters.langchain import ToolPolicyMiddleware, registry


def test_a_chat_sees_the_plan_searches_loads_and_is_refused_a_hidden_tool() -> None:
    chat.ran.clear()
    tools = [tool(f) for f in (chat.read_file, chat.web_fetch, chat.secret)]
    engine = Engine(chat.POLICY, registry(tools))
    policy = ToolPolicyMiddleware(engine.session())
    with ModelServer(chat.script) as server:
        model = ChatOpenAI(model="scripted", base_url=server.url, api_key="none", max_retries=0, timeout=20)  # type: ignore[arg-type]
        agent = create_agent(model, tools=tools, middleware=[policy])
        out = agent.invoke({"messages": [{"role": "user", "content": "Fetch example.com"}]})
    assert out["messages"][-1].content == "done"
    chat.check(server)
    assert "web_fetch" in policy.session.state()["evidence"], "the result is evidence"


def test_registry_is_the_tools_definitions() -> None:
    r = registry([tool(chat.read_file)])
    assert r[0]["name"] == "read_file"
    assert r[0]["parameters"]["properties"]["path"]["type"] == "string"
