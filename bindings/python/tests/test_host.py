"""Inputs that must never take the host down: the module lives inside an
agent runtime with every chat in it, so an argument or a file that cannot
be handled raises, and the process goes on. Each case runs in a child
Python process with a memory limit and a time limit, so that a case that
aborts, hangs or eats memory fails its test instead of the test run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Optional

import pytest

from conftest import POLICY_PATH, REGISTRY_PATH

MEMORY_KIB = 1024 * 1024  # the most virtual memory a child may map (1 GiB)
TOO_LARGE = "it is larger than 64 MiB, the most an input file may hold"


def in_child(body: str) -> Optional[dict[str, Any]]:
    """Runs `body` (Python, with `toolpolicy`, `Engine` and `ToolPolicyError`
    imported) in a child limited to 1 GiB and 20 s; returns what it raised
    (`{"name", "message"}`), or None when it raised nothing. The test fails
    if the child died."""
    script = (
        "import json, sys\n"
        "import toolpolicy\n"
        "from toolpolicy import Engine, ToolPolicyError\n"
        "out = None\n"
        "try:\n" + "".join(f"    {line}\n" for line in body.splitlines()) + "except BaseException as e:\n"
        "    out = {'name': type(e).__name__, 'message': str(e)}\n"
        "sys.stdout.write(json.dumps(out))\n"
    )
    r = subprocess.run(
        ["/bin/sh", "-c", f'ulimit -v {MEMORY_KIB} && exec "$0" "$@"', sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert r.returncode == 0, f"the child exited with {r.returncode}: {r.stderr[-2000:]}"
    result: Optional[dict[str, Any]] = json.loads(r.stdout)
    return result


def test_every_file_read_is_capped_at_64_mib() -> None:
    cases = [
        ("the policy", f"Engine.from_files('/dev/zero', {REGISTRY_PATH!r})"),
        ("the registry", f"Engine.from_files({POLICY_PATH!r}, '/dev/zero')"),
        ("the skills", f"Engine.from_files({POLICY_PATH!r}, {REGISTRY_PATH!r}, '/dev/zero')"),
        ("a host's own file", "toolpolicy.read_input('/dev/zero')"),
    ]
    for what, call in cases:
        raised = in_child(call)
        assert raised is not None, f"{what}: nothing was raised"
        assert raised == {"name": "ToolPolicyError", "message": f"cannot read `/dev/zero`: {TOO_LARGE}"}, what
    missing = in_child(f"Engine.from_files('/nonexistent/p.policy', {REGISTRY_PATH!r})")
    assert missing is not None
    assert missing["message"].startswith("cannot read `/nonexistent/p.policy`: no such file or directory")


def test_a_fifo_is_read_like_a_file() -> None:
    if shutil.which("mkfifo") is None:
        pytest.skip("mkfifo is not available")
    d = tempfile.mkdtemp(prefix="toolpolicy-python-")
    fifo = os.path.join(d, "policy.fifo")
    writers: list[subprocess.Popen[bytes]] = []

    def writer(source: str) -> None:
        writers.append(subprocess.Popen(["/bin/sh", "-c", 'exec cat "$0" > "$1"', source, fifo]))

    try:
        subprocess.run(["mkfifo", fifo], check=True, timeout=10)
        writer("/dev/zero")
        endless = in_child(f"Engine.from_files({fifo!r}, {REGISTRY_PATH!r})")
        assert endless is not None and endless["message"].endswith(TOO_LARGE)
        # `--policy <(cat p.policy)` in a shell: the policy arrives whole.
        writer(POLICY_PATH)
        whole = in_child(
            f"engine = Engine.from_files({fifo!r}, {REGISTRY_PATH!r})\n"
            "assert engine.modes == ['agent', 'chat'], engine.modes"
        )
        assert whole is None, whole
    finally:
        for w in writers:
            if w.poll() is None:
                w.kill()
            w.wait(timeout=10)
        shutil.rmtree(d, ignore_errors=True)


def test_huge_and_deep_inputs_raise() -> None:
    cases = [
        # JSON nested past any sensible depth, as text and as Python lists.
        ("deep JSON text", "Engine('', '[' * 10_000_000)"),
        ("deep lists", "v = []\nfor _ in range(200_000):\n    v = [v]\nEngine('', v)"),
        ("deep state", "v = {}\nfor _ in range(200_000):\n    v = {'a': v}\nEngine('', []).resume(v)"),
        ("a huge registry text that is not JSON", "Engine('', 'x' * 20_000_000)"),
    ]
    for what, call in cases:
        raised = in_child(call)
        assert raised is not None, f"{what}: nothing was raised"
        assert raised["name"] == "ToolPolicyError", f"{what}: {raised}"
    # A wrong item at the end of a long list is a wrong type, found as the
    # list is read.
    raised = in_child("Engine('Defer(*)', [{'name': 'a'}]).session().load(['a'] * 1_000_000 + [3])")
    assert raised == {"name": "TypeError", "message": "names[1000000] must be a string, not int"}


def test_a_panic_is_an_exception_in_a_child_too() -> None:
    raised = in_child("toolpolicy._native._panic_for_tests()")
    assert raised == {
        "name": "ToolPolicyError",
        "message": "the engine failed inside: a panic on purpose (this is a bug in toolpolicy; the engine is still usable)",
    }
