"""Every public function and method, given an argument of the wrong type or
a value no call accepts, raises as Python's own functions do: `TypeError`
for a wrong type, `ValueError` for a wrong value, never a `ToolPolicyError`
(which says the engine refused an input: a policy error, an unknown mode).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import pytest

import toolpolicy
from toolpolicy import Engine, Session, ToolPolicyError

from conftest import POLICY_PATH, REGISTRY_PATH, SMALL, SMALL_POLICY

Call = Callable[[], Any]


def engine() -> Engine:
    return Engine(SMALL_POLICY, SMALL)


def chat() -> Session:
    return engine().session()


# (what is called, the exception, the message it starts with)
WRONG_TYPES: list[tuple[str, Call, str]] = [
    ("Engine(policy_text)", lambda: Engine(42, []), "policy_text must be a string, not int"),  # type: ignore[arg-type]
    ("Engine(tools)", lambda: Engine("", 5), "tools must be a list, a dict or JSON text, not int"),  # type: ignore[arg-type]
    ("Engine(tools) item", lambda: Engine("", [{"name": "a", "x": object()}]), "tools cannot be written as JSON"),
    ("Engine(file=)", lambda: Engine("", [], file=3), "file must be a string, not int"),  # type: ignore[arg-type]
    ("Engine(skills=)", lambda: Engine("", [], skills=3), "skills must be a list, a dict or JSON text, not int"),  # type: ignore[arg-type]
    ("Engine(dir=)", lambda: Engine("", [], dir=3), "dir must be a string or a path, not int"),  # type: ignore[arg-type]
    ("Engine(audit=)", lambda: Engine("", [], audit=3), "audit must be a string or a path, not int"),  # type: ignore[arg-type]
    ("Engine(audit_no_queries=)", lambda: Engine("", [], audit_no_queries="yes"), "audit_no_queries must be a bool, not str"),  # type: ignore[arg-type]
    ("Engine.from_files(policy_path)", lambda: Engine.from_files(1, REGISTRY_PATH), "policy_path must be a string or a path, not int"),  # type: ignore[arg-type]
    ("Engine.from_files(registry_path)", lambda: Engine.from_files(POLICY_PATH, None), "registry_path must be a string or a path, not None"),  # type: ignore[arg-type]
    ("Engine.from_files(skills_path)", lambda: Engine.from_files(POLICY_PATH, REGISTRY_PATH, 1), "skills_path must be a string or a path, not int"),  # type: ignore[arg-type]
    ("Engine.from_files(audit=)", lambda: Engine.from_files(POLICY_PATH, REGISTRY_PATH, audit=1.5), "audit must be a string or a path, not float"),  # type: ignore[arg-type]
    ("flush_audit(within)", lambda: engine().flush_audit("soon"), ""),  # type: ignore[arg-type]
    ("session(context)", lambda: engine().session(42), "context must be a dict, not int"),  # type: ignore[arg-type]
    ("session(mode=)", lambda: engine().session(mode=42), ""),  # type: ignore[call-arg]
    ("session(context['mode'])", lambda: engine().session({"mode": 42}), 'context["mode"] must be a string, not int'),  # type: ignore[typeddict-item]
    ("session(context['bot'])", lambda: engine().session({"bot": ["b"]}), 'context["bot"] must be a string, not list'),  # type: ignore[typeddict-item]
    ("session(context['flags'])", lambda: engine().session({"flags": "x"}), 'context["flags"] must be a list of strings, not str'),  # type: ignore[typeddict-item]
    ("session(context['flags'][0])", lambda: engine().session({"flags": [1]}), 'context["flags"][0] must be a string, not int'),  # type: ignore[list-item]
    ("session(context['grants'])", lambda: engine().session({"grants": 1}), 'context["grants"] must be a list of strings, not int'),  # type: ignore[typeddict-item]
    ("session(context key)", lambda: engine().session({1: "x"}), "a key of context must be a string, not int"),  # type: ignore[dict-item]
    ("resume(state)", lambda: engine().resume(42), "state must be a list, a dict or JSON text, not int"),  # type: ignore[arg-type]
    ("explain(item)", lambda: engine().explain(42), "item must be a string, not int"),  # type: ignore[arg-type]
    ("explain(context)", lambda: engine().explain("Read", "agent"), "context must be a dict, not str"),  # type: ignore[arg-type]
    ("reload_policy(text)", lambda: engine().reload_policy(b"Defer(x)\n"), "text must be a string, not bytes"),  # type: ignore[arg-type]
    ("reload_policy(file)", lambda: engine().reload_policy("", 3), "file must be a string, not int"),  # type: ignore[arg-type]
    ("reload_registry(tools)", lambda: engine().reload_registry(42), "tools must be a list, a dict or JSON text, not int"),  # type: ignore[arg-type]
    ("reload_skills(skills)", lambda: engine().reload_skills(42), "skills must be a list, a dict or JSON text, not int"),  # type: ignore[arg-type]
    ("provider_tools(provider)", lambda: chat().provider_tools(42), "provider must be a string, not int"),  # type: ignore[arg-type]
    ("tool_list(call_through=)", lambda: chat().tool_list(call_through=3), "call_through must be a bool or a tool name, not int"),  # type: ignore[arg-type]
    ("search(query)", lambda: chat().search(42), "query must be a string, not int"),  # type: ignore[arg-type]
    ("search(names)", lambda: chat().search("q", "Read"), "names must be a list of strings, not str"),  # type: ignore[arg-type]
    ("search(status=)", lambda: chat().search("q", status=1), "status must be a string, not int"),  # type: ignore[arg-type]
    ("search(call_through=)", lambda: chat().search("q", call_through=3), "call_through must be a bool or a tool name, not int"),  # type: ignore[arg-type]
    ("load(names)", lambda: chat().load("Read"), "names must be a list of strings, not str"),  # type: ignore[arg-type]
    ("load(names[1])", lambda: chat().load(["Read", 3]), "names[1] must be a string, not int"),  # type: ignore[list-item]
    ("load(status=)", lambda: chat().load([], status=[]), "status must be a string, not list"),  # type: ignore[arg-type]
    ("call(name)", lambda: chat().call(42), "name must be a string, not int"),  # type: ignore[arg-type]
    ("record_result(name)", lambda: chat().record_result(42), "name must be a string, not int"),  # type: ignore[arg-type]
    ("record_result(status)", lambda: chat().record_result("Read", 3), "status must be a string, not int"),  # type: ignore[arg-type]
    ("set_mode(mode)", lambda: chat().set_mode(42), "mode must be a string, not int"),  # type: ignore[arg-type]
    ("set_context(context)", lambda: chat().set_context(None), "context must be a dict, not None"),  # type: ignore[arg-type]
    ("set_context(context) int", lambda: chat().set_context(42), "context must be a dict, not int"),  # type: ignore[arg-type]
    ("resolve_skill(requested)", lambda: chat().resolve_skill(42), "requested must be a string, not int"),  # type: ignore[arg-type]
    ("lock_text(tools)", lambda: toolpolicy.lock_text(42), "tools must be a list, a dict or JSON text, not int"),  # type: ignore[arg-type]
    ("read_input(path)", lambda: toolpolicy.read_input(1), "path must be a string or a path, not int"),  # type: ignore[arg-type]
]

WRONG_VALUES: list[tuple[str, Call, str]] = [
    ("Engine(policy_text) lone surrogate", lambda: Engine("\ud800", []), "policy_text is not valid text"),
    ("Engine(tools) NaN", lambda: Engine("", [{"name": "a", "parameters": float("nan")}]), "tools cannot be written as JSON"),
    ("Engine(dir='')", lambda: Engine("", [], dir=""), "`dir` names no folder"),
    ("flush_audit(within) NaN", lambda: engine().flush_audit(float("nan")), "within must be a number of seconds, not NaN"),
    ("flush_audit(within) negative", lambda: engine().flush_audit(-1), "within must be a number of seconds, not -1"),
    ("session(context) unknown key", lambda: engine().session({"mdoe": "x"}), "unknown key `mdoe` in context (did you mean `mode`)"),  # type: ignore[typeddict-unknown-key]
    ("resume(state) not a state", lambda: engine().resume({"evidence": 1}), "bad session state"),
    ("resume(state) not JSON", lambda: engine().resume("{not json"), "bad session state"),
    ("explain(item) empty", lambda: engine().explain("skill:"), "`skill:` names nothing"),
    ("provider_tools(provider) unknown", lambda: chat().provider_tools("opnai"), "unknown provider `opnai` (did you mean `openai`)"),  # type: ignore[arg-type]
    ("search(status=) unknown", lambda: chat().search("q", status="okay"), "unknown status `okay` in status (did you mean `ok`)"),  # type: ignore[arg-type]
    ("load(status=) unknown", lambda: chat().load([], status="fine"), "unknown status `fine` in status"),  # type: ignore[arg-type]
    ("record_result(status) unknown", lambda: chat().record_result("Read", "okay"), "unknown status `okay` in status (did you mean `ok`)"),  # type: ignore[arg-type]
    ("set_context(context) unknown key", lambda: chat().set_context({"mdoe": "x"}), "unknown key `mdoe` in context (did you mean `mode`)"),  # type: ignore[typeddict-unknown-key]
    ("read_input(path) lone surrogate", lambda: toolpolicy.read_input("\ud800"), "path is not valid text"),
]


@pytest.mark.parametrize("what,call,message", WRONG_TYPES, ids=[c[0] for c in WRONG_TYPES])
def test_a_wrong_type_is_a_type_error(what: str, call: Call, message: str) -> None:
    with pytest.raises(TypeError) as info:
        call()
    assert not isinstance(info.value, ToolPolicyError), what
    assert str(info.value).startswith(message), f"{what}: {info.value}"


@pytest.mark.parametrize("what,call,message", WRONG_VALUES, ids=[c[0] for c in WRONG_VALUES])
def test_a_wrong_value_is_a_value_error(what: str, call: Call, message: str) -> None:
    with pytest.raises(ValueError) as info:
        call()
    assert not isinstance(info.value, ToolPolicyError), what
    assert str(info.value).startswith(message), f"{what}: {info.value}"


def test_what_the_engine_refuses_stays_a_tool_policy_error_with_diagnostics(tmp_path: Path) -> None:
    modes = Engine.from_files(POLICY_PATH, REGISTRY_PATH)
    refused: list[tuple[str, Call, str]] = [
        ("a policy error", lambda: Engine("Defr(x)\n", []), r"error\[PL004\]"),
        ("a registry that is not JSON", lambda: Engine("", "{not json"), "not valid JSON"),
        ("a registry entry", lambda: Engine("", [{"name": "a"}, {"name": "a"}]), r"tools\[1\]\.name"),
        ("a file that cannot be read", lambda: Engine.from_files(POLICY_PATH, str(tmp_path / "none.json")), "cannot read"),
        ("an unknown mode", lambda: modes.session({"mode": "agnet"}), "agnet"),
        ("no mode where the policy has modes", lambda: modes.session(), "no mode"),
        ("a grant that is a slip", lambda: modes.session({"mode": "agent", "grants": [""]}), "grant is empty"),
        ("an unknown mode to switch to", lambda: modes.session({"mode": "agent"}).set_mode("nope"), "nope"),
        ("explain without a mode", lambda: modes.explain("Read"), "no mode"),
        ("a reload that does not load", lambda: modes.reload_policy("Defer(\n"), "PL001"),
    ]
    for what, call, pattern in refused:
        with pytest.raises(ToolPolicyError) as info:
            call()
        e = info.value
        assert not isinstance(e, (TypeError, ValueError)), what
        assert isinstance(e.diagnostics, list) and e.diagnostics, what
        assert re.search(pattern, str(e)), f"{what}: {e}"
