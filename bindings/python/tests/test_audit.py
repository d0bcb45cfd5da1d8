"""The audit log from Python: `audit=` names the file, a chat writes the
events a host's calls make, and a log that cannot be opened is a warning,
never an exception."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from toolpolicy import Engine

from conftest import POLICY_PATH, REGISTRY_PATH, SMALL, SMALL_POLICY


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def test_a_chat_writes_its_events(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    engine = Engine(SMALL_POLICY, SMALL, file="small.policy", audit=log)
    assert engine.auditing
    chat = engine.session({"flags": ["ci"]})
    chat.prompt()
    chat.plan()
    chat.search("fetch a web page")
    chat.search("play some jazz")
    assert chat.call("WebFetch")["allowed"]
    chat.record_result("WebFetch", "ok")
    assert not chat.call("Secret")["allowed"]
    chat.load(["Read", "Nope"])
    chat.set_mode(None)
    chat.restart()
    assert engine.flush_audit() == 0

    got = events(log)
    assert [e["event"] for e in got] == ["prompt", "list", "search", "search", "call", "call", "load", "mode", "restart"]
    session = got[0]["session"]
    assert re.fullmatch(r"[0-9a-f]+-\d+", session)
    for e in got:
        assert e["version"] == 1
        assert e["session"] == session
        assert e["context"] == {"mode": None, "bot": None, "flags": ["ci"]}
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e["ts"])
    _, listed, found, empty, allowed, refused, load, _, _ = got
    assert listed["names"] == ["Read"]
    assert listed["tokens"] < listed["all_declared"]
    assert (found["query"], found["activated"], found["empty"]) == ("fetch a web page", ["WebFetch"], False)
    assert (empty["query"], empty["empty"]) == ("play some jazz", True)
    assert (allowed["tool"], allowed["outcome"], allowed["status"]) == ("WebFetch", "allowed", "ok")
    assert allowed["cause"] == {"kind": "defer", "rule": "Defer(WebFetch)", "file": "small.policy", "line": 1}
    assert (refused["tool"], refused["outcome"], refused["cause"]["kind"]) == ("Secret", "not_found", "hide")
    assert load["unavailable"] == ["Nope"]


def test_no_queries_and_from_files(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    engine = Engine.from_files(POLICY_PATH, REGISTRY_PATH, audit=str(log), audit_no_queries=True)
    chat = engine.session({"mode": "agent"})
    found = chat.search("open a page in the browser")
    assert found["activated"]
    engine.flush_audit(2.0)
    (search,) = events(log)
    assert search["event"] == "search"
    assert "query" not in search
    assert search["activated"] == found["activated"]


def test_two_engines_append_to_one_log(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    engines = [Engine(SMALL_POLICY, SMALL, audit=log), Engine(SMALL_POLICY, SMALL, audit=log)]
    chats = [e.session() for e in engines]
    for i in range(200):
        for c in chats:
            c.search(f"query {i}")
    for e in engines:
        assert e.flush_audit() == 0
    got = events(log)
    assert len(got) == 400
    assert len({e["session"] for e in got}) == 2


def test_a_log_that_cannot_be_opened_is_a_warning(tmp_path: Path) -> None:
    log = tmp_path / "missing" / "audit.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine = Engine("Defer(B)", [{"name": "A", "description": "a"}, {"name": "B", "description": "b"}], audit=log)
    assert not engine.auditing
    assert [w.category for w in caught] == [RuntimeWarning]
    message = str(caught[0].message)
    assert re.fullmatch(r"cannot open the audit log `.*missing/audit\.jsonl`: no such file or directory.*; going on without one", message), message
    assert caught[0].filename == __file__
    assert [t["name"] for t in engine.session().plan()["declared"]] == ["A"]
    assert engine.flush_audit() == 0
    assert not log.exists()


def test_bad_audit_options_raise() -> None:
    with pytest.raises(TypeError, match=r"audit must be a string or a path, not int"):
        Engine("", [], audit=3)
    with pytest.raises(TypeError, match=r"audit_no_queries must be a bool, not str"):
        Engine("", [], audit_no_queries="yes")
    with pytest.raises(ValueError, match=r"within must be a number of seconds"):
        Engine("", []).flush_audit(float("nan"))


def test_queued_events_are_written_at_exit(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    script = f"""
from toolpolicy import Engine
engine = Engine('Defer(B)', [{{'name': 'A', 'description': 'a'}}, {{'name': 'B', 'description': 'b'}}], audit={str(log)!r})
chat = engine.session()
for i in range(1000):
    chat.search('b number %d' % i)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    got = events(log)
    assert len(got) == 1000
    assert got[-1]["query"] == "b number 999"


def test_a_fifo_nobody_reads_is_a_warning_not_a_wait(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = tmp_path / "audit.fifo"
    os.mkfifo(fifo)
    # In a child, so that a wait for a reader fails the test (with the GIL
    # held, no thread of this process could time it out).
    script = (
        "import json, warnings\n"
        "from toolpolicy import Engine\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    engine = Engine('Defer(B)', [{{'name': 'A', 'description': 'a'}}], audit={str(fifo)!r})\n"
        "print(json.dumps({'auditing': engine.auditing, 'warnings': [str(w.message) for w in caught]}))\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert not out["auditing"]
    assert out["warnings"] == [
        f"cannot open the audit log `{fifo}`: it is a FIFO that no process reads (start its reader first); going on without one"
    ]
