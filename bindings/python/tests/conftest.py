"""Shared paths and inputs for the module's tests."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
POLICY_PATH = str(ROOT / "policies" / "pi-desktop.policy")
REGISTRY_PATH = str(ROOT / "examples" / "registries" / "pi-desktop.json")

SMALL = [
    {"name": "Read", "description": "Read a file. Returns its text."},
    {
        "name": "WebFetch",
        "description": "Fetch a web page. Returns markdown.",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
        "cache_control": {"type": "ephemeral"},
    },
    {"name": "Secret", "description": "Never shown."},
]
SMALL_POLICY = "Defer(WebFetch)\nHide(Secret)\n"


# `mypy --strict` over the examples and the package reads the frameworks'
# own sources, which takes minutes from a cold cache: it starts as soon as
# the test that checks it is collected, and runs beside the other tests.
MYPY_TEST = "test_the_examples_and_the_package_pass_mypy_strict"
_mypy: dict[str, Any] = {}


def mypy_command() -> list[str]:
    here = Path(__file__).resolve().parent
    return [sys.executable, "-m", "mypy", "--strict", str(here.parent / "examples"), str(here.parent / "python" / "toolpolicy")]


def pytest_collection_finish(session: pytest.Session) -> None:
    if any(item.name == MYPY_TEST for item in session.items):
        out = tempfile.TemporaryFile()
        _mypy["out"] = out
        _mypy["process"] = subprocess.Popen(mypy_command(), stdout=out, stderr=subprocess.STDOUT)


def pytest_sessionfinish(session: pytest.Session) -> None:
    process = _mypy.get("process")
    if process is not None and process.poll() is None:
        process.kill()
        process.wait(10)


def mypy_result(timeout: float) -> tuple[int, str]:
    """The exit code and output of the mypy run started at collection."""
    process: subprocess.Popen[bytes] = _mypy["process"]
    code = process.wait(timeout)
    out = _mypy["out"]
    out.seek(0)
    return code, out.read().decode(errors="replace")
