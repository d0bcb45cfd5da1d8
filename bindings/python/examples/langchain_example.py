from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from toolpolicy import Engine
from toolpolicy.adapters.langchain import ToolPolicyMiddleware, registry


@tool
def read_file(path: str) -> str:
    """Read a file. Returns its text."""
    with open(path, encoding="utf-8") as f:
        return f.read()


@tool
def web_fetch(url: str) -> str:
    """Fetch a web page. Returns markdown."""
    return f"# the page at {url}"


tools = [read_file, web_fetch]
engine = Engine("Defer(web_fetch)\n", registry(tools))
policy = ToolPolicyMiddleware(engine.session())
agent = create_agent(ChatOpenAI(model="gpt-4.1"), tools=tools, middleware=[policy])
out = agent.invoke({"messages": [{"role": "user", "content": "Fetch example.com"}]})
print(out["messages"][-1].content, policy.session.state()["evidence"])
