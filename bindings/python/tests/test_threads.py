"""Threads: the GIL is released while the engine works, an `Engine` is
shared by every thread, and a `Session` is one chat used by one thread at a
time: a call on it while another thread's call runs raises RuntimeError at
once, and the chat is unharmed."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import pytest

from toolpolicy import Engine, ToolPolicyError

from conftest import POLICY_PATH, REGISTRY_PATH, SMALL, SMALL_POLICY

BUSY = "in use by another thread"


def run(threads: list[threading.Thread], seconds: float = 30) -> None:
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds)
        assert not t.is_alive(), "a thread did not finish"


def test_the_gil_is_released_while_the_engine_reads() -> None:
    """A second Python thread runs while a call reads 64 MiB of /dev/zero:
    it could not if the call held the GIL."""
    ticks: list[float] = []
    stop = threading.Event()

    def ticker() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        time.sleep(0.01)
        start = time.monotonic()
        with pytest.raises(ToolPolicyError, match="larger than 64 MiB"):
            Engine.from_files("/dev/zero", REGISTRY_PATH)
        end = time.monotonic()
    finally:
        stop.set()
        t.join(10)
    inside = [x for x in ticks if start < x < end]
    assert end - start > 0.005, "the read was too quick to tell"
    assert len(inside) >= 3, f"{len(inside)} ticks in {end - start:.3f} s: the GIL was held"


def test_an_engine_is_shared_by_threads_while_it_reloads() -> None:
    engine = Engine.from_files(POLICY_PATH, REGISTRY_PATH)
    errors: list[BaseException] = []

    def chats() -> None:
        try:
            for _ in range(100):
                chat = engine.session({"mode": "agent"})
                found = chat.search("open a page in the browser")
                assert "BrowserPreview" in found["activated"]
                declared = [t["name"] for t in chat.plan()["declared"]]
                assert "BrowserPreview" in declared
                assert chat.call("BrowserPreview")["allowed"]
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            errors.append(e)

    def reloads() -> None:
        try:
            text = open(POLICY_PATH, encoding="utf-8").read()
            for _ in range(50):
                engine.reload_policy(text)
                with pytest.raises(ToolPolicyError):
                    engine.reload_policy("Defer(\n")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    run([threading.Thread(target=chats) for _ in range(4)] + [threading.Thread(target=reloads)])
    assert errors == []
    assert engine.modes == ["agent", "chat"]


def test_a_session_used_by_two_threads_at_once_raises_runtime_error() -> None:
    engine = Engine.from_files(POLICY_PATH, REGISTRY_PATH)
    chat = engine.session({"mode": "agent"})
    busy: list[RuntimeError] = []
    other: list[BaseException] = []
    done = threading.Event()

    def hammer(call: Callable[[], Any]) -> None:
        deadline = time.monotonic() + 10
        while not done.is_set() and time.monotonic() < deadline:
            try:
                call()
            except RuntimeError as e:
                busy.append(e)
                if len(busy) >= 5:
                    done.set()
            except BaseException as e:  # noqa: BLE001
                other.append(e)
                done.set()

    flags = iter(range(10**9))

    def switch() -> None:
        # A changed context makes each plan new work for the engine.
        chat.set_context({"mode": "agent", "flags": [f"f{next(flags) % 2}"]})
        chat.plan()

    run([threading.Thread(target=hammer, args=(f,)) for f in (switch, lambda: chat.search("open a page in the browser"))])
    assert other == [], other
    assert busy, "no call ever met another"
    for e in busy:
        assert BUSY in str(e), str(e)
    # The chat is whole afterwards.
    chat.set_context({"mode": "agent"})
    assert "Glob" in chat.load(["Glob"])["activated"] + chat.load(["Glob"])["already_active"]
    assert "Glob" in [t["name"] for t in chat.plan()["declared"]]


def test_a_session_may_move_between_threads() -> None:
    chat = Engine(SMALL_POLICY, SMALL).session()
    out: list[Any] = []
    run([threading.Thread(target=lambda: out.append(chat.search("fetch a web page")))])
    assert out[0]["activated"] == ["WebFetch"]
    assert chat.plan()["activated"] == ("WebFetch",)
