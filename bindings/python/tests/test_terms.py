"""Learned search terms through the Python module: the engine reads the
terms file the policy names (`terms = "search-terms.toml"`) from the
policy's folder, searches with it, reads it again on reload_policy, and
never searches a hidden tool's terms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from toolpolicy import Engine, ToolPolicyError

TOOLS: List[Dict[str, Any]] = [
    {"name": "notes", "description": "Store a short text note."},
    {"name": "weather", "description": "Current weather for a city."},
    {"name": "vault", "description": "Read a secret from the vault."},
]
POLICY = 'terms = "search-terms.toml"\nsearch tool_search\nDefer(*)\n'
TERMS = (
    '[notes]\nterms = ["jot memos down quickly"]\n'
    '[vault]\nterms = ["jot memos down quickly", "open the safe"]\n'
)


def found(engine: Engine, query: str) -> List[str]:
    return engine.session().search(query)["activated"]


def test_a_policy_file_reads_its_terms_beside_it(tmp_path: Path) -> None:
    (tmp_path / "p.policy").write_text(POLICY, encoding="utf-8")
    (tmp_path / "search-terms.toml").write_text(TERMS, encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    engine = Engine.from_files(tmp_path / "p.policy", tmp_path / "tools.json")
    # Both tools' terms say it; neither tool's own text does.
    assert found(engine, "jot down a memo") == ["notes", "vault"]
    # Without the terms file the same search finds nothing.
    assert found(Engine("search tool_search\nDefer(*)\n", TOOLS), "jot down a memo") == []


def test_a_hidden_tool_is_never_found_by_its_terms(tmp_path: Path) -> None:
    (tmp_path / "search-terms.toml").write_text(TERMS, encoding="utf-8")
    engine = Engine(POLICY + "Hide(vault)\n", TOOLS, dir=tmp_path)
    assert found(engine, "open the safe") == []
    assert found(engine, "jot memos down quickly") == ["notes"]


def test_reload_policy_reads_the_terms_again_and_a_bad_file_keeps_the_last_good(tmp_path: Path) -> None:
    terms = tmp_path / "search-terms.toml"
    terms.write_text(TERMS, encoding="utf-8")
    engine = Engine(POLICY, TOOLS, dir=tmp_path)
    assert found(engine, "is it raining outside") == []
    terms.write_text('[weather]\nterms = ["is it raining outside"]\n', encoding="utf-8")
    engine.reload_policy(POLICY)
    assert found(engine, "is it raining outside") == ["weather"]
    terms.write_text('[weather]\nterms = "not a list"\n', encoding="utf-8")
    with pytest.raises(ToolPolicyError) as info:
        engine.reload_policy(POLICY)
    assert info.value.diagnostics[0]["code"] == "PL016"
    assert found(engine, "is it raining outside") == ["weather"], "the last good terms hold"


def test_policy_text_that_names_a_terms_file_needs_a_folder() -> None:
    with pytest.raises(ToolPolicyError, match="terms"):
        Engine(POLICY, TOOLS)
