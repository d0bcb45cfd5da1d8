from pydantic_ai import Agent, Tool

from toolpolicy import Engine
from toolpolicy.adapters.pydantic_ai import ToolPolicy, registry


def read_file(path: str) -> str:
    """Read a file. Returns its text."""
    with open(path, encoding="utf-8") as f:
        return f.read()


def web_fetch(url: str) -> str:
    """Fetch a web page. Returns markdown."""
    return f"# the page at {url}"


tools = [Tool(read_file), Tool(web_fetch)]
engine = Engine("Defer(web_fetch)\n", registry(tools))
policy = ToolPolicy(engine.session())
agent = Agent("openai-chat:gpt-4.1", tools=tools, capabilities=[policy])
result = agent.run_sync("Fetch example.com")
print(result.output, policy.session.state()["evidence"])
