import asyncio

from agents import Agent, FunctionTool, OpenAIChatCompletionsModel, Runner
from openai import AsyncOpenAI

from toolpolicy import Engine
from toolpolicy.adapters.openai_agents import PolicyTools, registry

CITIES = ["Lima", "Oslo", "Paris", "Tokyo", "Nairobi", "Quito", "Hanoi", "Dakar", "Perth", "Bogota",
          "Cairo", "Delhi", "Lagos", "Seoul", "Sofia", "Tunis", "Vienna", "Warsaw", "Zagreb", "Riga"]


def forecast_tool(city: str) -> FunctionTool:
    """One tool per city. A function builds each, so that every tool keeps
    its own `city` (a `def` in the loop body would see the last one)."""

    async def run(ctx: object, arguments: str) -> str:
        return f"{city}: sunny, 21 degrees"

    return FunctionTool(
        name=f"forecast_{city.lower()}",
        description=f"Today's weather forecast for {city}.",
        params_json_schema={"type": "object", "properties": {}, "additionalProperties": False},
        on_invoke_tool=run,
    )


tools = [forecast_tool(city) for city in CITIES]
engine = Engine("search tool_search\nDefer(*)\n", registry(tools))
policy = PolicyTools(engine.session(), tools)
model = OpenAIChatCompletionsModel(model="gpt-4.1", openai_client=AsyncOpenAI())
agent = Agent(name="helper", instructions="Help.", tools=policy.tools, model=model)
result = asyncio.run(Runner.run(agent, "the weather forecast for Lima", run_config=policy.run_config()))
print(result.final_output, policy.session.state()["evidence"])
