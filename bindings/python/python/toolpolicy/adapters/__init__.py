"""Thin adapters that fit a toolpolicy `Session` to agent frameworks' own
hooks, each in its own module so that importing one never imports another
framework:

- `toolpolicy.adapters.openai_agents`: the OpenAI Agents SDK;
- `toolpolicy.adapters.pydantic_ai`: pydantic-ai's `prepare_tools`;
- `toolpolicy.adapters.langchain`: LangChain agent middleware.
"""
