"""The module's contract from Python: every call of the API, the shapes it
returns, and errors that raise with diagnostics instead of crashing."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest

import toolpolicy
from toolpolicy import Engine, ToolPolicyError

from conftest import POLICY_PATH, REGISTRY_PATH, SMALL, SMALL_POLICY


def raises(f: Callable[[], Any], pattern: str | None = None) -> ToolPolicyError:
    """Calls `f`, which must raise a ToolPolicyError with diagnostics."""
    with pytest.raises(ToolPolicyError) as info:
        f()
    e = info.value
    assert isinstance(e.diagnostics, list) and e.diagnostics
    if pattern:
        assert re.search(pattern, str(e)), str(e)
    return e


def names(tools: Any) -> list[str]:
    return [t["name"] for t in tools]


def test_every_registry_shape_gives_the_same_plan() -> None:
    shapes: list[Any] = [
        SMALL,
        tuple(SMALL),
        json.dumps(SMALL),
        {"tools": SMALL},
        [{"type": "function", "function": {k: t[k] for k in ("name", "description", "parameters") if k in t}} for t in SMALL],
        [{"name": t["name"], "description": t["description"], "inputSchema": t.get("parameters", {})} for t in SMALL],
    ]
    for tools in shapes:
        assert names(Engine(SMALL_POLICY, tools).session().plan()["declared"]) == ["Read"]


def test_a_plan_holds_the_contract_fields() -> None:
    chat = Engine(SMALL_POLICY, SMALL).session()
    plan = chat.plan()
    assert plan["deferred"] == ("WebFetch",)
    assert plan["hidden"] == ("Secret",)
    assert plan["catalog"] == "# On-demand tools\n- WebFetch: Fetch a web page."
    assert plan["search_tool"] == "tool_search"
    t = plan["tokens"]
    assert sorted(t) == ["all_declared", "catalog", "declared", "skills", "total"]
    assert t["total"] == t["declared"] + t["catalog"] + t["skills"]
    assert plan["declared"][0] == {
        "name": "Read",
        "description": "Read a file. Returns its text.",
        "parameters": {"type": "object", "properties": {}},
    }
    j = json.loads(chat.plan_json())
    assert tuple(j["deferred"]) == plan["deferred"]
    assert j["tokens"]["all_declared"] == t["all_declared"]
    assert j["declared"] == list(plan["declared"])


def test_search_activates_the_next_plan_declares_evidence_survives_a_resume() -> None:
    engine = Engine.from_files(POLICY_PATH, Path(REGISTRY_PATH))
    chat = engine.session({"mode": "agent"})
    first = names(chat.plan()["declared"])
    assert first[:2] == ["new_context", "ToolSearch"]
    found = chat.search("open a page in the browser")
    assert "BrowserPreview" in found["activated"], found
    assert re.match(r"^Loaded \d tools?, callable from your next step:", found["text"])
    assert isinstance(found["remaining_deferred"], int)
    after = names(chat.plan()["declared"])
    assert after[: len(first)] == first, "activations only append"
    assert after[len(first) :] == found["activated"]

    loaded = chat.load(["Glob", "NoSuchTool"])
    assert loaded["activated"] == ["Glob"]
    assert loaded["unavailable"] == ["NoSuchTool"]

    call = chat.call("Glob")
    assert call == {"allowed": True, "declared_next_step": False, "text": None}
    chat.record_result("Glob", "ok")
    state = chat.state()
    assert state["context"]["mode"] == "agent"
    assert "Glob" in state["evidence"]
    resumed = engine.resume(json.loads(json.dumps(state)))
    assert "Glob" in names(resumed.plan()["declared"])
    assert "Glob" in engine.resume(json.dumps(state)).activated()


def test_per_prompt_drops_what_has_no_evidence_and_a_direct_call_declares() -> None:
    chat = Engine.from_files(POLICY_PATH, REGISTRY_PATH).session({"mode": "agent"})
    miss = chat.call("WebSearch")
    assert miss["allowed"] is False and miss["declared_next_step"] is True
    assert miss["text"] and "not found. It has been loaded now" in miss["text"]
    assert "WebSearch" in names(chat.plan()["declared"])
    chat.load(["TodoWrite"], status="error")
    assert "TodoWrite" not in chat.activated(), "a failed load activates nothing"
    chat.prompt()
    assert chat.activated() == [], "nothing had evidence"
    chat.load(["TodoWrite"])
    chat.prompt()
    assert chat.activated() == ["TodoWrite"]
    assert chat.compact() == 1
    chat.prompt()
    assert chat.activated() == []
    chat.restart()


def test_hidden_tools_are_refused_and_never_shown() -> None:
    chat = Engine(SMALL_POLICY, SMALL).session()
    assert chat.call("Secret") == {"allowed": False, "declared_next_step": False, "text": "Tool `Secret` not found."}
    assert chat.search("", ["Secret"])["unavailable"] == ["Secret"]
    assert "Secret" not in names(chat.tool_list())


def test_the_engines_own_tools() -> None:
    chat = Engine(SMALL_POLICY, SMALL).session()
    assert names(chat.tool_list()) == ["tool_search", "Read"]
    through = chat.tool_list(call_through=True)
    assert names(through) == ["tool_search", "call_tool", "Read"]
    assert "- WebFetch: Fetch a web page." in through[0]["description"]
    r = chat.search("fetch a web page", [], call_through="call_tool")
    assert "parameters: {" in r["text"]


def test_provider_shapes_keep_extra_fields_and_an_unknown_provider_raises() -> None:
    chat = Engine("", SMALL).session()
    openai = chat.provider_tools("openai")
    assert openai[1]["type"] == "function"
    assert openai[1]["function"]["cache_control"] == {"type": "ephemeral"}
    assert "input_schema" in chat.provider_tools("anthropic")[1]
    with pytest.raises(ValueError, match=r"^unknown provider `opnai` \(did you mean `openai`\)$"):
        chat.provider_tools("opnai")  # type: ignore[arg-type]
    none = Engine("Defer(*)\n", SMALL).session()
    marked = [(t["name"], t.get("defer_loading")) for t in none.provider_tools("anthropic-deferred")]
    assert marked == [("Read", None), ("WebFetch", True), ("Secret", True)]


def test_explain_gives_the_contract() -> None:
    engine = Engine.from_files(POLICY_PATH, REGISTRY_PATH)
    e = engine.explain("WebFetch", {"mode": "agent"})
    assert e["item"] == "WebFetch"
    assert e["exposure"] == "deferred"
    assert e["cause"]["kind"] == "defer"
    assert e["cause"]["rule"]["line"] == 19
    assert e["candidates"][0]["selector_line"] > 0
    raises(lambda: engine.explain("WebFetch"), "no mode")
    with pytest.raises(ValueError, match="names nothing"):
        engine.explain("skill:")


def test_a_policy_that_does_not_load_raises_every_diagnostic_located() -> None:
    e = raises(lambda: Engine("Defr(x)\nDefer(\n", SMALL, file="mine.policy"), r"^mine\.policy:1:1: error\[PL004\]")
    assert [d["code"] for d in e.diagnostics] == ["PL004", "PL001"]
    d = e.diagnostics[0]
    assert (d["file"], d["line"], d["column"], d["severity"]) == ("mine.policy", 1, 1, "error")
    assert d.get("help") == "did you mean `Defer`"


def test_registry_errors_name_the_entry() -> None:
    e = raises(lambda: Engine("", [{"name": "a"}, {"name": "a"}]), r"tools\[1\]\.name")
    assert e.diagnostics[0].get("path") == "tools[1].name"
    raises(lambda: Engine("", "{not json"), "not valid JSON")
    raises(lambda: Engine.from_files(POLICY_PATH, "/nonexistent/registry.json"), "cannot read")
    with pytest.raises(ValueError, match="cannot be written as JSON"):
        Engine("", [{"name": "a", "parameters": float("nan")}])
    with pytest.raises(TypeError, match="cannot be written as JSON"):
        Engine("", [{"name": "a", "x": object()}])


def test_reloads_raise_and_keep_the_last_good_engine() -> None:
    engine = Engine(SMALL_POLICY, SMALL)
    chat = engine.session()
    chat.search("fetch a web page")
    raises(lambda: engine.reload_policy("Defer(\n"), "PL001")
    raises(lambda: engine.reload_registry([{"description": "no name"}]), r"tools\[0\]\.name")
    raises(lambda: engine.reload_skills("[1]"), r"skills\[0\]")
    assert chat.plan()["deferred"] == ()
    assert chat.plan()["activated"] == ("WebFetch",)
    engine.reload_policy("Hide(WebFetch)\n")
    assert chat.plan()["hidden"] == ("WebFetch",)
    engine.reload_registry(SMALL[:1])
    assert engine.tool_names == ["Read"]
    engine.reload_skills([{"name": "review", "description": "Review code."}])
    assert chat.plan()["skills"] == ("review",)
    skill = chat.resolve_skill("review")
    assert skill is not None and skill["name"] == "review"
    assert chat.resolve_skill("nope") is None


def test_a_reload_names_the_policy_file() -> None:
    engine = Engine(SMALL_POLICY, SMALL, file="mine.policy")
    raises(lambda: engine.reload_policy("Defer(\n"), r"^mine\.policy:")
    raises(lambda: engine.reload_policy("Defer(\n", "other.policy"), r"^other\.policy:")


def test_modes_and_switches() -> None:
    engine = Engine.from_files(POLICY_PATH, REGISTRY_PATH)
    assert engine.modes == ["agent", "chat"]
    raises(lambda: engine.session(), "no mode")
    e = raises(lambda: engine.session({"mode": "agnet"}))
    assert "agent" in e.diagnostics[0].get("help", "")
    chat = engine.session({"mode": "agent"})
    raises(lambda: chat.set_mode("nope"))
    assert chat.state()["context"]["mode"] == "agent"
    chat.set_mode("chat")
    assert "Glob" in names(chat.plan()["declared"])
    chat.set_context({"mode": "agent", "flags": ["x"]})
    assert chat.state()["context"]["flags"] == ["x"]


def test_a_grant_that_can_only_be_a_slip_raises_and_the_session_keeps_its_context() -> None:
    engine = Engine.from_files(POLICY_PATH, REGISTRY_PATH)
    raises(lambda: engine.session({"mode": "agent", "grants": ["Read", "skill:"]}), "`skill:` has no pattern")
    raises(lambda: engine.session({"mode": "agent", "grants": [""]}), "grant is empty")
    chat = engine.session({"mode": "agent", "grants": ["Read"]})
    raises(lambda: chat.set_context({"mode": "agent", "grants": [" Read"]}), "white space at an end")
    assert chat.state()["context"]["grants"] == ["Read"]


def test_bad_arguments_read_in_pythons_terms() -> None:
    engine = Engine(SMALL_POLICY, SMALL)
    chat = engine.session()
    # A wrong type is a TypeError and a wrong value a ValueError, as for
    # Python's own functions (every argument: test_arguments.py).
    with pytest.raises(ValueError, match=r"^unknown key `mdoe` in context \(did you mean `mode`\)$"):
        engine.session({"mdoe": "x"})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(TypeError, match="^names must be a list of strings, not str$"):
        chat.load("Read")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^names\[1\] must be a string, not int$"):
        chat.load(["Read", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r'^context\["flags"\] must be a list of strings, not str$'):
        engine.session({"flags": "x"})  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="unknown status `okay`"):
        chat.record_result("Read", "okay")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="call_through must be a bool or a tool name, not int"):
        chat.search("q", call_through=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tools must be a list, a dict or JSON text, not int"):
        Engine("", 5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bad session state"):
        engine.resume({"evidence": 1})


def test_bad_input_of_every_kind_raises_and_never_crashes() -> None:
    engine = Engine(SMALL_POLICY, SMALL)
    chat = engine.session()
    values: list[Any] = [None, 0, 1.5, -1, float("nan"), True, "", "x", [], [1], {}, {"a": 1}, lambda: 1, b"x", object(), "\ud800", 10**40]
    calls: list[Callable[[Any], Any]] = [
        lambda v: Engine(v, SMALL),
        lambda v: Engine("", v),
        lambda v: Engine("", SMALL, file=v),
        lambda v: Engine("", SMALL, skills=v),
        lambda v: Engine.from_files(v, REGISTRY_PATH),
        lambda v: engine.session(v),
        lambda v: engine.resume(v),
        lambda v: engine.explain(v),
        lambda v: engine.explain("Read", v),
        lambda v: engine.reload_policy(v),
        lambda v: engine.reload_registry(v),
        lambda v: engine.reload_skills(v),
        lambda v: chat.provider_tools(v),
        lambda v: chat.tool_list(call_through=v),
        lambda v: chat.search(v),
        lambda v: chat.search("q", v),
        lambda v: chat.search("q", [], status=v),
        lambda v: chat.load(v),
        lambda v: chat.call(v),
        lambda v: chat.record_result("Read", v),
        lambda v: chat.set_mode(v),
        lambda v: chat.set_context(v),
        lambda v: chat.resolve_skill(v),
        lambda v: toolpolicy.read_input(v),
    ]
    raised = 0
    for call in calls:
        for v in values:
            try:
                call(v)
            # What the engine refuses, a wrong type or a wrong value: each
            # named in Python's terms, never Rust's.
            except (ToolPolicyError, TypeError, ValueError) as e:
                assert not re.search(r"rust|serde|panicked|pyo3|PyAny|PyString", str(e), re.I), str(e)
                raised += 1
    assert raised > len(calls) * 4, f"only {raised} raised"
    assert isinstance(engine.session().plan()["declared"], tuple)


def test_a_panic_inside_comes_out_as_a_toolpolicy_error() -> None:
    raises(toolpolicy._native._panic_for_tests, "^the engine failed inside: a panic on purpose")
    assert Engine(SMALL_POLICY, SMALL).session().plan()["deferred"] == ("WebFetch",)


def test_an_unchanged_plan_shares_its_parts_and_a_change_makes_new_ones() -> None:
    engine = Engine(SMALL_POLICY, SMALL)
    chat = engine.session()
    first = chat.plan()
    again = chat.plan()
    assert again is not first, "each call gets its own dict"
    assert again["declared"] is first["declared"], "an unchanged plan's tuples are the same"
    first["tokens"]["total"] = -1
    assert chat.plan()["tokens"]["total"] > 0, "a caller's change does not reach the next plan"
    chat.search("fetch a web page")
    second = chat.plan()
    assert second["activated"] == ("WebFetch",)
    assert first["activated"] == (), "an earlier plan does not change"
    assert second["declared"][0] is first["declared"][0], "definitions are shared while the snapshot lasts"
    other = engine.session()
    assert other.plan()["declared"][0] is first["declared"][0], "across sessions too"
    assert chat.tool_list()[1] is first["declared"][0]
    assert chat.tool_list() is not chat.tool_list()


def test_a_reload_makes_new_definitions() -> None:
    engine = Engine(SMALL_POLICY, SMALL)
    chat = engine.session()
    before = chat.plan()["declared"][0]
    openai = chat.provider_tools("openai")
    changed = [dict(t, description="Read a file, changed.") if t["name"] == "Read" else t for t in SMALL]
    engine.reload_registry(changed)
    after = chat.plan()["declared"][0]
    assert after["description"] == "Read a file, changed."
    assert before["description"] == "Read a file. Returns its text."
    assert chat.provider_tools("openai")[0]["function"]["description"] == "Read a file, changed."
    assert openai[0]["function"]["description"] == "Read a file. Returns its text."
    kept = chat.plan()["declared"][0]
    engine.reload_policy(SMALL_POLICY)
    assert chat.plan()["declared"][0] is not kept
    assert chat.plan()["declared"][0] == kept


def test_many_distinct_own_tools_are_never_mixed_up() -> None:
    chat = Engine(SMALL_POLICY, SMALL).session()
    for _ in range(2):
        for k in range(80):
            tools = chat.tool_list(call_through=f"call_{k}")
            assert names(tools) == ["tool_search", f"call_{k}", "Read"]


def test_a_search_result_is_the_contract_in_its_order() -> None:
    chat = Engine(SMALL_POLICY, SMALL).session()
    r = chat.search("fetch a web page")
    assert list(r) == ["activated", "already_active", "unavailable", "matches", "over_limit", "remaining_deferred", "status", "text"]
    assert r["activated"] == ["WebFetch"] and r["status"] == "ok"
    l = chat.load(["WebFetch", "Nope"])
    assert (l["activated"], l["already_active"], l["unavailable"], l["remaining_deferred"]) == ([], ["WebFetch"], ["Nope"], 0)


def test_plan_json_is_the_same_text_while_nothing_changes() -> None:
    engine = Engine(SMALL_POLICY, SMALL)
    chat = engine.session()
    first = chat.plan_json()
    assert chat.plan_json() is first
    chat.search("fetch a web page")
    assert names(json.loads(chat.plan_json())["declared"]) == ["Read", "WebFetch"]
    engine.reload_registry([dict(t, description="Read, changed.") if t["name"] == "Read" else t for t in SMALL])
    assert json.loads(chat.plan_json())["declared"][0]["description"] == "Read, changed."


def test_numbers_keep_their_value() -> None:
    tools = '[{"name": "a", "parameters": {"type": "object", "properties": {}, "x": 123456789012345678901234567890, "y": 1.5, "z": -3}}]'
    p = Engine("", tools).session().plan()["declared"][0]["parameters"]
    assert (p["x"], p["y"], p["z"]) == (123456789012345678901234567890, 1.5, -3)


def test_read_input_reads_as_the_engine_does(tmp_path: Path) -> None:
    (tmp_path / "bom.policy").write_bytes("\ufeffDefer(*)\n".encode())
    assert toolpolicy.read_input(tmp_path / "bom.policy") == "Defer(*)\n"
    (tmp_path / "latin1.policy").write_bytes(b"D\xe9\n")
    raises(lambda: toolpolicy.read_input(str(tmp_path / "latin1.policy")), r"^`.*latin1\.policy` is not UTF-8$")
    raises(lambda: toolpolicy.read_input(str(tmp_path / "none")), r"^cannot read `.*none`: no such file or directory")
    with pytest.raises(TypeError, match="^path must be a string or a path, not int$"):
        toolpolicy.read_input(1)  # type: ignore[arg-type]


def test_definitions_copied_by_a_caller_are_independent() -> None:
    chat = Engine(SMALL_POLICY, SMALL).session()
    mine = copy.deepcopy(chat.plan()["declared"][0])
    mine["parameters"]["properties"]["x"] = {}
    assert chat.plan()["declared"][0]["parameters"]["properties"] == {}
