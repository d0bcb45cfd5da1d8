import asyncio

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from openai import AsyncOpenAI

from toolpolicy import Engine
from toolpolicy.adapters.openai_agents import PolicyTools, registry


@function_tool
def read_file(path: str) -> str:
    """Read a file. Returns its text."""
    with open(path, encoding="utf-8") as f:
        return f.read()


@function_tool
def web_fetch(url: str) -> str:
    """Fetch a web page. Returns markdown."""
    return f"# the page at {url}"


tools = [read_file, web_fetch]
engine = Engine("Defer(web_fetch)\n", registry(tools))
policy = PolicyTools(engine.session(), tools)
model = OpenAIChatCompletionsModel(model="gpt-4.1", openai_client=AsyncOpenAI())
agent = Agent(name="helper", instructions="Help.", tools=policy.tools, model=model)
result = asyncio.run(Runner.run(agent, "Fetch example.com", run_config=policy.run_config()))
print(result.final_output, policy.session.state()["evidence"])
