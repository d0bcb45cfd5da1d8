"""The report of audit logs from Python: a log the module's own writer
wrote, read back by `Engine.audit_report` (with the engine's policy and
registry) and by `audit_report` (the log alone, from a file or from text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolpolicy import Engine, ToolPolicyError, audit_report

from conftest import SMALL, SMALL_POLICY


def written(tmp_path: Path) -> tuple[Engine, Path]:
    """Two chats: both search for jazz and find nothing, both end up using
    WebFetch (the second loads it by name after the empty search: a miss),
    the first is refused Secret."""
    log = tmp_path / "audit.jsonl"
    engine = Engine(SMALL_POLICY, SMALL, file="small.policy", audit=log)
    one = engine.session()
    one.plan()
    one.search("play some jazz")
    one.search("fetch a web page")
    assert one.call("WebFetch")["allowed"]
    one.record_result("WebFetch", "ok")
    assert not one.call("Secret")["allowed"]
    two = engine.session()
    two.plan()
    two.search("play some jazz")
    two.load(["WebFetch"])
    two.call("WebFetch")
    two.record_result("WebFetch", "ok")
    assert engine.flush_audit() == 0
    return engine, log


def test_the_engine_reads_the_log_with_its_policy_and_registry(tmp_path: Path) -> None:
    engine, log = written(tmp_path)
    r = engine.audit_report([log])
    assert (r["events"], r["sessions"], r["sessions_from_requests"], r["turns"]) == (9, 2, 0, 2)
    assert 0 < r["tokens"] < r["tokens_all_declared"]
    assert r["empty_searches"] == [["play some jazz", 2]]
    assert r["search_misses"] == [{"query": "play some jazz", "tool": "WebFetch", "missing_words": ["play", "jazz"]}]
    assert r["load_in_most_sessions"] == [{"tool": "WebFetch", "sessions": 2, "line": "NoDefer(WebFetch)", "checked": True}]
    assert r["never_called"] == [{"tool": "Read", "sessions": 2, "line": "Defer(Read)", "checked": True}]
    assert r["refusals"] == [{"cause": "hide", "rule": "Hide(Secret)", "at": "small.policy:2", "count": 1, "tools": ["Secret"]}]
    assert (r["latency"], r["bad_lines"]) == ([], 0)


def test_files_and_text_are_read_in_order_without_a_policy(tmp_path: Path) -> None:
    _, log = written(tmp_path)
    text = log.read_text()
    r = audit_report([str(log), {"text": text + "not an event\n", "name": "copy"}, {"text": "oops\n"}])
    assert r["events"] == 18
    # The same session names twice: the same two sessions.
    assert r["sessions"] == 2
    # Without a registry no words are named; without a policy no line is tried.
    assert r["search_misses"][0]["missing_words"] is None
    assert r["never_called"] == [{"tool": "Read", "sessions": 2, "line": "Defer(Read)"}]
    assert r["bad_lines"] == 2
    assert [(b["file"], b["line"]) for b in r["bad_lines_shown"]] == [("copy", 10), ("log 3", 1)]
    none = audit_report([log], since="2999-01-01")
    assert (none["events"], none["sessions"], none["never_called"]) == (0, 0, [])


def test_a_log_that_cannot_be_read_and_bad_arguments_raise(tmp_path: Path) -> None:
    _, log = written(tmp_path)
    with pytest.raises(ToolPolicyError, match=r"^cannot read the audit log `.*gone`: no such file"):
        audit_report([tmp_path / "gone"])
    with pytest.raises(TypeError, match=r"logs must be a list of paths"):
        audit_report(str(log))
    with pytest.raises(TypeError, match=r"logs\[0\] must be a path or a \{\"text\": ...\} dict, not int"):
        audit_report([3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"logs\[0\] has no \"text\""):
        audit_report([{"name": "x"}])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"since must be a string, not int"):
        audit_report([], since=1)  # type: ignore[arg-type]
