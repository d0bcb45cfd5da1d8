"""The toolpolicy engine in process: which tools a model sees, decided by a
policy, for Python agent runtimes.

Build one `Engine` per policy (it is shared by every chat and every thread)
and one `Session` per chat; each turn, declare `session.plan()`'s tools (or
`session.tool_list()`, which has the engine's own search tool in place),
answer the search tool with `session.search()`, check each call the model
makes with `session.call()` and report its result with
`session.record_result()`. Adapters for agent frameworks are in
`toolpolicy.adapters`.
"""

from ._native import Engine, Session, ToolPolicyError, audit_report, lock_text, read_input

__all__ = ["Engine", "Session", "ToolPolicyError", "audit_report", "lock_text", "read_input"]
